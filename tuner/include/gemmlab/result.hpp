// One configuration's result on one problem, from its evaluation to the command line: what the
// in-process runner and the sandboxed worker answer, what the results cache keeps, what tune()
// reports, and what `gemmlab tune --json` prints — one record, with one JSON form (which the worker
// also answers in). A strategy's bookkeeping (Observation, over candidate indices) is derived
// from it.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "gemmlab/evaluate.hpp"
#include "gemmlab/space.hpp"
#include "gemmlab/strategy.hpp"

namespace gemmlab {

struct ConfigResult {
  Config config = {};
  Status status = Status::failed;
  double time_s = 0;         // median (ok) or the single timed run (aborted); 0 otherwise
  double gflops = 0;
  double max_rel_error = 0;  // the validation's (infinite when unbounded; 0 when failed)
  std::string reason = {};   // why invalid, failed or aborted (ok: a note, e.g. blas_finalist_reason)
  std::optional<double> watts = {};  // median power draw while timed, where the device reports it (not cached)
  // To the reference of the run that reports it (tune(): timed beside the best at the end).
  double ratio_to_reference = 0;
  // The reference as timed in the run that measured it (the results cache keeps it).
  std::string reference_name = {};
  double reference_gflops = 0;
  std::string recorded_at = {};  // UTC ISO-8601, when the results cache stored it ("" when it did not)
  bool from_cache = false;       // read from the results cache, not measured in this run

  // ok or aborted: it ran, was valid and has a time.
  bool timed() const { return status == Status::ok || status == Status::aborted; }
};

// What evaluating `config` gave: invalid when the validation failed, aborted when only its first
// timed run was taken, else ok with the kernel's timing.
ConfigResult result_of(const Config& config, const Evaluation& evaluation);

// {"params", "status", "time_ms", "gflops", "ratio_to_reference", "max_rel_error", "reason",
//  "watts", "gflops_per_watt", "from_cache", "recorded_at"}; every key always present: time_ms and
// ratio_to_reference null unless timed, max_rel_error null when failed or unbounded, watts and
// gflops_per_watt null where not measured, recorded_at null when not stored.
void to_json(nlohmann::json& j, const ConfigResult& r);
// The inverse (the reference fields, which the JSON does not carry, stay empty). Throws
// nlohmann::json::exception or std::invalid_argument for a malformed document.
void from_json(const nlohmann::json& j, ConfigResult& r);

}  // namespace gemmlab
