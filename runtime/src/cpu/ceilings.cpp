// Measured ceilings of the CPU.
//
// FMA throughput: FMA_CHAINS independent accumulator registers, each updated by a dependent
// chain acc = acc * x + y. The chains are independent, so the core can keep all its FMA pipes
// busy (latency 4 x 2 pipes needs at least 8 chains in flight); the compiler may neither merge
// them (FMA is not reassociated without -ffast-math) nor drop them (the sum of all accumulators
// is returned and used). x and y come from the caller at run time, so nothing is constant-folded.
// The loops are extern "C" so that a test can find them in the disassembly and count their
// vfmadd instructions (tests/fma_codegen_check.cmake).
//
// Memory bandwidth: the STREAM triad a[i] = b[i] + s * c[i] over arrays far larger than the
// last-level cache share, counted as 3 x 8 bytes per element (no write-allocate traffic).
#include <immintrin.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "gemmlab/buffer.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/measure.hpp"

namespace {
constexpr int fma_chains = 24;  // fits in 32 zmm registers with x and y
constexpr int fma_chains_avx2 = 12;  // 16 ymm registers
}  // namespace

extern "C" {

__attribute__((target("avx512f"), noinline)) float gemmlab_fma_loop_avx512_fp32(long iterations,
                                                                               float x, float y) {
  __m512 acc[fma_chains];
  for (int i = 0; i < fma_chains; ++i) acc[i] = _mm512_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  const __m512 vx = _mm512_set1_ps(x), vy = _mm512_set1_ps(y);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < fma_chains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], vx, vy);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < fma_chains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx512f"), noinline)) double gemmlab_fma_loop_avx512_fp64(long iterations,
                                                                                double x, double y) {
  __m512d acc[fma_chains];
  for (int i = 0; i < fma_chains; ++i) acc[i] = _mm512_set1_pd(1.0 + 0.001 * i);
  const __m512d vx = _mm512_set1_pd(x), vy = _mm512_set1_pd(y);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < fma_chains; ++i) acc[i] = _mm512_fmadd_pd(acc[i], vx, vy);
  }
  __m512d sum = acc[0];
  for (int i = 1; i < fma_chains; ++i) sum = _mm512_add_pd(sum, acc[i]);
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, sum);
  double total = 0;
  for (double v : lanes) total += v;
  return total;
}

__attribute__((target("avx2,fma"), noinline)) float gemmlab_fma_loop_avx2_fp32(long iterations,
                                                                              float x, float y) {
  __m256 acc[fma_chains_avx2];
  for (int i = 0; i < fma_chains_avx2; ++i) acc[i] = _mm256_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  const __m256 vx = _mm256_set1_ps(x), vy = _mm256_set1_ps(y);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < fma_chains_avx2; ++i) acc[i] = _mm256_fmadd_ps(acc[i], vx, vy);
  }
  __m256 sum = acc[0];
  for (int i = 1; i < fma_chains_avx2; ++i) sum = _mm256_add_ps(sum, acc[i]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx2,fma"), noinline)) double gemmlab_fma_loop_avx2_fp64(long iterations,
                                                                               double x, double y) {
  __m256d acc[fma_chains_avx2];
  for (int i = 0; i < fma_chains_avx2; ++i) acc[i] = _mm256_set1_pd(1.0 + 0.001 * i);
  const __m256d vx = _mm256_set1_pd(x), vy = _mm256_set1_pd(y);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < fma_chains_avx2; ++i) acc[i] = _mm256_fmadd_pd(acc[i], vx, vy);
  }
  __m256d sum = acc[0];
  for (int i = 1; i < fma_chains_avx2; ++i) sum = _mm256_add_pd(sum, acc[i]);
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, sum);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

}  // extern "C"

namespace gemmlab::cpu {
namespace {

volatile float sink32;
volatile double sink64;

// While it lives, OpenMP thread t of a team of `threads` runs on the t-th CPU this process may use
// (its affinity), each on its own core; afterwards every thread gets the whole set back. A new
// team's thread can start on its parent's core and stay there for the few milliseconds of a
// measurement: two threads sharing a core read as one core's ceiling (seen here: 192 GFLOP/s
// for two cores, 211 for one, and 399 in the next process).
class PinnedTeam {
 public:
  explicit PinnedTeam(int threads) : threads_(threads) {
    if (sched_getaffinity(0, sizeof all_, &all_) != 0) return;
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &all_)) cpus.push_back(cpu);
    if (cpus.empty()) return;
    pinned_ = true;
#pragma omp parallel num_threads(threads_)
    {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[static_cast<std::size_t>(omp_get_thread_num()) % cpus.size()], &one);
      sched_setaffinity(0, sizeof one, &one);
    }
  }
  ~PinnedTeam() {
    if (!pinned_) return;
#pragma omp parallel num_threads(threads_)
    sched_setaffinity(0, sizeof all_, &all_);
  }
  PinnedTeam(const PinnedTeam&) = delete;
  PinnedTeam& operator=(const PinnedTeam&) = delete;

 private:
  int threads_;
  cpu_set_t all_{};
  bool pinned_ = false;
};

// The FMA loop for this CPU and precision: the widest vector unit it has.
struct FmaLoop {
  void (*run)(long iterations) = nullptr;
  double flops_per_iteration = 0;
};
std::optional<FmaLoop> fma_loop(const DeviceInfo& info, Precision precision) {
  const bool fp32 = precision == Precision::fp32;
  if (precision != Precision::fp32 && precision != Precision::fp64) return std::nullopt;
  // An iteration of the fp64 loop does half the flops of the fp32 one (half the lanes, as many chains).
  if (info.has_feature("avx512f"))
    return FmaLoop{fp32 ? +[](long it) { sink32 = gemmlab_fma_loop_avx512_fp32(it, 0.999999f, 1e-6f); }
                        : +[](long it) { sink64 = gemmlab_fma_loop_avx512_fp64(it, 0.999999, 1e-6); },
                   2.0 * (fp32 ? 16 : 8) * fma_chains};
  if (info.has_feature("avx2") && info.has_feature("fma"))
    return FmaLoop{fp32 ? +[](long it) { sink32 = gemmlab_fma_loop_avx2_fp32(it, 0.999999f, 1e-6f); }
                        : +[](long it) { sink64 = gemmlab_fma_loop_avx2_fp64(it, 0.999999, 1e-6); },
                   2.0 * (fp32 ? 8 : 4) * fma_chains_avx2};
  return std::nullopt;
}

// Wall-clock seconds of `threads` threads (pinned by the caller) each running the loop once.
double run_loop_on_team(int threads, long iterations, const FmaLoop& loop) {
  return wall_seconds([&] {
#pragma omp parallel num_threads(threads)
    loop.run(iterations);
  });
}

// FLOP/s of `threads` cores each running the FMA loop for `iterations`.
double fma_gflops(int threads, long iterations, const FmaLoop& loop) {
  const PinnedTeam pinned(threads);
  Measurement m = measure(
      [&] { return run_loop_on_team(threads, iterations, loop); },
      {.warmup = 1, .min_repetitions = 5, .max_repetitions = 20, .max_seconds = 1.0, .target_spread = 0.01});
  return loop.flops_per_iteration * static_cast<double>(iterations) * threads / m.median_s * 1e-9;
}

double triad_gb_per_s(const DeviceInfo& info, int threads) {
  // Arrays of 2x the last-level cache each, between 64 MiB and 512 MiB.
  std::int64_t llc = 0;
  for (const auto& c : info.caches) llc = std::max(llc, c.size_bytes);
  const std::size_t bytes = static_cast<std::size_t>(
      std::clamp<std::int64_t>(2 * llc, std::int64_t{64} << 20, std::int64_t{512} << 20));
  const std::size_t n = bytes / sizeof(double);
  HostBuffer<double> a(n), b(n), c(n);
  double* pa = a.data();
  double* pb = b.data();
  double* pc = c.data();
  const auto count = static_cast<long>(n);
  const PinnedTeam pinned(threads);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (long i = 0; i < count; ++i) {  // first touch by the thread that will use the page
    pa[i] = 0;
    pb[i] = 1;
    pc[i] = 2;
  }
  const double s = 3.0;
  Measurement m = measure(
      [&] {
        return wall_seconds([&] {
#pragma omp parallel for num_threads(threads) schedule(static)
          for (long i = 0; i < count; ++i) pa[i] = pb[i] + s * pc[i];
        });
      },
      {.warmup = 1, .min_repetitions = 5, .max_repetitions = 20, .max_seconds = 2.0,
       .target_spread = 0.02});
  sink64 = pa[count / 2];
  return 3.0 * static_cast<double>(bytes) / m.median_s * 1e-9;
}
}  // namespace

FmaRun run_fma_loop(const DeviceInfo& info, int threads, Precision precision, long iterations) {
  const std::optional<FmaLoop> loop = fma_loop(info, precision);
  if (!loop || threads < 1 || iterations < 1) return {};
  const PinnedTeam pinned(threads);
  return {run_loop_on_team(threads, iterations, *loop),
          loop->flops_per_iteration * static_cast<double>(iterations) * threads};
}

MeasuredCeilings measure_ceilings(const DeviceInfo& info) {
  MeasuredCeilings c;
  const int cores = info.cores;
  // Each FMA ceiling on all cores and on one.
  if (const auto f32 = fma_loop(info, Precision::fp32), f64 = fma_loop(info, Precision::fp64); f32 && f64) {
    c.fma_gflops_fp32 = fma_gflops(cores, fma_loop_iterations, *f32);
    c.fma_gflops_fp32_one_core = fma_gflops(1, fma_loop_iterations, *f32);
    c.fma_gflops_fp64 = fma_gflops(cores, fma_loop_iterations, *f64);
    c.fma_gflops_fp64_one_core = fma_gflops(1, fma_loop_iterations, *f64);
  }
  c.triad_gb_per_s = triad_gb_per_s(info, cores);
  return c;
}

}  // namespace gemmlab::cpu
