// gemmlab tune: search a kernel's valid space for the fastest configuration on one problem.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "cli.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/tune.hpp"
#include "gemmlab/worker.hpp"

namespace gemmlab::cli {

namespace {
nlohmann::json entry_json(const TuneEntry& e) {
  nlohmann::json j = {{"params", e.config}, {"status", to_string(e.status)}, {"gflops", e.gflops}};
  if (e.status == Status::ok || e.status == Status::aborted) {
    j["ratio_to_reference"] = e.ratio_to_reference;
    j["max_rel_error"] = e.max_rel_error;
  }
  if (!e.reason.empty()) j["reason"] = e.reason;
  if (e.from_cache) j["from_cache"] = true;
  if (e.watts && *e.watts > 0) {
    j["watts"] = *e.watts;
    j["gflops_per_watt"] = e.gflops / *e.watts;
  }
  return j;
}

// This program's own path, to start it again as the evaluation worker.
std::string own_executable() {
  std::string path(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program's path (/proc/self/exe) to start the evaluation worker");
  path.resize(static_cast<std::size_t>(n));
  return path;
}

double physical_memory_gib() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) / (1u << 30) : 0.0;
}
}  // namespace

void add_worker_command(CLI::App& app, Outcome& outcome) {
  // Started by `gemmlab tune`, not by people: no group, so --help does not list it.
  auto* cmd = app.add_subcommand("worker", "Evaluation worker process of `gemmlab tune` (internal)")->group("");
  cmd->callback([&outcome] { outcome.exit_status = run_worker(registry(), STDIN_FILENO, STDOUT_FILENO); });
}

void add_tune_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    std::string backend = "cpu", kernel, precision = "fp32", strategy = default_strategy_name(), reference, cache;
    std::vector<std::string> constraints;
    std::string constraints_file;
    bool no_cache = false;
    std::int64_t m = 0, n = 0, k = 0;
    std::size_t budget = 100;
    double time_limit = 0, early_abort = 3.0, timeout_factor = 10.0, timeout_floor = 30.0, worker_memory = -1;
    bool in_process = false, flush_cache = false;
    std::uint64_t seed = 1;
    int threads = 0, device = 0, compile_threads = -1;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("tune", "Search a kernel's parameter space for its fastest configuration");
  cmd->add_option("--backend", o->backend, "Backend (cpu, systolic, cuda where built; see gemmlab devices)")->capture_default_str();
  cmd->add_option("--kernel", o->kernel, "Kernel name (see `gemmlab kernels`)")->required();
  cmd->add_option("--m", o->m, "Rows of A and C")->required();
  cmd->add_option("--n", o->n, "Columns of B and C")->required();
  cmd->add_option("--k", o->k, "Columns of A, rows of B")->required();
  cmd->add_option("--precision", o->precision, "fp32, fp64 (cpu); bf16, int8, fp32 (systolic); fp16, bf16 (tensor cores)")->capture_default_str();
  cmd->add_option("--strategy", o->strategy, "exhaustive, random, annealing, genetic, local, bayesian")->capture_default_str();
  cmd->add_option("--budget", o->budget, "Evaluations at most")->capture_default_str();
  cmd->add_option("--time-limit", o->time_limit, "Seconds at most (0: none)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the strategy and of the operands")->capture_default_str();
  cmd->add_option("--early-abort", o->early_abort,
                  "Stop measuring a configuration whose first run is this many times slower than the best (0: never)")
      ->capture_default_str();
  cmd->add_option("--timeout-factor", o->timeout_factor,
                  "A configuration is failed when it takes longer than this many times the best one's evaluation...")
      ->capture_default_str();
  cmd->add_option("--timeout-floor", o->timeout_floor, "...but never before this many seconds")->capture_default_str();
  cmd->add_option("--worker-memory", o->worker_memory,
                  "Address-space limit of the evaluation worker in GiB (default: the machine's physical memory for cpu and systolic, "
                  "none for GPU backends, whose runtimes reserve more address space; 0: none)");
  cmd->add_option("--constraint", o->constraints,
                  "An extra constraint as an expression over the parameters, e.g. 'MC % 16 == 0 && KC <= 512' "
                  "(repeatable)");
  cmd->add_option("--constraints-file", o->constraints_file, "A file of such expressions, one per line (# comments)");
  cmd->add_option("--cache", o->cache,
                  "Results cache (SQLite) to reuse and extend (default: $XDG_CACHE_HOME/gemmlab/results.sqlite, "
                  "else ~/.cache/gemmlab/results.sqlite)");
  cmd->add_flag("--no-cache", o->no_cache, "Neither reuse nor store results");
  cmd->add_option("--compile-threads", o->compile_threads,
                  "Threads compiling the configurations the strategy will likely try next, while one is timed "
                  "(kernels compiled at run time; default: half the cores, at most 4; 0: no overlap)");
  cmd->add_flag("--flush-cache", o->flush_cache,
                "Empty the device's cache before each timed run (GPUs: L2), so timings start with cold operands");
  cmd->add_flag("--in-process", o->in_process,
                "Evaluate in this process instead of a sandboxed worker (a crash or hang then ends the run)");
  cmd->add_option("--threads", o->threads, "Threads of the reference (default: all cores)");
  cmd->add_option("--reference", o->reference, "Reference library (cpu: openblas, blis)");
  cmd->add_option("--device", o->device, "Device index within the backend")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON document");

  cmd->callback([o, &outcome] {
    const Kernel& kernel = registry().kernel(o->backend, o->kernel);
    Backend& backend = registry().backend(o->backend);
    make_strategy(o->strategy);  // an unknown name fails before any work
    if (o->budget == 0) throw UsageError("--budget must be at least 1");
    if (o->early_abort < 0) throw UsageError("--early-abort must be 0 (off) or a factor > 0");
    if (o->timeout_factor <= 0 || o->timeout_floor <= 0) throw UsageError("--timeout-factor and --timeout-floor must be > 0");
    auto device = backend.open(o->device);
    const Problem p = Problem::packed(o->m, o->n, o->k, parse_precision(o->precision));
    validate(p);
    if (!kernel.supports(p.precision)) throw UsageError(o->kernel + " has no " + o->precision + " variant");
    if (auto s = kernel.supported(device->info()); !s.ok) throw Unsupported(o->kernel + ": " + s.reason);
    const std::string reference_name = o->reference.empty() ? backend.reference_names().front() : o->reference;
    const int reference_threads = o->threads > 0 ? o->threads : std::max(1, device->info().cores);

    TuneOptions options;
    options.strategy = o->strategy;
    options.budget = {.evaluations = o->budget, .seconds = o->time_limit};
    options.seed = o->seed;
    options.early_abort_factor = o->early_abort;
    options.timeout_factor = o->timeout_factor;
    options.timeout_floor_s = o->timeout_floor;
    if (kernel.builds_at_run_time()) {  // overlap compiling with timing
      const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      options.compile_threads = static_cast<std::size_t>(o->compile_threads >= 0 ? o->compile_threads : std::clamp(cores / 2, 1, 4));
      options.prepare_ahead = [&kernel, &device, &p](const Config& c) { kernel.prepare_ahead(device->info(), p.precision, c); };
    }

    SearchSpace space = kernel.space(device->info(), p.precision);
    add_user_constraints(space, o->constraints, o->constraints_file);
    options.start_with = {kernel.default_config(device->info(), p.precision)};
    if (space.valid_size() == 0) throw UsageError("no configuration of " + o->kernel + " satisfies every constraint");
    if (o->no_cache && !o->cache.empty()) throw UsageError("--cache and --no-cache exclude each other");
    std::optional<ResultsCache> results;  // opened before any work: a bad file fails at once
    TuneCache cache;
    if (!o->no_cache) {
      try {
        results.emplace(o->cache.empty() ? ResultsCache::default_path() : o->cache);
      } catch (const CacheError& e) {
        throw UsageError(e.what());
      }
      cache = {.cache = &*results, .key = cache_key(device->info(), kernel, p)};
    }

    std::unique_ptr<Reference> reference, truth;
    std::unique_ptr<ConfigurationRunner> runner;
    device->set_cache_flush(o->flush_cache);
    if (o->in_process) {
      reference = backend.make_reference(reference_name, *device);
      reference->set_threads(reference_threads);
      truth = cpu::load_cblas("openblas");
      runner = std::make_unique<InProcessRunner>(*device, kernel, p, truth.get(), reference.get(), options.seed,
                                                 options.measure);
    } else {
      backend.make_reference(reference_name, *device);  // an unknown name fails here, with the list
      // GPU runtimes reserve address space far beyond physical memory: their workers get no limit.
      // Backends in host memory (cpu, and the simulated systolic arrays) get the machine's.
      const bool host_memory = o->backend == "cpu" || o->backend == "systolic";
      const double memory_gib = o->worker_memory >= 0 ? o->worker_memory : host_memory ? physical_memory_gib() : 0.0;
      WorkerSetup setup{.backend = o->backend, .device = o->device, .kernel = o->kernel, .problem = p,
                        .seed = options.seed, .reference = reference_name, .reference_threads = reference_threads,
                        .measure = options.measure, .flush_cache = o->flush_cache,
                        .memory_limit_bytes = static_cast<std::uint64_t>(memory_gib * (1u << 30))};
      runner = std::make_unique<WorkerRunner>(std::vector<std::string>{own_executable(), "worker"}, setup);
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
        const TuneEntry& last = r.history.back();
        fmt::print("{}/{} {}{} {} {}  | {}\n", done, total, to_string(last.status), last.from_cache ? " (cached)" : "",
                   last.status == Status::ok ? fmt::format("{:.1f} GFLOP/s", last.gflops) : last.reason,
                   to_string(last.config), best);
      }
    };
    const TuneResult r = tune(space, p, *runner, options, progress, cache);
    outcome.exit_status = r.best ? 0 : 1;

    if (o->json) {
      nlohmann::json history = nlohmann::json::array();
      for (const auto& e : r.history) history.push_back(entry_json(e));
      return print_json({{"backend", o->backend}, {"device", device->info().name}, {"kernel", o->kernel},
                         {"m", p.m}, {"n", p.n}, {"k", p.k}, {"precision", o->precision},
                         {"best", r.best ? entry_json(*r.best) : nlohmann::json()},
                         {"reference", {{"name", r.reference_name}, {"gflops", r.reference_gflops},
                                        {"timed_beside_best", r.reference_beside_best}}},
                         {"evaluations", r.history.size()}, {"space_size", r.space_size},
                         {"reused_from_cache", r.reused_from_cache}, {"cache", results ? results->path() : ""}, {"failed", r.failed}, {"invalid", r.invalid}, {"aborted", r.aborted},
                         {"worker_restarts", r.worker_restarts}, {"seconds", r.seconds},
                         {"evaluations_per_second", r.evaluations_per_second()},
                         {"compile_threads", options.compile_threads},
                         {"strategy", o->strategy}, {"seed", o->seed}, {"history", history}});
    }
    if (terminal) fmt::print("\n");
    fmt::print("{} {} {}: {} evaluations of {} valid configurations ({}, seed {}); {} {:.1f} GFLOP/s{}\n", o->kernel,
               p.shape(), o->precision, r.history.size(), r.space_size, o->strategy, o->seed, r.reference_name,
               r.reference_gflops, r.reference_beside_best ? " (timed in alternation with the best)" : "");
    fmt::print("{:>4} {:>10} {:>9}  {}\n", "rank", "GFLOP/s", "ratio", "parameters");
    int rank = 0;
    for (const auto& e : r.top(5))
      fmt::print("{:>4} {:>10.1f} {:>9.3f}  {}\n", ++rank, e.gflops, e.ratio_to_reference, to_string(e.config));
    fmt::print("failed: {}, invalid: {}, aborted early: {}", r.failed, r.invalid, r.aborted);
    if (results) fmt::print("; {} of {} reused from the cache {}", r.reused_from_cache, r.history.size(), results->path());
    if (r.worker_restarts > 0) fmt::print(" (the evaluation worker was restarted {} times)", r.worker_restarts);
    fmt::print("\n{:.2f} evaluations per second ({:.2f} s{})\n", r.evaluations_per_second(), r.seconds,
               options.compile_threads > 0 ? fmt::format(", {} compile threads ahead", options.compile_threads) : "");
  });
}

}  // namespace gemmlab::cli
