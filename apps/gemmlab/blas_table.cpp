// gemmlab blas-table: the BLAS library's dispatch table for this machine's CPU, from the results
// cache, optionally tuning the shape classes it lacks first (docs/blas.md).
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <sstream>

#include "cli.hpp"
#include "gemmlab/blas_table.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/ranks.hpp"
#include "gemmlab/setup.hpp"
#include "gemmlab/worker.hpp"

namespace gemmlab::cli {

void add_blas_table_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    CacheOptions cache;
    std::string out, shapes, precision, library_threads;
    bool tune = false, json = false, update = false;
    // What the measured tables were tuned with (README): 80 configurations reach the cheap small-M
    // kernel's good tiles, and 15 s bound the searches of 05 at large shapes.
    std::size_t budget = 80;
    double seconds = 15;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("blas-table", "Build the BLAS library's table of tuned kernels for this CPU");
  add_cache_options(cmd, o->cache, "Results cache to build from, and with --tune to extend (default: the default cache)",
                    "Build from nothing: a table without entries, every class on the default kernels");
  cmd->add_option("--out", o->out, "Where to write the table (default: $GEMMLAB_BLAS_TABLE, else "
                                   "$XDG_CACHE_HOME/gemmlab/blas-table.json, else ~/.cache/gemmlab/blas-table.json)");
  cmd->add_flag("--tune", o->tune,
                "First tune the shapes whose class the table lacks, each with the kernels that may be fastest for "
                "it (06_small_m up to 16 rows of C, else 06_small_m and 05_packed_avx512); the table keeps the "
                "fastest");
  cmd->add_flag(
      "--update", o->update,
      "Keep the entries of the table already at --out (made on this machine) for the classes the "
      "cache has no results for, as after a kernel's code changed: retune some classes, keep the rest");
  cmd->add_option(
      "--shapes", o->shapes,
      "Comma-separated list of MxNxK, or MxNxK:TT with the transposes (NN, TN, NT, TT: A, then B, "
      "stored transposed), to tune (default: the benchmark's shapes, bench/blas_bench.py, and its LLM "
      "decoding shapes with B transposed, x * W^T)");
  cmd->add_option(
      "--precision", o->precision,
      "fp32 or fp64 (default: both): what --tune tunes, and the precision of the entries the cache gives");
  cmd->add_option("--library-threads", o->library_threads,
                  "Comma-separated thread counts of the library to make entries for, each class tuned on at most that "
                  "many threads (default: 1 and all cores)");
  cmd->add_option("--budget", o->budget, "Configurations evaluated per tuned shape and kernel")
      ->capture_default_str();
  cmd->add_option("--max-seconds", o->seconds,
                  "Wall-clock limit per tuned shape and kernel (0: none); the kernel's starting "
                  "configurations are evaluated all the same")
      ->capture_default_str();
  add_json_flag(cmd, o->json);

  cmd->callback([o, &outcome] {
    check_cache_options(o->cache);
    const std::string out = o->out.empty() ? blas_table_path() : o->out;
    if (out.empty()) throw UsageError("--out: no default location (HOME and XDG_CACHE_HOME are unset)");
    if (o->budget == 0) throw UsageError("--budget must be at least 1");
    if (!(o->seconds >= 0)) throw UsageError("--max-seconds must be 0 (no limit) or more");
    if (o->tune && o->cache.disabled)
      throw UsageError("--tune stores what it measures in the results cache: it cannot be used with --no-cache");
    // Read before anything is tuned: a table that cannot be kept stops the command early.
    std::optional<BlasTable> kept;
    if (o->update) {
      if (!std::filesystem::exists(out)) throw UsageError("--update: no table at " + out + " to update");
      kept = read_blas_table(out);
    }
    std::vector<Precision> precisions = {Precision::fp32, Precision::fp64};
    if (!o->precision.empty()) {
      precisions = {parse_precision(o->precision)};
      if (precisions[0] != Precision::fp32 && precisions[0] != Precision::fp64)
        throw UsageError("--precision: the BLAS library has fp32 and fp64 GEMMs");
    }
    std::vector<Problem> shapes = blas_tuning_shapes();
    if (!o->shapes.empty()) {
      shapes.clear();
      std::stringstream list(o->shapes);
      for (std::string item; std::getline(list, item, ',');) {
        try {
          shapes.push_back(parse_shape_and_transposes(item));
        } catch (const std::invalid_argument& e) {
          throw UsageError("--shapes: " + std::string(e.what()));
        }
      }
    }

    Backend& backend = registry().backend("cpu");
    // The kernels the library runs: those that read transposed operands.
    std::vector<const Kernel*> kernels;
    for (const Kernel* k : registry().kernels("cpu"))
      if (k->reads_transposed()) kernels.push_back(k);
    std::optional<ResultsCache> cache;
    if (!o->cache.disabled) {
      if (o->tune) cache.emplace(o->cache.path.empty() ? ResultsCache::default_path() : o->cache.path);
      else cache = open_lookup_cache(o->cache);
    }
    ResultsCache* source = cache ? &*cache : nullptr;
    const DeviceInfo info = backend.devices().at(0);
    if (kept && kept->device != fingerprint(info))
      throw UsageError("--update: the table at " + out + " was made for another device (" +
                       kept->device_name + "), not this " + info.name);
    std::vector<int> library_threads = blas_table_thread_counts(info.cores);
    if (!o->library_threads.empty()) {
      library_threads.clear();
      std::stringstream list(o->library_threads);
      for (std::string item; std::getline(list, item, ',');) {
        int t = 0;
        const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), t);
        if (error != std::errc() || end != item.data() + item.size() || t < 1 || t > std::max(1, info.cores))
          throw UsageError("--library-threads: \"" + item + "\" is not a thread count from 1 to " +
                           std::to_string(std::max(1, info.cores)) + " (this CPU's cores)");
        if (std::find(library_threads.begin(), library_threads.end(), t) == library_threads.end())
          library_threads.push_back(t);
      }
    }
    // The cache's entries of the precisions asked for (a cache may hold both).
    const auto from_cache = [&] {
      BlasTable built = blas_table_from_cache(*source, info, kernels, library_threads);
      std::erase_if(built.entries, [&](const BlasTableEntry& e) {
        return std::find(precisions.begin(), precisions.end(), e.shape.precision) == precisions.end();
      });
      return built;
    };
    BlasTable table = source ? from_cache() : BlasTable{};
    table.device = fingerprint(info);
    table.device_name = info.name;
    std::size_t tuned = 0;
    if (o->tune) {
      const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
      const Kernel& small_m = registry().kernel("cpu", "06_small_m");
      for (const Kernel* k : {&packed, &small_m})
        if (const Support s = k->supported(info); !s.ok) throw Unsupported("--tune: " + s.reason);
      EvaluationSetup setup = open_evaluation(backend, {});
      TuneOptions options;
      options.budget = {.evaluations = o->budget, .seconds = o->seconds};
      std::vector<Problem> problems;
      for (Precision precision : precisions)
        for (Problem p : shapes) {
          p.precision = precision;
          problems.push_back(p);
        }
      auto kernels_for = [&](const Problem& p) {
        std::vector<const Kernel*> chosen;
        for (std::string_view name : blas_tuning_kernels(p)) chosen.push_back(name == small_m.name() ? &small_m : &packed);
        return chosen;
      };
      // On MPI ranks, each class's configurations are evaluated on every rank (rank 0 in process).
      RunnerFactory on_ranks;
      if (ranks::world().size > 1)
        on_ranks = [&](const Kernel& k, const Problem& p) {
          auto local = std::make_unique<InProcessRunner>(*setup.device, k, p, setup.truth.get(), setup.reference.get(),
                                                         options.seed, options.measure);
          const WorkerSetup worker{.backend = "cpu", .kernel = std::string(k.name()), .problem = p, .seed = options.seed,
                                   .reference = setup.reference_name, .reference_threads = setup.threads,
                                   .measure = options.measure, .memory_limit_bytes = default_worker_memory_limit(info)};
          return ranks::make_rank_runner(std::move(local), worker, fingerprint(info));
        };
      tuned = tune_missing_classes(
          *setup.device, kernels_for, setup.truth.get(), setup.reference.get(), *source, table, problems, library_threads,
          options,
          [&](const BlasTuningStep& step) {
            if (!o->json)
              fmt::print("{} {} {} with {} on at most {} thread{} ({} configurations{}{})\n",
                         step.from_other_problems || step.finalists_of != nullptr ? "trying on" : "tuning",
                         shape_and_transposes(step.problem), to_string(step.problem.precision),
                         step.kernel.name(), step.threads, step.threads == 1 ? "" : "s", step.configurations,
                         step.from_other_problems ? ", the best of the nearest other shapes"
                         : step.finalists_of != nullptr
                             ? ", the finalists of " + shape_and_transposes(*step.finalists_of) +
                                   ", a shape of its class"
                             : std::string(),
                         ranks::world().size > 1 ? fmt::format(", {} MPI ranks", ranks::world().size) : "");
          },
          on_ranks);
      table = from_cache();
    }
    std::size_t kept_entries = 0;
    if (kept) {  // the cache's entries over the kept table's: put() replaces an entry of the same class
      const std::size_t cache_entries = table.entries.size();
      for (BlasTableEntry& e : table.entries) kept->put(std::move(e));
      table.entries = std::move(kept->entries);
      kept_entries = table.entries.size() - cache_entries;
    }
    if (table.created.empty()) table.created = utc_timestamp();
    // The default location's directory may not exist yet (no results cache was ever written).
    if (const auto parent = std::filesystem::path(out).parent_path(); !parent.empty()) {
      std::error_code error;
      std::filesystem::create_directories(parent, error);
    }
    write_blas_table(table, out);
    outcome.exit_status = 0;
    if (o->json)
      return print_json(
          {{"table", out}, {"tuned", tuned}, {"kept", kept_entries}, {"contents", nlohmann::json(table)}});
    for (const BlasTableEntry& e : table.entries)
      fmt::print("{:<44} {:>2} thr. {} {{{}}} ({})\n", to_string(e.shape), e.library_threads, e.kernel,
                 to_string(e.config), e.source);
    fmt::print("{} entries (shape class x library threads) for {} -> {}{}{}\n", table.entries.size(),
               info.name, out, tuned > 0 ? fmt::format(" ({} shapes x thread counts tuned now)", tuned) : "",
               o->update ? fmt::format(", {} kept from the table it updates", kept_entries) : "");
  });
}

}  // namespace gemmlab::cli
