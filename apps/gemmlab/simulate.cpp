// gemmlab simulate: one GEMM through a simulated systolic array, with SCALE-Sim's reports.
#include <fmt/core.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/measure.hpp"
#include "gemmlab/setup.hpp"
#include "gemmlab/systolic.hpp"
#include "gemmlab/validate.hpp"

namespace gemmlab::cli {

namespace {
void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}
}  // namespace

void add_simulate_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    std::string array, preset, dataflow = "ws", precision, engine = "cycle", out, loop_order = "mnk";
    std::int64_t m = 0, n = 0, k = 0;
    std::optional<std::int64_t> tile_m, tile_n, tile_k;
    std::optional<double> bandwidth;
    bool scalesim = false, json = false;
    std::uint64_t seed = 42;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("simulate", "Run one GEMM through a simulated systolic array (TPU-style matrix unit)");
  cmd->add_option("--array", o->array, "Array size ROWSxCOLS, unbounded buffers (e.g. 32x32)");
  cmd->add_option("--preset", o->preset, "A preset array: tpu-v1, tpu-v2, tpu-v3, tpu-v4, tpu-v5e, gemmini");
  cmd->add_option("--dataflow", o->dataflow, "ws (weight-), os (output-) or is (input-stationary)")->capture_default_str();
  add_shape_options(cmd, o->m, o->n, o->k);
  cmd->add_option("--precision", o->precision, "bf16, int8 or fp32 (default: the preset's own; fp32 for --array)");
  cmd->add_option("--engine", o->engine, "cycle (moves every operand, computes and checks C) or analytic")
      ->capture_default_str();
  cmd->add_option("--bandwidth", o->bandwidth, "Off-chip bandwidth in bytes per cycle (0: unlimited; default: the preset's)");
  cmd->add_option("--tile-m", o->tile_m, "Rows of A and C held on chip (0: all; default: the heuristic mapping's)");
  cmd->add_option("--tile-n", o->tile_n, "Columns of B and C held on chip (0: all)");
  cmd->add_option("--tile-k", o->tile_k, "Depth held on chip (0: all)");
  cmd->add_option("--loop-order", o->loop_order, "Loop order over tiles, outermost first (a permutation of mnk)")
      ->capture_default_str();
  cmd->add_flag("--scalesim-compatible", o->scalesim,
                "Report as SCALE-Sim v2 does (its total is one cycle less; its output-stationary fold has no drain)");
  cmd->add_option("--out", o->out, "Write COMPUTE_REPORT.csv, BANDWIDTH_REPORT.csv, DETAILED_ACCESS_REPORT.csv and report.json here");
  cmd->add_option("--seed", o->seed, "Seed of the random operands (cycle engine)")->capture_default_str();
  add_json_flag(cmd, o->json);

  cmd->callback([o, &outcome] {
    if (o->array.empty() == o->preset.empty()) throw UsageError("give exactly one of --array RxC and --preset NAME");
    if (o->engine != "cycle" && o->engine != "analytic") throw UsageError("--engine must be cycle or analytic");
    systolic::ArraySpec array = o->preset.empty() ? systolic::parse_array(o->array) : systolic::preset(o->preset);
    if (o->bandwidth) array.bandwidth_bytes_per_cycle = *o->bandwidth;
    array.check();
    const Precision precision = o->precision.empty() ? array.precision : parse_precision(o->precision);
    systolic::Mapping mapping = systolic::heuristic_mapping(array, precision);
    mapping.dataflow = systolic::parse_dataflow(o->dataflow);
    mapping.loop_order = o->loop_order;
    if (o->tile_m) mapping.tile_m = *o->tile_m;
    if (o->tile_n) mapping.tile_n = *o->tile_n;
    if (o->tile_k) mapping.tile_k = *o->tile_k;
    systolic::check(array, mapping, o->m, o->n, o->k, precision);
    const auto convention = o->scalesim ? systolic::Convention::scalesim : systolic::Convention::physical;

    std::optional<ValidationResult> validation;
    systolic::Counts counts;
    double wall_s = 0;  // of the engine alone
    if (o->engine == "analytic") {
      wall_s = wall_seconds([&] { counts = systolic::simulate_analytic(array, mapping, o->m, o->n, o->k, precision); });
    } else {
      const Problem p = Problem::packed(o->m, o->n, o->k, precision);
      HostCase host(p, o->seed);
      HostBuffer<std::byte> c(host.c_bytes_with_guard());
      std::memcpy(c.data(), host.c_initial().data(), host.c_bytes_with_guard());
      const systolic::GemmData data{.a = host.a().data(), .b = host.b().data(), .c = c.data(), .lda = p.lda,
                                    .ldb = p.ldb, .ldc = p.ldc, .alpha = p.alpha, .beta = p.beta};
      wall_s = wall_seconds([&] { counts = systolic::simulate_cycles(array, mapping, p.m, p.n, p.k, precision, data); });
      host.compute_expected(open_fp64_truth().get());
      validation = host.check(c.data());
    }
    systolic::Report report =
        systolic::make_report(array, mapping, o->m, o->n, o->k, precision, counts, convention, o->engine);
    if (validation) {
      report.valid = validation->valid;
      report.max_rel_error = validation->max_rel_error;
      if (!validation->valid) outcome.exit_status = 1;
    }
    nlohmann::json document = report;
    document["simulation_seconds"] = wall_s;
    if (o->engine == "cycle")
      document["cell_updates_per_second"] = wall_s > 0 ? static_cast<double>(counts.cell_updates) / wall_s : 0.0;
    if (validation && !validation->valid) document["reason"] = validation->reason;

    if (!o->out.empty()) {
      std::error_code error;
      std::filesystem::create_directories(o->out, error);
      if (error) throw UsageError("cannot create the directory " + o->out + ": " + error.message());
      const std::filesystem::path dir(o->out);
      write_file(dir / "COMPUTE_REPORT.csv", systolic::compute_report_csv(report));
      write_file(dir / "BANDWIDTH_REPORT.csv", systolic::bandwidth_report_csv(report));
      write_file(dir / "DETAILED_ACCESS_REPORT.csv", systolic::detailed_access_report_csv(report));
      write_file(dir / "report.json", document.dump(2) + "\n");
    }
    if (o->json) return print_json(document);
    fmt::print("{} ({}x{}, {} at {:.3g} GHz), {} {}x{}x{}, {} dataflow, tiles {}x{}x{} ({}), {} engine, {} convention\n",
               array.name, array.rows, array.cols, to_string(precision), array.clock_ghz, to_string(precision), o->m,
               o->n, o->k, o->dataflow, mapping.tile_m, mapping.tile_n, mapping.tile_k, mapping.loop_order, o->engine,
               o->scalesim ? "SCALE-Sim" : "physical");
    fmt::print("total cycles {}, stall cycles {}, folds {}\n", report.total_cycles, report.stall_cycles, counts.folds);
    fmt::print("overall util {:.4f} %, mapping efficiency {:.4f} %, compute util {:.4f} %\n", report.overall_util,
               report.mapping_efficiency, report.compute_util);
    fmt::print("SRAM reads {} (ifmap {}, filter {}), writes {}; DRAM reads {}, writes {}\n",
               counts.ifmap_sram_reads + counts.filter_sram_reads, counts.ifmap_sram_reads, counts.filter_sram_reads,
               report.reported_ofmap_sram_writes, document["dram_reads"].get<std::int64_t>(),
               report.reported_ofmap_dram_writes);
    fmt::print("{:.1f} GFLOP/s at {:.3g} GHz ({:.1f} % of the array's peak {:.1f})\n", report.gflops_at_clock,
               array.clock_ghz, array.peak_gflops() > 0 ? 100 * report.gflops_at_clock / array.peak_gflops() : 0.0,
               array.peak_gflops());
    if (validation)
      fmt::print("C {} (max relative error {:.3g}, tolerance {:.3g}){}; {:.3g} cell updates per second\n",
                 validation->valid ? "valid" : "INVALID", validation->max_rel_error, validation->tolerance,
                 validation->valid ? "" : ": " + validation->reason,
                 document["cell_updates_per_second"].get<double>());
  });
}

}  // namespace gemmlab::cli
