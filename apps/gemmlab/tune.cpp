// gemmlab tune: search a kernel's valid space for the fastest configuration on one problem.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "cli.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/ranks.hpp"
#include "gemmlab/setup.hpp"
#include "gemmlab/tune.hpp"
#include "gemmlab/worker.hpp"

namespace gemmlab::cli {

void add_worker_command(CLI::App& app, Outcome& outcome) {
  // Started by `gemmlab tune`, not by people: no group, so --help does not list it.
  auto* cmd = app.add_subcommand("worker", "Evaluation worker process of `gemmlab tune` (internal)")->group("");
  cmd->callback([&outcome] { outcome.exit_status = run_worker(registry(), STDIN_FILENO, STDOUT_FILENO); });
}

void add_tune_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    ProblemOptions problem;
    SetupOptions setup;
    CacheOptions cache;
    std::string strategy = default_strategy_name();
    std::vector<std::string> constraints;
    std::string constraints_file;
    std::size_t budget = 100;
    double time_limit = 0, early_abort = 3.0, timeout_factor = 10.0, timeout_floor = 30.0, worker_memory = -1;
    bool in_process = false;
    std::uint64_t seed = 1;
    int compile_threads = -1;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("tune", "Search a kernel's parameter space for its fastest configuration");
  add_problem_options(cmd, o->problem);
  cmd->add_option("--strategy", o->strategy, "exhaustive, random, annealing, genetic, local, bayesian")->capture_default_str();
  cmd->add_option("--budget", o->budget, "Evaluations at most")->capture_default_str();
  cmd->add_option(
         "--time-limit", o->time_limit,
         "Seconds at most (0: none); the kernel's starting configurations are evaluated all the same")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the strategy and of the operands")->capture_default_str();
  cmd->add_option("--early-abort", o->early_abort,
                  "Stop measuring a configuration whose first run is this many times slower than the best (0: never)")
      ->capture_default_str();
  cmd->add_option("--timeout-factor", o->timeout_factor,
                  "A configuration is failed when it takes longer than this many times the best one's evaluation...")
      ->capture_default_str();
  cmd->add_option("--timeout-floor", o->timeout_floor, "...but never before this many seconds")->capture_default_str();
  cmd->add_option("--worker-memory", o->worker_memory,
                  "Address-space limit of the evaluation worker in GiB (default: the machine's physical memory for devices "
                  "in host memory (cpu, systolic, Kokkos host spaces), none for GPU backends, whose runtimes reserve more "
                  "address space; 0: none)");
  cmd->add_option("--constraint", o->constraints,
                  "An extra constraint as an expression over the parameters and the kernel's named values "
                  "(see gemmlab kernels), e.g. 'MC % 16 == 0 && KC <= 512' (repeatable)");
  cmd->add_option("--constraints-file", o->constraints_file, "A file of such expressions, one per line (# comments)");
  add_cache_options(cmd, o->cache,
                    "Results cache (SQLite) to reuse and extend (default: $XDG_CACHE_HOME/gemmlab/results.sqlite, "
                    "else ~/.cache/gemmlab/results.sqlite)",
                    "Neither reuse nor store results");
  cmd->add_option("--compile-threads", o->compile_threads,
                  "Threads compiling the configurations the strategy will likely try next, while one is timed "
                  "(kernels compiled at run time; default: half the cores, at most 4; 0: no overlap)");
  add_flush_cache_flag(cmd, o->setup);
  cmd->add_flag("--in-process", o->in_process,
                "Evaluate in this process instead of a sandboxed worker (a crash or hang then ends the run)");
  add_setup_options(cmd, o->setup, "Threads of the reference (default: all cores)", "Reference library (cpu: openblas, blis, onednn, libxsmm)");
  add_json_flag(cmd, o->json);

  cmd->callback([o, &outcome] {
    const Kernel& kernel = registry().kernel(o->problem.backend, o->problem.kernel);
    Backend& backend = registry().backend(o->problem.backend);
    make_strategy(o->strategy);  // an unknown name fails before any work
    if (o->budget == 0) throw UsageError("--budget must be at least 1");
    if (o->early_abort < 0) throw UsageError("--early-abort must be 0 (off) or a factor > 0");
    if (o->timeout_factor <= 0 || o->timeout_floor <= 0) throw UsageError("--timeout-factor and --timeout-floor must be > 0");
    check_cache_options(o->cache);
    if (o->in_process && ranks::world().size > 1)
      throw UsageError("--in-process evaluates in this one process: leave it out when running on MPI ranks");
    // Opened in this process also when a worker evaluates: an unknown reference fails here, with
    // the list, and the device says how much memory the worker may have.
    EvaluationSetup setup = open_evaluation(backend, o->setup);
    const DeviceInfo& info = setup.info();
    require_time(info, "tune");
    const Problem p = checked_problem(o->problem, kernel, info);

    TuneOptions options;
    options.strategy = o->strategy;
    options.budget = {.evaluations = o->budget, .seconds = o->time_limit};
    options.seed = o->seed;
    options.early_abort_factor = o->early_abort;
    options.timeout_factor = o->timeout_factor;
    options.timeout_floor_s = o->timeout_floor;
    if (kernel.compilation() != Compilation::with_program) {  // overlap compiling with timing
      const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      options.compile_threads = static_cast<std::size_t>(o->compile_threads >= 0 ? o->compile_threads : std::clamp(cores / 2, 1, 4));
      options.prepare_ahead = [&kernel, &info, &p](const Config& c) { kernel.prepare_ahead(info, p.precision, c); };
    }

    SearchSpace space = valid_space(kernel, info, p.precision);
    add_user_constraints(space, o->constraints, o->constraints_file);
    if (space.valid_size() == 0)
      throw UsageError("no configuration of " + o->problem.kernel + " for " + std::string(to_string(p.precision)) + " on " +
                       info.name + " satisfies the constraints given (--constraint, --constraints-file) as well as its own");
    options.start_with = kernel.starting_configs(info, p.precision);
    std::optional<ResultsCache> results;  // opened before any work: a bad file fails at once
    TuneCache cache;
    if (!o->cache.disabled) {
      try {
        results.emplace(o->cache.path.empty() ? ResultsCache::default_path() : o->cache.path);
      } catch (const CacheError& e) {
        throw UsageError(e.what());
      }
      cache = {.cache = &*results, .key = cache_key(info, kernel, p)};
    }

    std::unique_ptr<ConfigurationRunner> runner;
    if (o->in_process) {
      runner = std::make_unique<InProcessRunner>(*setup.device, kernel, p, setup.truth.get(), setup.reference.get(),
                                                 options.seed, options.measure);
    } else {
      const std::uint64_t memory_limit = o->worker_memory >= 0
                                             ? static_cast<std::uint64_t>(o->worker_memory * (1u << 30))
                                             : default_worker_memory_limit(info);
      WorkerSetup worker{.backend = o->problem.backend, .device = o->setup.device, .kernel = o->problem.kernel, .problem = p,
                         .seed = options.seed, .reference = setup.reference_name, .reference_threads = setup.threads,
                         .measure = options.measure, .flush_cache = o->setup.flush_cache, .memory_limit_bytes = memory_limit};
      runner = ranks::make_rank_runner(std::make_unique<WorkerRunner>(worker_command(), worker), worker, fingerprint(info));
    }

    const bool terminal = !o->json && isatty(STDOUT_FILENO);
    const auto start = std::chrono::steady_clock::now();
    auto progress = [&](const TuneResult& r, const Budget& budget) {
      if (o->json) return;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::size_t total = std::min(budget.evaluations, r.space_size), done = r.history.size();
      const double eta = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total - std::min(done, total)) : 0;
      const std::string best = r.best ? fmt::format("best {:.1f} GFLOP/s ({:.2f}x {})", r.best->gflops,
                                                    r.best->ratio_to_reference, r.reference_name)
                                      : "no valid configuration yet";
      if (terminal) {
        const int width = 24, filled = static_cast<int>(width * static_cast<double>(done) / static_cast<double>(std::max<std::size_t>(1, total)));
        fmt::print("\r[{}{}] {}/{}  {}  {:.0f}s elapsed, ETA {:.0f}s   ", std::string(static_cast<std::size_t>(filled), '#'),
                   std::string(static_cast<std::size_t>(width - filled), '.'), done, total, best, elapsed, eta);
        std::fflush(stdout);
      } else {
        const ConfigResult& last = r.history.back();
        fmt::print("{}/{} {}{} {} {}  | {}\n", done, total, to_string(last.status), last.from_cache ? " (cached)" : "",
                   last.status == Status::ok ? fmt::format("{:.1f} GFLOP/s", last.gflops) : last.reason,
                   to_string(last.config), best);
      }
    };
    const TuneResult r = tune(space, p, *runner, options, progress, cache);
    outcome.exit_status = r.best ? 0 : 1;

    if (o->json) {
      return print_json({{"backend", o->problem.backend}, {"device", info.name}, {"kernel", o->problem.kernel},
                         {"m", p.m}, {"n", p.n}, {"k", p.k}, {"precision", to_string(p.precision)},
                         {"best", r.best ? nlohmann::json(*r.best) : nlohmann::json()},
                         {"reference", {{"name", r.reference_name}, {"gflops", r.reference_gflops},
                                        {"timed_beside_best", r.reference_beside_best}}},
                         {"evaluations", r.history.size()}, {"space_size", r.space_size},
                         {"reused_from_cache", r.reused_from_cache}, {"cache", results ? results->path() : ""}, {"failed", r.failed}, {"invalid", r.invalid}, {"aborted", r.aborted},
                         {"worker_restarts", r.worker_restarts}, {"seconds", r.seconds},
                         {"ranks", ranks::world().size},
                         {"rank0", {{"proposal_seconds", r.proposal_seconds()}, {"commit_seconds", r.commit_seconds},
                                    {"wait_seconds", r.wait_seconds}, {"reference_seconds", r.reference_seconds}}},
                         {"evaluations_per_second", r.evaluations_per_second()},
                         {"compile_threads", options.compile_threads},
                         {"strategy", o->strategy}, {"seed", o->seed}, {"history", r.history}});
    }
    if (terminal) fmt::print("\n");
    fmt::print("{} {} {}: {} evaluations of {} valid configurations ({}, seed {}); {} {:.1f} GFLOP/s{}\n", o->problem.kernel,
               p.shape(), to_string(p.precision), r.history.size(), r.space_size, o->strategy, o->seed, r.reference_name,
               r.reference_gflops, r.reference_beside_best ? " (timed in alternation with the best)" : "");
    fmt::print("{:>4} {:>10} {:>9}  {}\n", "rank", "GFLOP/s", "ratio", "parameters");
    int rank = 0;
    for (const auto& e : r.top(5))
      fmt::print("{:>4} {:>10.1f} {:>9.3f}  {}\n", ++rank, e.gflops, e.ratio_to_reference, to_string(e.config));
    fmt::print("failed: {}, invalid: {}, aborted early: {}", r.failed, r.invalid, r.aborted);
    if (results) fmt::print("; {} of {} reused from the cache {}", r.reused_from_cache, r.history.size(), results->path());
    if (r.worker_restarts > 0) fmt::print(" (the evaluation worker was restarted {} times)", r.worker_restarts);
    fmt::print("\n{:.2f} evaluations per second ({:.2f} s{}{})\n", r.evaluations_per_second(), r.seconds,
               options.compile_threads > 0 ? fmt::format(", {} compile threads ahead", options.compile_threads) : "",
               ranks::world().size > 1 ? fmt::format(", {} MPI ranks", ranks::world().size) : "");
  });
}

}  // namespace gemmlab::cli
