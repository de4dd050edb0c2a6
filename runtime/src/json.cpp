#include "gemmlab/json.hpp"

#include <cmath>

namespace gemmlab {

namespace {
// JSON has no infinity: an unbounded error is written as null.
nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); }
}  // namespace

void to_json(nlohmann::json& j, const CacheLevel& c) {
  j = {{"level", c.level}, {"type", c.type}, {"size_bytes", c.size_bytes}, {"shared_by_cores", c.shared_by_cores}};
}

void to_json(nlohmann::json& j, const MeasuredCeilings& c) {
  j = {{"fma_gflops_fp32", c.fma_gflops_fp32},
       {"fma_gflops_fp64", c.fma_gflops_fp64},
       {"fma_gflops_fp32_one_core", c.fma_gflops_fp32_one_core},
       {"triad_gb_per_s", c.triad_gb_per_s}};
}

void to_json(nlohmann::json& j, const DeviceInfo& d) {
  j = {{"backend", d.backend},
       {"index", d.index},
       {"name", d.name},
       {"vendor", d.vendor},
       {"cores", d.cores},
       {"simd_width_bits", d.simd_width_bits},
       {"features", d.features},
       {"caches", d.caches},
       {"clock_ghz", d.clock_ghz},
       {"fma_units_per_core", d.fma_units_per_core},
       {"peak_gflops_fp32", d.peak_gflops_fp32},
       {"peak_gflops_fp64", d.peak_gflops_fp64},
       {"fingerprint", fingerprint(d)}};
  j["measured"] = d.measured ? nlohmann::json(*d.measured) : nlohmann::json();
  if (d.gpu) {
    const GpuLimits& g = *d.gpu;
    j["gpu"] = {{"compute_capability", g.compute_capability},
                {"multiprocessors", g.multiprocessors},
                {"warp_size", g.warp_size},
                {"max_threads_per_block", g.max_threads_per_block},
                {"shared_bytes_per_block", g.shared_bytes_per_block},
                {"shared_bytes_per_block_optin", g.shared_bytes_per_block_optin},
                {"shared_bytes_per_sm", g.shared_bytes_per_sm},
                {"registers_per_block", g.registers_per_block},
                {"registers_per_sm", g.registers_per_sm},
                {"l2_bytes", g.l2_bytes}};
  }
}

void to_json(nlohmann::json& j, const Measurement& m) {
  j = {{"median_s", m.median_s}, {"spread", m.spread}, {"min_s", m.min_s},
       {"max_s", m.max_s},       {"repetitions", m.repetitions}};
}

void to_json(nlohmann::json& j, const Parameter& p) {
  j = {{"name", p.name}, {"values", p.values}, {"help", p.help}};
}

void to_json(nlohmann::json& j, const SearchSpace& s) {
  j["parameters"] = s.parameters();
  j["constraints"] = nlohmann::json::array();
  for (const auto& c : s.constraints()) j["constraints"].push_back(c.text);
  j["raw_size"] = s.raw_size();
  j["valid_size"] = s.valid_size();
}

void to_json(nlohmann::json& j, const ValidationResult& v) {
  j = {{"valid", v.valid},
       {"max_rel_error", number_or_null(v.max_rel_error)},
       {"tolerance", v.tolerance},
       {"reason", v.reason}};
}

}  // namespace gemmlab
