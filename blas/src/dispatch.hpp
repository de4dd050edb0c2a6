// The BLAS library's engine: one per process, built at the first call. It opens this machine's
// CPU as a gemmlab device and runs each GEMM with the kernel and configuration chosen for it:
//   - the entry of the problem's shape class in the tuned table (gemmlab/blas_table.hpp), when
//     there is a table for this device (blas_table_path(); a table made for another device, or
//     one that cannot be read, is ignored with one warning on stderr), its threads capped at the
//     library's; for transposes the table has no entry for, the entry of the same sizes
//     untransposed (NN) where that is 05_packed_avx512's: 05 reads any transposes in its packing,
//     and its micro-kernel and blocking then run as they were tuned;
//   - otherwise default_blas_kernel (gemmlab/blas_table.hpp: 01_naive for the tiniest problems,
//     05_packed_avx512 for a large C, 06_small_m for the others; with B transposed 06_small_m up
//     to 16 rows of C, 05_packed_avx512 above) in its default configuration
//     for this CPU, on the library's threads (GEMMLAB_NUM_THREADS, else OMP_NUM_THREADS, else
//     every core), one thread below single_thread_volume. Where the CPU lacks AVX-512, 05 and 06
//     run their AVX2 micro-kernels and tiles; where it lacks AVX2 and FMA too, 01_naive runs every
//     call.
//     06_small_m with B transposed takes the deepest block of k (KB) its space allows for the
//     default tile: it then reads B with its dot form, whose every block ends in horizontal sums.
// GEMMLAB_BLAS_KERNEL=NAME (01_naive, 05_packed_avx512 or 06_small_m) runs every call on that
// kernel in its default configuration, table and rule aside: to check one kernel with a BLAS
// client's own tests (netlib's testers do so for each). An unknown name is ignored with a warning.
// GEMMLAB_BLAS_VERBOSE=1 writes one line per call to stderr: the call, the kernel, the
// configuration and why it was chosen.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gemmlab/blas_table.hpp"

#include "gemmlab/problem.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab::blas {

// The library's thread count from the environment: GEMMLAB_NUM_THREADS, else OMP_NUM_THREADS
// (its first entry), else `cores`. A value that is not a positive integer is ignored.
int threads_from_environment(int cores);

class Engine {
 public:
  static Engine& instance();  // built on first use, thread-safe

  // C = alpha * op(A) * op(B) + beta * C for a valid row-major problem with M, N, K >= 1 and
  // alpha != 0 (the entry points answer the quick returns). `routine` names the call in the log
  // ("sgemm_", "cblas_dgemm"). Safe to call from several threads at once. Throws on failure
  // (the entry points turn that into a message).
  void gemm(const Problem& p, const void* a, const void* b, void* c, std::string_view routine) const;

  int threads() const { return threads_; }

 private:
  Engine();
  void load_table();
  struct Decision {
    const Kernel* kernel;
    Config config;
    std::string why;  // for the log
  };
  Decision decide(const Problem& p) const;
  const Kernel* library_kernel(std::string_view name) const;  // naive_, packed_ or small_m_; null if none
  Config default_config(const Kernel& kernel, const Problem& p) const;

  Registry registry_;
  std::unique_ptr<Device> device_;
  const Kernel* naive_ = nullptr;
  const Kernel* packed_ = nullptr;   // null where the CPU lacks AVX-512
  const Kernel* small_m_ = nullptr;  // likewise
  const Kernel* forced_ = nullptr;   // GEMMLAB_BLAS_KERNEL's, where set
  Config packed_defaults_[2];        // fp32, fp64
  Config small_m_defaults_[2];       // fp32, fp64
  Config small_m_dot_defaults_[2];   // fp32, fp64: 06's defaults for a transposed B
  Config small_m_row_defaults_[2];   // fp32, fp64: 06's defaults for one row of C (its row form)
  std::optional<BlasTable> table_;  // entries checked against today's kernels and spaces
  int threads_ = 1;
  bool verbose_ = false;
};

}  // namespace gemmlab::blas
