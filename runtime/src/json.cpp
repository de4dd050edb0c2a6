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
       {"fma_gflops_fp64_one_core", c.fma_gflops_fp64_one_core},
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
       {"native_precision", to_string(d.native_precision)},
       {"host_memory", d.host_memory},
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
  j = {{"median_ms", m.median_s * 1e3}, {"spread", m.spread}, {"min_ms", m.min_s * 1e3},
       {"max_ms", m.max_s * 1e3},       {"repetitions", m.repetitions}};
}

void to_json(nlohmann::json& j, const Parameter& p) {
  j = {{"name", p.name}, {"values", p.values}, {"help", p.help}};
}

void to_json(nlohmann::json& j, const NamedValue& v) {
  j = {{"name", v.name}, {"definition", v.definition}, {"help", v.help}};
  j["value"] = v.value ? nlohmann::json(*v.value) : nlohmann::json();
}

void to_json(nlohmann::json& j, const Constraint& c) { j = {{"expression", c.text}, {"why", c.why}}; }

void to_json(nlohmann::json& j, const SearchSpace& s) {
  j["parameters"] = s.parameters();
  j["named_values"] = s.named_values();
  j["constraints"] = s.constraints();
  j["raw_size"] = s.raw_size();
  j["valid_size"] = s.valid_size();
}

void to_json(nlohmann::json& j, const ValidationResult& v) {
  j = {{"valid", v.valid},
       {"max_rel_error", number_or_null(v.max_rel_error)},
       {"tolerance", v.tolerance},
       {"reason", v.reason}};
}

namespace {
nlohmann::json power_json(const std::optional<Timing>& t) {
  if (!t || !t->watts) return nullptr;
  const auto per_watt = t->gflops_per_watt();  // none for a reading of 0 W
  return {{"watts", *t->watts}, {"gflops_per_watt", per_watt ? nlohmann::json(*per_watt) : nlohmann::json()},
          {"temperature_c", t->temperature_c ? nlohmann::json(*t->temperature_c) : nlohmann::json()}};
}
}  // namespace

void to_json(nlohmann::json& j, const Evaluation& e) {
  using nlohmann::json;
  j = e.validation;
  j["time_ms"] = e.kernel ? json(e.kernel->measurement.median_s * 1e3) : json();
  j["gflops"] = e.kernel ? json(e.kernel->gflops) : json();
  j["timing"] = e.kernel ? json(e.kernel->measurement) : json();
  j["reference"] = e.reference_name.empty()
                       ? json()
                       : json{{"name", e.reference_name},
                              {"gflops", e.reference ? json(e.reference->gflops) : json()},
                              {"time_ms", e.reference ? json(e.reference->measurement.median_s * 1e3) : json()},
                              {"timing", e.reference ? json(e.reference->measurement) : json()}};
  j["ratio_to_reference"] = e.ratio_to_reference;
  j["memory"] = {{"operands_bytes", e.memory.operands_bytes},
                 {"workspace_bytes", e.memory.workspace_bytes ? json(*e.memory.workspace_bytes) : json()}};
  j["machine_load"] = e.load ? json{{"seconds", e.load->seconds},
                                    {"others_cores", e.load->others_cores},
                                    {"steal_cores", e.load->steal_cores},
                                    {"disturbed", e.load->disturbed()}}
                             : json();
  j["power"] = e.kernel && e.kernel->watts ? json{{"kernel", power_json(e.kernel)}, {"reference", power_json(e.reference)}}
                                           : json();
}

void to_json(nlohmann::json& j, const CompileReport& r) {
  j = {{"target", r.target},
       {"registers", r.registers},
       {"scalar_registers", r.scalar_registers},
       {"accumulation_registers", r.accumulation_registers},
       {"shared_bytes", r.shared_bytes},
       {"shared_limit", r.shared_limit},
       {"spill_bytes", r.spill_bytes},
       {"stack_bytes", r.stack_bytes},
       {"matrix_instructions", r.matrix_instructions},
       {"instruction_classes", r.instruction_classes},
       {"ptx_forms", r.ptx_forms}};
}

void to_json(nlohmann::json& j, const Traffic& t) {
  j = {{"tile", {{"m", t.tile.m}, {"n", t.tile.n}}},
       {"bytes_moved", t.bytes_moved},
       {"arithmetic_intensity", t.arithmetic_intensity},
       {"parallel_tiles", t.tiles}};
}

void to_json(nlohmann::json& j, const GrowthLimit& g) {
  j = {{"parameter", g.parameter}, {"value", g.value}};
  if (!g.next) {
    j["limit"] = "largest allowed value";
    return;
  }
  j["next"] = *g.next;
  j["constraints"] = g.constraints;
}

namespace systolic {

void to_json(nlohmann::json& j, const ArraySpec& a) {
  j = {{"name", a.name}, {"rows", a.rows}, {"cols", a.cols}, {"precision", to_string(a.precision)},
       {"clock_ghz", a.clock_ghz}, {"arrays_per_chip", a.arrays_per_chip},
       {"ifmap_buffer_bytes", a.ifmap_buffer_bytes}, {"filter_buffer_bytes", a.filter_buffer_bytes},
       {"ofmap_buffer_bytes", a.ofmap_buffer_bytes}, {"bandwidth_bytes_per_cycle", a.bandwidth_bytes_per_cycle},
       {"peak_gflops", a.peak_gflops()}, {"chip_peak_gflops", a.chip_peak_gflops()}, {"source", a.source}};
}

void to_json(nlohmann::json& j, const Mapping& m) {
  j = {{"dataflow", to_string(m.dataflow)}, {"tile_m", m.tile_m}, {"tile_n", m.tile_n}, {"tile_k", m.tile_k},
       {"loop_order", m.loop_order}};
}

void to_json(nlohmann::json& j, const Counts& c) {
  j = {{"total_cycles", c.total_cycles}, {"compute_cycles", c.compute_cycles}, {"stall_cycles", c.stall_cycles},
       {"folds", c.folds}, {"ifmap_sram_reads", c.ifmap_sram_reads}, {"filter_sram_reads", c.filter_sram_reads},
       {"ofmap_sram_writes", c.ofmap_sram_writes}, {"ifmap_dram_reads", c.ifmap_dram_reads},
       {"filter_dram_reads", c.filter_dram_reads}, {"ofmap_dram_reads", c.ofmap_dram_reads},
       {"ofmap_dram_writes", c.ofmap_dram_writes}, {"cell_updates", c.cell_updates}, {"macs", c.macs},
       {"mapped_cells", c.mapped_cells}, {"first_fold_start", c.first_fold_start},
       {"last_fold_start", c.last_fold_start}};
}

void to_json(nlohmann::json& j, const Report& r) {
  const Counts& c = r.counts;
  j = {{"total_cycles", r.total_cycles},
       {"stall_cycles", r.stall_cycles},
       {"overall_util", r.overall_util},
       {"mapping_efficiency", r.mapping_efficiency},
       {"compute_util", r.compute_util},
       {"sram_reads", c.ifmap_sram_reads + c.filter_sram_reads},
       {"sram_writes", r.reported_ofmap_sram_writes},
       {"dram_reads", c.ifmap_dram_reads + c.filter_dram_reads + (r.convention == Convention::physical ? c.ofmap_dram_reads : 0)},
       {"dram_writes", r.reported_ofmap_dram_writes},
       {"gflops_at_clock", r.gflops_at_clock},
       {"time_ms_at_clock", r.seconds * 1e3},
       {"ifmap_sram_reads", c.ifmap_sram_reads},
       {"filter_sram_reads", c.filter_sram_reads},
       {"ofmap_sram_writes", r.reported_ofmap_sram_writes},
       {"ifmap_dram_reads", c.ifmap_dram_reads},
       {"filter_dram_reads", c.filter_dram_reads},
       {"ofmap_dram_reads", r.convention == Convention::physical ? c.ofmap_dram_reads : 0},
       {"ofmap_dram_writes", r.reported_ofmap_dram_writes},
       {"m", r.m}, {"n", r.n}, {"k", r.k},
       {"precision", to_string(r.precision)},
       {"convention", r.convention == Convention::physical ? "physical" : "scalesim"},
       {"engine", r.engine},
       {"array", r.array},
       {"mapping", r.mapping},
       {"counts", c}};
  if (r.valid) j["valid"] = *r.valid;
  if (r.max_rel_error) j["max_rel_error"] = number_or_null(*r.max_rel_error);
}

}  // namespace systolic
}  // namespace gemmlab
