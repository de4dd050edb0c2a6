// What every CUDA kernel shares, so that a step of the curriculum is its device code
// (kernels/cuda/<name>.cu) plus one specification: its parameters, constraints and launch shape.
//
// The device code contract. Each .cu file is compiled at run time by NVRTC, one module per
// configuration, with
//   -D<PARAM>=<value> for every tunable parameter of the configuration,
//   -DTA=<input type> -DTC=<output and accumulation type>: float/float (fp32), double/double
//    (fp64), __half/float (fp16), __nv_bfloat16/float (bf16) — a file using the last two includes
//    <cuda_fp16.h> / <cuda_bf16.h> itself,
// and defines the entry point
//   extern "C" __global__ void gemm(int M, int N, int K, TC alpha, const TA* A, int lda,
//                                   const TA* B, int ldb, TC beta, TC* C, int ldc)
// computing C = alpha * A * B + beta * C for row-major A (M x K), B (K x N), C (M x N) with any
// M, N, K >= 1 (edge tiles), where beta == 0 means C is not read (it may hold NaN).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "embedded_source.hpp"
#include "gemmlab/kernel.hpp"

namespace gemmlab::cuda {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// How one configuration is launched on one problem.
struct Launch {
  Dim3 grid, block;
  std::size_t shared_bytes = 0;  // dynamic shared memory
};

// For kernels that load tiles with TMA: the runtime encodes one 2-D tensor map per input over
// the row-major matrix (cuTensorMapEncodeTiled; A is M x K, B is K x N; elements outside the
// matrix read as zero) with these box sizes in elements, and passes the two maps after the fixed
// arguments:  ..., int ldc, const __grid_constant__ CUtensorMap a_map,
//             const __grid_constant__ CUtensorMap b_map)
struct TensorMapBoxes {
  unsigned a_rows = 0, a_cols = 0;  // box over A: rows of M, columns of K
  unsigned b_rows = 0, b_cols = 0;  // box over B: rows of K, columns of N
  bool swizzle_128b = true;         // CU_TENSOR_MAP_SWIZZLE_128B (else none)
};

struct CudaKernelSpec {
  std::string name;     // "05_2d_register_tiled": its source is kernels/cuda/<name>.cu
  std::string summary;  // the one idea it adds
  std::vector<Precision> precisions;
  int min_compute_capability = 70;  // 80: cp.async, ldmatrix, bf16 mma; 90: wgmma, TMA
  bool arch_specific = false;       // compiled for sm_XXa (wgmma, setmaxnreg: Hopper only)
  // Parameters and constraints (threads per block, shared memory and registers from `gpu`).
  std::function<SearchSpace(const GpuLimits& gpu, Precision precision)> space;
  // The preferred configuration; where a GPU's limits rule it out, the kernel falls back to the
  // first valid configuration of its space (make_cuda_kernel does, for every kernel).
  std::function<Config(const GpuLimits& gpu, Precision precision)> default_config;
  // Grid, block and dynamic shared memory of a checked configuration on a problem.
  std::function<Launch(const Config& config, const Problem& problem, const GpuLimits& gpu)> launch;
  // Set only by kernels that load through TMA (see TensorMapBoxes).
  std::function<TensorMapBoxes(const Config& config)> tensor_maps = {};
};

std::unique_ptr<Kernel> make_cuda_kernel(CudaKernelSpec spec);

// The contract's fixed arguments of one launch, held where a launch API can take their addresses
// (CUDA's and HIP's both want an array of pointers to the arguments, in order). Not copyable: the
// pointers refer to its members.
struct GemmArguments {
  int m, n, k, lda, ldb, ldc;
  const void* a;
  const void* b;
  void* c;
  double alpha64, beta64;  // fp64 problems
  float alpha32, beta32;   // every other precision: fp32 alpha, beta and C
  bool fp64;

  GemmArguments(const Problem& p, const Operands& o)
      : m(static_cast<int>(p.m)), n(static_cast<int>(p.n)), k(static_cast<int>(p.k)), lda(static_cast<int>(p.lda)),
        ldb(static_cast<int>(p.ldb)), ldc(static_cast<int>(p.ldc)), a(o.a), b(o.b), c(o.c), alpha64(p.alpha),
        beta64(p.beta), alpha32(static_cast<float>(p.alpha)), beta32(static_cast<float>(p.beta)),
        fp64(p.precision == Precision::fp64) {}
  GemmArguments(const GemmArguments&) = delete;
  GemmArguments& operator=(const GemmArguments&) = delete;

  std::vector<void*> pointers() {
    void* alpha = fp64 ? static_cast<void*>(&alpha64) : static_cast<void*>(&alpha32);
    void* beta = fp64 ? static_cast<void*>(&beta64) : static_cast<void*>(&beta32);
    return {&m, &n, &k, alpha, &a, &lda, &b, &ldb, beta, &c, &ldc};
  }
};

// The kernel files embedded in the program, by file name: the kernels ("05_2d_register_tiled.cu")
// and the device headers they include ("hopper_primitives.cuh"), which NVRTC receives with every
// program. The hash covers the file, the device headers and the host code that launches it.
const std::map<std::string_view, EmbeddedSource>& embedded_files();

// The limits an architecture's datasheet gives (sm_80: A100, sm_86, sm_89, sm_90: H100/H200), for
// compiling and checking kernels without that device. Throws std::invalid_argument for others.
GpuLimits gpu_limits_for_arch(int compute_capability);

// Helpers for the specifications.
inline unsigned ceil_div(std::int64_t a, std::int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }
inline std::size_t element_bytes(Precision p) { return p == Precision::fp64 ? 8 : p == Precision::fp32 ? 4 : 2; }

}  // namespace gemmlab::cuda
