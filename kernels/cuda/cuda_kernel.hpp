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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <string>
#include <vector>

#include "embedded_source.hpp"
#include "gemmlab/cuda.hpp"
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
  // The preferred configuration (fixed_config() where it is one for every GPU and precision);
  // where a GPU's limits rule it out, the kernel's default is the nearest valid configuration of
  // its space (Kernel::default_config).
  std::function<Config(const GpuLimits& gpu, Precision precision)> preferred_config;
  // Whether the kernel takes the space's `shared_bytes` as dynamic shared memory (extern
  // __shared__), as the pipelined steps do; the others declare theirs statically.
  bool dynamic_shared_memory = false;
  // Grid, block and dynamic shared memory of a checked configuration on a problem. Unset: the
  // usual one, tiled_launch() of the space.
  std::function<Launch(const Config& config, const Problem& problem, const GpuLimits& gpu)> launch = {};
  // Set only by kernels that load through TMA (see TensorMapBoxes).
  std::function<TensorMapBoxes(const Config& config)> tensor_maps = {};
};

std::unique_ptr<Kernel> make_cuda_kernel(CudaKernelSpec spec);

// What NVRTC is given for kernel `kernel` ("05_2d_register_tiled") in a configuration: its
// embedded source, the device headers, the parameters as -D constants and TA/TC for `precision`.
CompileRequest compile_request(const std::string& kernel, const Config& config, Precision precision,
                               const std::string& arch);

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

// The limits of the datasheet catalogue's part for an architecture (sm_80: A100, sm_86: RTX 3090,
// sm_89: RTX 4090, sm_90: H100; gpu_part, data/datasheets/devices.json), for compiling and
// checking kernels without that device. Throws std::invalid_argument for others.
GpuLimits gpu_limits_for_arch(int compute_capability);

// Helpers for the specifications.
inline unsigned ceil_div(std::int64_t a, std::int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }
inline std::size_t element_bytes(Precision p) { return p == Precision::fp64 ? 8 : p == Precision::fp32 ? 4 : 2; }

// The GPU limits the specifications' constraints read. let_limits() declares each as a named value
// of the space, always under the same name and with the same help, so that every kernel's
// expressions read alike and `gemmlab kernels` shows each limit's value beside them.
enum class Limit {
  max_threads_per_block,
  warp_size,
  shared_bytes_per_block,  // without opting in
  shared_bytes_optin,      // the most a block may opt in to (at least shared_bytes_per_block)
  registers_per_block,
  max_registers_per_thread,
};

inline void let_limits(SearchSpace& s, const GpuLimits& gpu, std::initializer_list<Limit> limits) {
  for (Limit limit : limits) switch (limit) {
      case Limit::max_threads_per_block:
        s.let("max_threads_per_block", gpu.max_threads_per_block, "threads a block may have");
        break;
      case Limit::warp_size: s.let("warp_size", gpu.warp_size, "threads of a warp (AMD: lanes of a wave)"); break;
      case Limit::shared_bytes_per_block:
        s.let("shared_bytes_per_block", gpu.shared_bytes_per_block, "shared memory a block may use without opting in");
        break;
      case Limit::shared_bytes_optin:
        s.let("shared_bytes_optin", std::max(gpu.shared_bytes_per_block, gpu.shared_bytes_per_block_optin),
              "shared memory a block may use when it opts in (the runtime does above 48 KiB)");
        break;
      case Limit::registers_per_block:
        s.let("registers_per_block", gpu.registers_per_block, "32-bit registers the threads of a block share");
        break;
      case Limit::max_registers_per_thread:
        s.let("max_registers_per_thread", gpu.max_registers_per_thread,
              "registers the compiler may give one thread (AMD: VGPRs per lane)");
        break;
    }
}

// A preferred configuration that is the same on every GPU and in every precision.
inline std::function<Config(const GpuLimits&, Precision)> fixed_config(Config config) {
  return [config = std::move(config)](const GpuLimits&, Precision) { return config; };
}

// A grid of x by y blocks. gridDim.y is at most 65535: a problem that needs more is refused with
// std::invalid_argument (larger tiles take it).
Dim3 grid_2d(unsigned x, unsigned y);

// The usual launch: one block per tile_m x tile_n tile of C (x across N, y down M), a
// one-dimensional block of the space's `threads`, and with `dynamic_shared_memory` the space's
// `shared_bytes` as dynamic shared memory.
Launch tiled_launch(const SearchSpace& space, const Config& config, const Problem& problem,
                    bool dynamic_shared_memory);

// The launch of a specification: its own, or the usual one.
Launch launch_of(const CudaKernelSpec& spec, const Config& config, const Problem& problem, const GpuLimits& gpu);

// The value of a named value of `space` for a configuration it accepts: what a launch reads from
// the specification instead of restating its formula (threads per block, shared bytes).
inline std::int64_t derived(const SearchSpace& space, const std::string& name, const Config& config) {
  const std::optional<ParamValue> value = space.value_of(name, config);
  if (!value) throw std::logic_error("the space has no value named " + name);
  return *value;
}

}  // namespace gemmlab::cuda
