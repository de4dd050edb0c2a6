// The BLAS library's dispatch table (docs/blas.md): for one device, the kernel and configuration
// (threads included) each class of GEMM shape runs with, built from the results cache by
// `gemmlab blas-table`, read by libgemmlab_blas.so.
//
// A shape class is the precision, the transposes (NN, TN, NT, TT: whether the row-major problem
// reads A, B transposed) and the power-of-two bucket of each of M, N and K: floor(log2(x)), so
// 512..1023 is bucket 9. A class has an entry per library thread count it was tuned for (the
// fastest configuration on one core is not the fastest on all of them with fewer threads). The
// file is JSON:
//   {"format": "gemmlab-blas-table/2", "device": fingerprint, "device_name": "...",
//    "created": UTC time, "entries": [{"precision", "transposes", "m_bucket", "n_bucket",
//    "k_bucket", "library_threads", "kernel", "params": {...},
//    "source": "tuned <when> for MxNxK (x GFLOP/s)"}]}
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gemmlab/problem.hpp"
#include "gemmlab/results_cache.hpp"
#include "gemmlab/space.hpp"
#include "gemmlab/tune.hpp"

namespace gemmlab {

inline constexpr const char* blas_table_format = "gemmlab-blas-table/2";

struct ShapeClass {
  Precision precision = Precision::fp32;
  std::string transposes = "NN";
  int m_bucket = 0, n_bucket = 0, k_bucket = 0;

  auto operator<=>(const ShapeClass&) const = default;
};

// floor(log2(x)) for x >= 1; 0 for x <= 1.
int size_bucket(std::int64_t x);
ShapeClass shape_class(const Problem& p);
// "fp32 NN M 512-1023 N 512-1023 K 1024-2047"
std::string to_string(const ShapeClass& c);

struct BlasTableEntry {
  ShapeClass shape;
  int library_threads = 1;  // the library's thread count it serves: its configuration uses at most these
  std::string kernel;       // a CPU kernel that reads transposed operands ("05_packed_avx512")
  Config config;
  std::string source;  // where it came from, for the log
};

struct BlasTable {
  std::string device;       // fingerprint() of the device it was made for
  std::string device_name;
  std::string created;
  std::vector<BlasTableEntry> entries;

  // The entry of `p`'s class for a library running `threads` threads: the one tuned for the most
  // threads not above `threads`; null if none.
  const BlasTableEntry* find(const Problem& p, int threads) const;
  // Adds `entry`, replacing one of the same class and library_threads.
  void put(BlasTableEntry entry);
};

// The number of cores of `device`'s machine a table was made for, if it was made on that machine:
// for `device` itself (device.cores), or for the same CPU seen with more of its cores, up to
// `machine_cores` (the online CPUs). A process bound to fewer cores than the table's maker
// (taskset, a batch system's binding, an MPI rank's share) thus keeps the table, and find()
// gives it the entries for the threads it has. nullopt for a table of another machine, or of
// this one seen with fewer cores than `device` has (its entries would leave cores idle).
std::optional<int> blas_table_cores(const BlasTable& table, const DeviceInfo& device, int machine_cores);

void to_json(nlohmann::json& j, const BlasTable& table);
// Throws std::invalid_argument naming what is wrong (format, a missing or mistyped field).
BlasTable blas_table_from_json(const nlohmann::json& j);
// Reads and parses a table file; std::runtime_error (unreadable, not JSON) or
// std::invalid_argument (not a table) naming the file.
BlasTable read_blas_table(const std::string& path);
// Writes it whole to a temporary file beside `path`, then renames it over `path`: a reader never
// sees half a table, and an existing table is replaced only by a complete one.
void write_blas_table(const BlasTable& table, const std::string& path);

// The kernel the library runs, on a CPU with AVX-512, for a problem its table has no entry for:
// below small_problem_volume (M*N*K) 01_naive, which neither packs nor starts threads; a C of at
// least packed_min_rows x packed_min_columns 05_packed_avx512, whose packed panels then serve
// enough rows and columns to pay for the copies; the others 06_small_m, which reads both
// operands where they lie (measured in docs/blas.md). With B transposed, 06_small_m reads it with
// its dot form, which streams B once but re-reads A for every few columns: it serves up to
// small_m_rows rows of C, 05_packed_avx512 the rest (one thread: 64^3 NT 18 -> 100 GFLOP/s,
// 4096 x 64 x 4096 NT 76 -> 157, 16 x 4096 x 4096 NT 60 on 06 against 20 on 05). Below
// single_thread_volume it runs on one thread.
inline constexpr double small_problem_volume = 16.0 * 16 * 16;
inline constexpr double single_thread_volume = 96.0 * 96 * 96;
inline constexpr std::int64_t packed_min_rows = 512, packed_min_columns = 512;
std::string_view default_blas_kernel(const Problem& p);

// The kernels `gemmlab blas-table --tune` tunes for a problem's class; the table keeps the
// fastest. Up to small_m_rows rows of C only 06_small_m (05 would copy all of B to use each
// element a few times); otherwise 06_small_m and 05_packed_avx512, whose ranges overlap.
inline constexpr std::int64_t small_m_rows = 16;
std::vector<std::string_view> blas_tuning_kernels(const Problem& p);

// ---- Building a table (gemmlab blas-table) ----------------------------------------------------

inline constexpr std::size_t blas_finalists_per_kernel = 3;
inline constexpr const char* blas_finalist_reason = "finalist, timed again in alternation with the others";

// The library thread counts a table is made for by default: one and all of `cores`.
std::vector<int> blas_table_thread_counts(int cores);

// From the results cache: for each of `library_threads` T and each problem tuned for one of
// `kernels` on `device` (results of today's kernel source, configurations today's space accepts,
// on at most T threads), its fastest `ok` result — among its finalists alone where it has
// results marked blas_finalist_reason on at most T threads; for each class and T, the fastest.
// Where two or more problems of a class have finalists (tune_missing_classes times a class's
// finalists on each of its shapes), the finalist present on all of them whose smallest share of
// each one's fastest is the largest: the entry serves every shape of its class.
// The kernels must read transposed operands (the library's).
BlasTable blas_table_from_cache(const ResultsCache& cache, const DeviceInfo& device,
                                const std::vector<const Kernel*>& kernels, const std::vector<int>& library_threads);

// How many other problems' best configurations `tune_missing_classes` tries on a problem, per
// kernel (the nearest shapes').
inline constexpr std::size_t blas_transfer_candidates = 6;

// One step of `tune_missing_classes`: a search of `configurations` on `problem` with `kernel` on
// at most `threads` threads, or (from_other_problems) a try of that many other problems' best, or
// (finalists_of) a try of that many finalists of the search of another shape of its class.
struct BlasTuningStep {
  const Problem& problem;
  const Kernel& kernel;
  int threads;
  std::size_t configurations;
  bool from_other_problems = false;
  const Problem* finalists_of = nullptr;
};
using BlasTuningProgress = std::function<void(const BlasTuningStep&)>;

// For each of `library_threads` T, tunes each of `kernels_for(problem)` in this process, on at
// most T threads, on each of `problems` whose class `table` has no entry for T yet, storing every
// result in `cache` (as `gemmlab tune` does); `progress` is told each step before it runs. The
// search at a larger T also starts from the best configuration at a smaller one. Then each
// kernel's best configurations of the other problems (and thread counts), the
// blas_transfer_candidates of the nearest shapes, are tried on each problem: a small budget's
// search often misses a blocking that a neighbouring class's search found. The finalists (the
// blas_finalists_per_kernel fastest of each kernel's search, the kernel's default configuration
// where its search started from it, and the fastest of those tried from other problems) are timed
// again together, in alternating blocks, and stored with
// blas_finalist_reason: one timing each, taken minutes apart on a machine whose speed drifts, does
// not rank close configurations reliably. They are timed together twice, right after their
// problem's search and again once every problem at every T is searched, and each keeps the slower
// of its two rounds (a configuration fast in only some of the machine's states must not win on
// one lucky round; one tried from another problem counts that try as its first round).
// Only the first of `problems` in a class is searched; each other one of its class is then given
// the class's finalists (evaluated there, validated, then timed together once), so that the
// table's one entry for the class is chosen over all of them.
// Returns how many (problem, T) it tuned.
// `make_runner` evaluates a kernel's configurations on a problem (default: an InProcessRunner on
// `device`; `gemmlab blas-table` under MPI: a runner over every rank). `time_finalists` times one
// round of a problem's finalists together, one Timing per candidate in order (default:
// Evaluator::time_together on `device`).
using RunnerFactory = std::function<std::unique_ptr<ConfigurationRunner>(const Kernel&, const Problem&)>;
// How the default FinalistTimer times a round: the search's options, but each finalist sampled in
// at least four alternating blocks of up to 1000 runs (measure_interleaved's min_blocks). The
// search's 50 runs a side fill one block of a product of microseconds, so its finalists would each
// be timed in one burst, in turn, and a slow moment of the machine would pick the winner.
MeasureOptions finalist_measure(MeasureOptions search);
using FinalistTimer =
    std::function<std::vector<Timing>(const Problem&, const std::vector<std::pair<const Kernel*, Config>>&)>;
std::size_t tune_missing_classes(Device& device,
                                 const std::function<std::vector<const Kernel*>(const Problem&)>& kernels_for,
                                 Reference* truth_fp64, Reference* reference,
                                 ResultsCache& cache, const BlasTable& table, const std::vector<Problem>& problems,
                                 const std::vector<int>& library_threads, const TuneOptions& options,
                                 const BlasTuningProgress& progress = {},
                                 const RunnerFactory& make_runner = {}, const FinalistTimer& time_finalists = {});

// The shapes `gemmlab blas-table --tune` tunes by default and bench/blas_bench.py measures:
// squares, tall-skinny, short-wide and small-K shapes, a BERT-base layer's GEMMs, LLM decoding
// (M = 1, 4, 16 against 4096 x 4096 and 4096 x 11008) and ResNet-50 convolutions as im2col GEMMs.
// Packed row-major fp32 problems.
std::vector<Problem> blas_benchmark_shapes();
// The shapes `gemmlab blas-table --tune` tunes by default: the benchmark's, and LLM decoding's
// again with B transposed (x * W^T: how a model's layer stores its weight, N x K). Their classes
// are the NT ones, and 06_small_m reads such a B with another loop (its dot form), whose best
// blocking is not the one tuned for B untransposed.
std::vector<Problem> blas_tuning_shapes();

// $GEMMLAB_BLAS_TABLE, else $XDG_CACHE_HOME/gemmlab/blas-table.json, else
// $HOME/.cache/gemmlab/blas-table.json; "" when none of these variables is set.
std::string blas_table_path();

}  // namespace gemmlab
