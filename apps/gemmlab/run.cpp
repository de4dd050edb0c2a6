// gemmlab run: one kernel, one configuration, one problem. Runs it, validates it against the
// fp64 reference, times it and the vendor reference in the same process on the same buffers.
#include <fmt/core.h>

#include <thread>

#include "cli.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/json.hpp"

namespace gemmlab::cli {

void add_run_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    std::string backend = "cpu", kernel, precision = "fp32", reference;
    std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
    double alpha = 1.0, beta = 0.0;
    std::vector<std::string> params;
    int threads = 0, device = 0;
    std::uint64_t seed = 42;
    double max_seconds = 2.0;
    bool json = false, flush_cache = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("run", "Run, validate and time one kernel configuration next to the reference BLAS");
  cmd->add_option("--backend", o->backend, "Backend (cpu, systolic, cuda where built; see gemmlab devices)")->capture_default_str();
  cmd->add_option("--kernel", o->kernel, "Kernel name (see `gemmlab kernels`)")->required();
  cmd->add_option("--m", o->m, "Rows of A and C")->required();
  cmd->add_option("--n", o->n, "Columns of B and C")->required();
  cmd->add_option("--k", o->k, "Columns of A, rows of B")->required();
  cmd->add_option("--precision", o->precision, "fp32, fp64 (cpu); bf16, int8, fp32 (systolic); fp16, bf16 (tensor cores)")->capture_default_str();
  cmd->add_option("--alpha", o->alpha, "Scale of A*B")->capture_default_str();
  cmd->add_option("--beta", o->beta, "Scale of the initial C")->capture_default_str();
  cmd->add_option("--lda", o->lda, "Leading dimension of A (default K)");
  cmd->add_option("--ldb", o->ldb, "Leading dimension of B (default N)");
  cmd->add_option("--ldc", o->ldc, "Leading dimension of C (default N)");
  cmd->add_option("--param", o->params, "Parameter NAME=VALUE (repeatable); others take their defaults");
  cmd->add_option("--threads", o->threads,
                  "Threads of the reference and of the kernel's `threads` parameter (default: all cores)");
  cmd->add_option("--reference", o->reference, "Reference library (cpu: openblas, blis; default the first)");
  cmd->add_option("--device", o->device, "Device index within the backend")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the random operands")->capture_default_str();
  cmd->add_option("--max-seconds", o->max_seconds, "Time limit of each measurement")->capture_default_str();
  cmd->add_flag("--flush-cache", o->flush_cache,
                "Empty the device's cache before each timed run (GPUs: L2), so timings start with cold operands");
  cmd->add_flag("--json", o->json, "Print one JSON document");

  cmd->callback([o, &outcome] {
    const Kernel& kernel = registry().kernel(o->backend, o->kernel);
    Backend& backend = registry().backend(o->backend);
    auto device = backend.open(o->device);
    device->set_cache_flush(o->flush_cache);
    const DeviceInfo& info = device->info();
    if (auto s = kernel.supported(info); !s.ok) throw Unsupported(o->kernel + ": " + s.reason);

    Problem p = Problem::packed(o->m, o->n, o->k, parse_precision(o->precision), o->alpha, o->beta);
    if (o->lda) p.lda = o->lda;
    if (o->ldb) p.ldb = o->ldb;
    if (o->ldc) p.ldc = o->ldc;
    validate(p);
    if (!kernel.supports(p.precision))
      throw UsageError(o->kernel + " has no " + o->precision + " variant");

    const int threads = o->threads > 0 ? o->threads : std::max(1, info.cores);
    const SearchSpace space = kernel.space(info, p.precision);
    Config given;
    for (const auto& text : o->params) {
      auto [name, value] = parse_assignment(text);
      given[name] = value;
    }
    Config defaults = kernel.default_config(info, p.precision);
    if (space.find("threads") && !given.count("threads")) defaults["threads"] = threads;
    const Config config = space.complete(given, defaults);

    const auto references = backend.reference_names();
    const std::string ref_name = o->reference.empty() ? references.front() : o->reference;
    auto reference = backend.make_reference(ref_name, *device);
    reference->set_threads(threads);
    auto truth = cpu::load_cblas("openblas");  // fp64 ground truth, computed on the host

    EvaluationOptions eval;
    eval.seed = o->seed;
    eval.measure.max_seconds = o->max_seconds;
    Evaluation e = evaluate(*device, kernel, config, p, truth.get(), reference.get(), eval);
    outcome.exit_status = e.validation.valid ? 0 : 1;

    nlohmann::json j = {
        {"backend", o->backend},
        {"device", info.name},
        {"kernel", o->kernel},
        {"params", config},
        {"m", p.m}, {"n", p.n}, {"k", p.k},
        {"lda", p.lda}, {"ldb", p.ldb}, {"ldc", p.ldc},
        {"alpha", p.alpha}, {"beta", p.beta},
        {"precision", to_string(p.precision)},
        {"threads", threads},
        {"valid", e.validation.valid},
        {"tolerance", e.validation.tolerance},
        {"max_rel_error", nlohmann::json(e.validation)["max_rel_error"]},
        {"reason", e.validation.reason},
        {"time_ms", e.kernel ? nlohmann::json(e.kernel->measurement.median_s * 1e3) : nlohmann::json()},
        {"gflops", e.kernel ? nlohmann::json(e.kernel->gflops) : nlohmann::json()},
        {"timing", e.kernel ? nlohmann::json(e.kernel->measurement) : nlohmann::json()},
        {"reference",
         {{"name", ref_name}, {"version", reference->version()},
          {"gflops", e.reference ? e.reference->gflops : 0.0},
          {"time_ms", e.reference ? e.reference->measurement.median_s * 1e3 : 0.0},
          {"timing", e.reference ? nlohmann::json(e.reference->measurement) : nlohmann::json()}}},
        {"ratio_to_reference", e.ratio_to_reference},
        {"power", power_json(e)},
        {"peak_gflops", p.precision == Precision::fp32 ? info.peak_gflops_fp32 : info.peak_gflops_fp64},
    };
    if (o->json) return print_json(j);
    fmt::print("{} {} {} on {} ({} thread(s)), {}\n", o->kernel, p.shape(), o->precision, info.name,
               threads, to_string(config));
    fmt::print("  validation: {} (max relative error {:.3g}, tolerance {:.3g}){}\n",
               e.validation.valid ? "passed" : "FAILED", e.validation.max_rel_error,
               e.validation.tolerance, e.validation.valid ? "" : "\n  " + e.validation.reason);
    if (e.kernel)
      fmt::print("  {:<10} {:10.3f} ms  {:8.2f} GFLOP/s  (spread {:.1f}%, {} runs)\n", o->kernel.substr(0, 10),
                 e.kernel->measurement.median_s * 1e3, e.kernel->gflops, 100 * e.kernel->measurement.spread,
                 e.kernel->measurement.repetitions);
    if (e.reference)
      fmt::print("  {:<10} {:10.3f} ms  {:8.2f} GFLOP/s  (spread {:.1f}%, {} runs)\n", ref_name,
                 e.reference->measurement.median_s * 1e3, e.reference->gflops,
                 100 * e.reference->measurement.spread, e.reference->measurement.repetitions);
    if (e.kernel) fmt::print("  ratio to {}: {:.3f}\n", ref_name, e.ratio_to_reference);
    if (e.kernel && e.kernel->watts)
      fmt::print("  power: {:.0f} W, {:.2f} GFLOP/s per W{}\n", *e.kernel->watts, *e.kernel->gflops_per_watt(),
                 e.reference && e.reference->watts
                     ? fmt::format(" ({} {:.0f} W, {:.2f} GFLOP/s per W)", ref_name, *e.reference->watts,
                                   *e.reference->gflops_per_watt())
                     : "");
  });
}

}  // namespace gemmlab::cli
