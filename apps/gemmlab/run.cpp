// gemmlab run: one kernel, one configuration, one problem. Runs it, validates it against the
// fp64 reference, times it and the vendor reference in the same process on the same buffers.
#include <fmt/core.h>

#include <thread>

#include "cli.hpp"
#include "gemmlab/launch_counts.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/setup.hpp"
#include "gemmlab/tune.hpp"

namespace gemmlab::cli {

void add_run_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    ProblemOptions problem;
    SetupOptions setup;
    CacheOptions cache;
    std::vector<std::string> params;
    std::uint64_t seed = 42;
    double max_seconds = 2.0;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("run", "Run, validate and time one kernel configuration next to the reference BLAS");
  add_problem_options(cmd, o->problem);
  cmd->add_option("--alpha", o->problem.alpha, "Scale of A*B")->capture_default_str();
  cmd->add_option("--beta", o->problem.beta, "Scale of the initial C")->capture_default_str();
  cmd->add_option("--lda", o->problem.lda, "Leading dimension of A (default K)");
  cmd->add_option("--ldb", o->problem.ldb, "Leading dimension of B (default N)");
  cmd->add_option("--ldc", o->problem.ldc, "Leading dimension of C (default N)");
  cmd->add_option("--param", o->params,
                  "Parameter NAME=VALUE (repeatable); the others come from the best tuned configuration in the results "
                  "cache (this shape, else the nearest tuned one) if the given ones fit it, else from the defaults");
  add_setup_options(cmd, o->setup,
                    "Threads of the reference and of the kernel's `threads` parameter (default: all cores; the kernel's "
                    "from the tuned configuration where one is used)",
                    "Reference library (cpu: openblas, blis, onednn, libxsmm; default the first)");
  cmd->add_option("--seed", o->seed, "Seed of the random operands")->capture_default_str();
  cmd->add_option("--max-seconds", o->max_seconds, "Time limit of each measurement")->capture_default_str();
  add_flush_cache_flag(cmd, o->setup);
  add_cache_options(cmd, o->cache,
                    "Results cache the tuned configuration is read from (default: $XDG_CACHE_HOME/gemmlab/results.sqlite, "
                    "else ~/.cache/gemmlab/results.sqlite; never created)",
                    "Ignore the results cache: the parameters not given take their defaults");
  add_json_flag(cmd, o->json);

  cmd->callback([o, &outcome] {
    const Kernel& kernel = registry().kernel(o->problem.backend, o->problem.kernel);
    const std::optional<ResultsCache> results = open_lookup_cache(o->cache);  // a bad file fails first
    EvaluationSetup setup = open_evaluation(registry().backend(o->problem.backend), o->setup);
    const DeviceInfo& info = setup.info();
    // A functional simulation has no time: the kernel is run, validated and counted, untimed.
    const bool untimed = functional_simulation(info);
    const Problem p = checked_problem(o->problem, kernel, info);

    const int threads = setup.threads;
    const SearchSpace space = valid_space(kernel, info, p.precision);
    Config given;
    for (const auto& text : o->params) {
      auto [name, value] = parse_assignment(text);
      given[name] = value;
    }
    // --threads is the kernel's `threads` too, over a tuned value; without it a tuned value stays.
    if (o->setup.threads > 0 && space.find("threads") != nullptr && !given.count("threads"))
      given["threads"] = o->setup.threads;
    const ChosenConfig chosen = choose_config(space, given, default_config(kernel, info, p.precision, threads),
                                              results ? &*results : nullptr, cache_key(info, kernel, p));
    const Config& config = chosen.config;
    const std::string& ref_name = setup.reference_name;

    EvaluationOptions eval;
    eval.seed = o->seed;
    eval.measure = result_measure();  // its ratio is what the user reads
    eval.measure.max_seconds = o->max_seconds;
    eval.time = !untimed;
    Evaluation e = evaluate(*setup.device, kernel, config, p, setup.truth.get(), setup.reference.get(), eval);
    const LaunchCounts counts = last_launch_counts(*setup.device);
    outcome.exit_status = e.validation.valid ? 0 : 1;

    nlohmann::json j = {
        {"backend", o->problem.backend},
        {"device", info.name},
        {"kernel", o->problem.kernel},
        {"params", config},
        {"config_source", chosen.source},
        {"ignored_tuned_configs", chosen.ignored},
        {"cache", results ? nlohmann::json(results->path()) : nlohmann::json()},
        {"m", p.m}, {"n", p.n}, {"k", p.k},
        {"lda", p.lda}, {"ldb", p.ldb}, {"ldc", p.ldc},
        {"alpha", p.alpha}, {"beta", p.beta},
        {"precision", to_string(p.precision)},
        {"threads", threads},
        {"peak_gflops", p.precision == Precision::fp32 ? info.peak_gflops_fp32 : info.peak_gflops_fp64},
    };
    j.update(nlohmann::json(e));
    if (setup.reference) j["reference"]["version"] = setup.reference->version();
    j["simulated"] = untimed;
    if (!counts.empty()) {
      nlohmann::json c = nlohmann::json::object();
      for (const auto& [name, value] : counts) c[name] = value;
      j["simulated_counts"] = c;
    }
    if (o->json) return print_json(j);
    fmt::print("{} {} {} on {} ({} thread(s)), {}\n", o->problem.kernel, p.shape(), to_string(p.precision), info.name,
               threads, to_string(config));
    fmt::print("  configuration: {}{}\n", chosen.source, chosen.tuned ? " (cache " + results->path() + ")" : "");
    print_ignored(chosen.ignored);
    fmt::print("  validation: {} (max relative error {:.3g}, tolerance {:.3g}){}\n",
               e.validation.valid ? "passed" : "FAILED", e.validation.max_rel_error,
               e.validation.tolerance, e.validation.valid ? "" : "\n  " + e.validation.reason);
    if (e.kernel)
      fmt::print("  {:<10} {:10.3f} ms  {:8.2f} GFLOP/s  (spread {:.1f}%, {} runs)\n", o->problem.kernel.substr(0, 10),
                 e.kernel->measurement.median_s * 1e3, e.kernel->gflops, 100 * e.kernel->measurement.spread,
                 e.kernel->measurement.repetitions);
    if (e.reference)
      fmt::print("  {:<10} {:10.3f} ms  {:8.2f} GFLOP/s  (spread {:.1f}%, {} runs)\n", ref_name,
                 e.reference->measurement.median_s * 1e3, e.reference->gflops,
                 100 * e.reference->measurement.spread, e.reference->measurement.repetitions);
    if (e.kernel) fmt::print("  ratio to {}: {:.3f}\n", ref_name, e.ratio_to_reference);
    if (untimed) fmt::print("  {} is simulated (functional): no time; what the launch did, counted:\n", info.name);
    for (const auto& [name, value] : counts) fmt::print("    {:<24} {:>16.0f}\n", name, value);
    if (e.kernel && e.kernel->watts)
      fmt::print("  power: {:.0f} W, {:.2f} GFLOP/s per W{}\n", *e.kernel->watts, *e.kernel->gflops_per_watt(),
                 e.reference && e.reference->watts
                     ? fmt::format(" ({} {:.0f} W, {:.2f} GFLOP/s per W)", ref_name, *e.reference->watts,
                                   *e.reference->gflops_per_watt())
                     : "");
  });
}

}  // namespace gemmlab::cli
