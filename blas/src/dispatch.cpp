#include "dispatch.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "cpu_kernels.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/device.hpp"

namespace gemmlab::blas {

namespace {
// A positive integer at the start of `text` (up to a comma: OMP_NUM_THREADS may list levels).
int positive(const char* text) {
  if (text == nullptr) return 0;
  const char* end = text + std::strcspn(text, ",");
  int value = 0;
  const auto [ptr, error] = std::from_chars(text, end, value);
  return error == std::errc() && ptr == end && value > 0 ? value : 0;
}

bool verbose_from_environment() {
  const char* v = std::getenv("GEMMLAB_BLAS_VERBOSE");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

double volume(const Problem& p) {
  return static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
}
}  // namespace

int threads_from_environment(int cores) {
  if (const int n = positive(std::getenv("GEMMLAB_NUM_THREADS"))) return n;
  if (const int n = positive(std::getenv("OMP_NUM_THREADS"))) return n;
  return std::max(1, cores);
}

Engine& Engine::instance() {
  static Engine engine;
  return engine;
}

Engine::Engine() : verbose_(verbose_from_environment()) {
  registry_.add_backend(cpu::make_backend());
  cpu::register_kernels(registry_);
  Backend& backend = registry_.backend("cpu");
  device_ = backend.open(0);
  const DeviceInfo& info = device_->info();
  naive_ = &registry_.kernel("cpu", "01_naive");
  const Kernel& packed = registry_.kernel("cpu", "05_packed_avx512");
  const Kernel& small_m = registry_.kernel("cpu", "06_small_m");
  // The space's thread range is 1..cores: more threads than cores are not asked for.
  threads_ = std::min(threads_from_environment(info.cores), std::max(1, info.cores));
  // 05 and 06 run with AVX-512, or AVX2 and FMA (their AVX2 micro-kernels and tiles).
  if (packed.supported(info).ok && small_m.supported(info).ok) {
    packed_ = &packed;
    small_m_ = &small_m;
    for (Precision precision : {Precision::fp32, Precision::fp64}) {
      packed_defaults_[precision == Precision::fp64] = packed.default_config(info, precision);
      small_m_defaults_[precision == Precision::fp64] = small_m.default_config(info, precision);
      // A transposed B goes through 06's dot form: each block of k ends in MR x NV horizontal sums
      // of vectors, so its default block is the deepest the space allows for the default tile
      // (one thread, 16 x 4096 x 4096 NT: 29.7-30.3 GFLOP/s at KB=256, 57.4 at KB=1024; 16 x 11008 x
      // 4096 NT 24.6 -> 40.9; Intel Xeon development machine).
      const SearchSpace space = small_m.space(info, precision);
      Config dot = small_m_defaults_[precision == Precision::fp64];
      const std::vector<ParamValue>& depths = space.find("KB")->values;
      for (auto kb = depths.rbegin(); kb != depths.rend(); ++kb) {
        dot["KB"] = *kb;
        if (space.is_valid(dot)) break;
      }
      if (!space.is_valid(dot)) dot = small_m_defaults_[precision == Precision::fp64];
      small_m_dot_defaults_[precision == Precision::fp64] = std::move(dot);
      // One row of C with B as stored goes through 06's row form: B's rows stream whole past C's
      // row instead of in strips of KB rows, a stream each (one core, AMD EPYC with AVX2, MR=6 NV=2
      // KB=256 beside BLIS: 1 x 4096 x 4096 fp32 7.5 -> 18.0 GFLOP/s, fp64 3.4 -> 6.7; 1 x 1024 x
      // 1024 fp64 7.4 -> 13.5; 1 x 300 x 77 fp64 10.8 -> 23.2; the tables tuned on the
      // development machines pick the row form for M = 1 too).
      Config row = small_m_defaults_[precision == Precision::fp64];
      row["STREAM"] = 1;
      row["KB"] = 256;  // the row form reads the whole depth; the space takes 256 as its one KB
      small_m_row_defaults_[precision == Precision::fp64] =
          space.is_valid(row) ? std::move(row) : small_m_defaults_[precision == Precision::fp64];
    }
  }
  load_table();
  if (const char* name = std::getenv("GEMMLAB_BLAS_KERNEL"); name != nullptr && *name != '\0') {
    forced_ = library_kernel(name);
    if (forced_ == nullptr)
      std::fprintf(stderr, "gemmlab-blas: warning: GEMMLAB_BLAS_KERNEL=%s is not one of the library's kernels that this CPU "
                   "runs (01_naive%s); ignored\n", name, packed_ != nullptr ? ", 05_packed_avx512, 06_small_m" : "");
  }
  if (verbose_)
    std::fprintf(stderr, "gemmlab-blas: %s, %d thread%s; %s; %zu table entries\n", info.name.c_str(),
                 threads_, threads_ == 1 ? "" : "s",
                 forced_ != nullptr ? "GEMMLAB_BLAS_KERNEL: every call on one kernel"
                 : packed_ != nullptr
                     ? "05_packed_avx512 for a C of at least 512 x 512, 06_small_m for the others above the "
                       "small problems (B transposed: 06_small_m up to 16 rows of C, 05_packed_avx512 above)"
                     : "neither AVX-512 nor AVX2: 01_naive for every call",
                 table_ ? table_->entries.size() : std::size_t{0});
}

// `kernel`'s default configuration for this CPU and `p`: the library's threads, one below
// single_thread_volume.
Config Engine::default_config(const Kernel& kernel, const Problem& p) const {
  if (&kernel == naive_) return {};
  const Config* defaults = &kernel != small_m_ ? packed_defaults_
                           : p.trans_b         ? small_m_dot_defaults_
                           : p.m == 1          ? small_m_row_defaults_
                                               : small_m_defaults_;
  Config config = defaults[p.precision == Precision::fp64];
  config["threads"] = volume(p) < single_thread_volume ? 1 : threads_;
  return config;
}

const Kernel* Engine::library_kernel(std::string_view name) const {
  for (const Kernel* k : {naive_, packed_, small_m_})
    if (k != nullptr && k->name() == name) return k;
  return nullptr;
}

// The table for this device, its entries checked now (a kernel this library has and this CPU
// runs, a configuration today's space accepts), so that no call fails on a stale entry.
void Engine::load_table() {
  const std::string path = blas_table_path();
  std::error_code error;
  if (path.empty() || !std::filesystem::exists(path, error)) return;  // no table: the defaults
  const DeviceInfo& info = device_->info();
  BlasTable table;
  try {
    table = read_blas_table(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemmlab-blas: warning: %s; using the default kernels\n", e.what());
    return;
  }
  // A process bound to some of the machine's cores keeps a table made with all of them.
  const std::optional<int> table_cores =
      blas_table_cores(table, info, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  if (!table_cores) {
    std::fprintf(
        stderr,
        "gemmlab-blas: warning: the BLAS table %s was made for %s (%s), not this %s (%s, %d cores usable); "
        "using the default kernels\n",
        path.c_str(), table.device_name.c_str(), table.device.c_str(), info.name.c_str(),
        fingerprint(info).c_str(), info.cores);
    return;
  }
  if (verbose_ && *table_cores != info.cores)
    std::fprintf(
        stderr,
        "gemmlab-blas: the BLAS table %s was made with %d cores of this machine; this process may use %d\n",
        path.c_str(), *table_cores, info.cores);
  // Each entry's kernel and configuration checked against today's space, once; an entry written
  // before one of its kernel's parameters existed runs as it was tuned (SearchSpace::upgraded).
  std::size_t dropped = 0, beyond_cores = 0;
  std::vector<BlasTableEntry> usable;
  for (BlasTableEntry& e : table.entries) {
    // Made for more cores than this process may use: not stale, just not for it.
    if (e.library_threads > info.cores) {
      ++beyond_cores;
      continue;
    }
    if (const Kernel* k = library_kernel(e.kernel); k != nullptr && k->has_precision(e.shape.precision)) {
      const SearchSpace space = k->space(info, e.shape.precision);
      e.config = space.upgraded(std::move(e.config));
      if (space.is_valid(e.config)) {
        usable.push_back(std::move(e));
        continue;
      }
    }
    ++dropped;
  }
  table.entries = std::move(usable);
  if (verbose_ && beyond_cores > 0)
    std::fprintf(stderr,
                 "gemmlab-blas: %zu entr%s of the BLAS table for more threads than this process may use (%d "
                 "core%s) set aside\n",
                 beyond_cores, beyond_cores == 1 ? "y" : "ies", info.cores, info.cores == 1 ? "" : "s");
  if (dropped > 0)
    std::fprintf(stderr, "gemmlab-blas: warning: %zu entr%s of the BLAS table %s no longer valid here (kernel or space changed); "
                 "those classes use the default kernels\n", dropped, dropped == 1 ? "y is" : "ies are", path.c_str());
  table_ = std::move(table);
}

// The kernel and configuration for `p`, and why: a function of the problem alone (the table, the
// environment and the CPU are fixed when the engine is built).
Engine::Decision Engine::decide(const Problem& p) const {
  if (forced_ != nullptr) return {forced_, default_config(*forced_, p), "GEMMLAB_BLAS_KERNEL, default configuration"};
  // An entry's kernel and configuration, its threads capped at the library's.
  const auto from_entry = [&](const BlasTableEntry& entry, std::string why) -> Decision {
    Config config = entry.config;
    if (auto t = config.find("threads"); t != config.end())
      t->second = std::min<ParamValue>(t->second, threads_);
    return {library_kernel(entry.kernel), std::move(config), std::move(why)};
  };
  if (const BlasTableEntry* entry = table_ ? table_->find(p, threads_) : nullptr)
    return from_entry(*entry, entry->source);
  // Transposes the table has no entry for: 05's entry for the same sizes untransposed serves them,
  // since 05 reads the transposes while packing and the rest runs as tuned (one thread, 2048^3:
  // TN/NT/TT 161-178 GFLOP/s at the defaults, 174-190 at the NN entry's configuration). 06's does
  // not carry over: with B transposed it runs another loop (its dot form).
  if (Problem untransposed = p; table_ && p.transposed()) {
    untransposed.trans_a = untransposed.trans_b = false;
    if (const BlasTableEntry* entry = table_->find(untransposed, threads_);
        entry != nullptr && library_kernel(entry->kernel) == packed_)
      return from_entry(*entry,
                        entry->source + "; the same sizes' NN entry: 05 packs " + p.transposes() + " as NN");
  }
  if (packed_ == nullptr) return {naive_, {}, "neither AVX-512 nor AVX2 on this CPU"};
  if (const Kernel* chosen = library_kernel(default_blas_kernel(p)); chosen != naive_)
    return {chosen, default_config(*chosen, p),
            volume(p) < single_thread_volume ? "default configuration, one thread (small problem)" : "default configuration"};
  return {naive_, {}, "the small path (no packing, no threads)"};
}

// Deciding (the table's lookup, copies and comparisons of configurations: about 8% of a 64^3
// call's time on one thread, by perf) and building an executable (checking the configuration
// against the kernel's space, sizing the packing buffers: a large part of a 512^3 call) are
// done once per problem. Programs repeat their shapes (a model's layers, a solver's iterations), so
// each thread keeps its last few problems with what was decided for them and the executable; a
// thread's own, because an executable's buffers serve one call at a time. A repeated call costs
// a comparison of problems.
void Engine::gemm(const Problem& p, const void* a, const void* b, void* c, std::string_view routine) const {
  struct Kept {
    Problem problem;
    Decision decision;
    std::unique_ptr<Executable> executable;
  };
  constexpr std::size_t kept_per_thread = 4;
  thread_local std::vector<Kept> kept;  // most recently used last
  auto same = [&](const Kept& k) { return k.problem == p; };
  if (auto it = std::find_if(kept.begin(), kept.end(), same); it != kept.end()) {
    std::rotate(it, it + 1, kept.end());
  } else {
    Decision decision = decide(p);
    std::unique_ptr<Executable> executable = decision.kernel->prepare(*device_, p, decision.config);
    if (kept.size() == kept_per_thread) kept.erase(kept.begin());
    kept.push_back({p, std::move(decision), std::move(executable)});
  }
  const Kept& k = kept.back();
  if (verbose_)
    std::fprintf(stderr, "gemmlab-blas: %.*s %s %s %s -> cpu/%.*s {%s} (%s)\n", static_cast<int>(routine.size()),
                 routine.data(), std::string(to_string(p.precision)).c_str(), p.shape().c_str(),
                 p.transposes().c_str(), static_cast<int>(k.decision.kernel->name().size()),
                 k.decision.kernel->name().data(), to_string(k.decision.config).c_str(), k.decision.why.c_str());
  k.executable->run({a, b, c});
}

}  // namespace gemmlab::blas
