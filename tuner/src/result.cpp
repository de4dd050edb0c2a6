#include "gemmlab/result.hpp"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace gemmlab {

ConfigResult result_of(const Config& config, const Evaluation& e) {
  ConfigResult r;
  r.config = config;
  r.max_rel_error = e.validation.max_rel_error;
  if (!e.validation.valid) {
    r.status = Status::invalid;  // a wrong result can never become the best
    r.reason = e.validation.reason;
    return r;
  }
  r.status = e.aborted ? Status::aborted : Status::ok;
  if (e.kernel) {
    r.time_s = e.kernel->measurement.median_s;
    r.gflops = e.kernel->gflops;
    r.watts = e.kernel->watts;
  }
  return r;
}

void to_json(nlohmann::json& j, const ConfigResult& r) {
  using nlohmann::json;
  const bool measured_error = r.status != Status::failed && std::isfinite(r.max_rel_error);
  const bool per_watt = r.watts && *r.watts > 0;
  j = {{"params", r.config},
       {"status", to_string(r.status)},
       {"time_ms", r.timed() ? json(r.time_s * 1e3) : json()},
       {"gflops", r.gflops},
       {"ratio_to_reference", r.timed() ? json(r.ratio_to_reference) : json()},
       {"max_rel_error", measured_error ? json(r.max_rel_error) : json()},
       {"reason", r.reason},
       {"watts", r.watts ? json(*r.watts) : json()},
       {"gflops_per_watt", per_watt ? json(r.gflops / *r.watts) : json()},
       {"from_cache", r.from_cache},
       {"recorded_at", r.recorded_at.empty() ? json() : json(r.recorded_at)}};
}

void from_json(const nlohmann::json& j, ConfigResult& r) {
  r = {};
  r.config = j.at("params").get<Config>();
  r.status = parse_status(j.at("status").get<std::string>());
  if (j.at("time_ms").is_number()) r.time_s = j["time_ms"].get<double>() * 1e-3;
  r.gflops = j.at("gflops").get<double>();
  if (j.at("ratio_to_reference").is_number()) r.ratio_to_reference = j["ratio_to_reference"].get<double>();
  const nlohmann::json& error = j.at("max_rel_error");
  // null: no error measured (failed) or an unbounded one, which JSON cannot hold.
  r.max_rel_error = error.is_number() ? error.get<double>()
                    : r.status == Status::failed ? 0.0
                                                 : std::numeric_limits<double>::infinity();
  r.reason = j.at("reason").get<std::string>();
  if (j.at("watts").is_number()) r.watts = j["watts"].get<double>();
  r.from_cache = j.at("from_cache").get<bool>();
  if (j.at("recorded_at").is_string()) r.recorded_at = j["recorded_at"].get<std::string>();
}

}  // namespace gemmlab
