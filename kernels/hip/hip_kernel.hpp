// What every HIP kernel shares, so that a step is its device code plus one specification.
//
// The device code contract is CUDA's (kernels/cuda/cuda_kernel.hpp): an extern "C" __global__
// gemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) over row-major matrices, any M, N, K >= 1,
// beta == 0 meaning C is not read, the configuration as -D<PARAM>=<value>. Two kinds of source:
//   - the CUDA curriculum's SIMT steps, kernels/cuda/<name>.cu, compiled unchanged with
//     -include hip_portability.hpp and -DTA/-DTC (float or double), with the CUDA specification
//     (space, default, launch) evaluated on the AMD target's limits;
//   - AMD-only matrix-core steps, kernels/hip/<name>.hip: fp16 or bf16 A and B (-DBF16=0/1; bf16
//     as bit patterns), fp32 alpha, beta and C.
// Kernels are compiled by hipcc for the device's target when they run, and without a device for
// each configured target (compile_targets): `gemmlab verify --backend hip --compile-only` and
// `gemmlab kernels --backend hip` read the listings (registers, LDS, scratch, instructions).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "../cuda/cuda_kernel.hpp"
#include "embedded_source.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab::hip {

struct HipKernelSpec {
  // Name, summary, precisions, space, default configuration and launch shape (the space and launch
  // functions receive the AMD target's limits; min_compute_capability and the TMA fields are
  // CUDA's and unused here).
  cuda::CudaKernelSpec kernel;
  std::string source;  // "cuda/05_2d_register_tiled.cu" or "hip/09_mfma.hip"
  // A DeviceInfo feature the target needs ("mfma": CDNA, "wmma": RDNA3); empty: any target.
  std::string required_feature = {};
  // The prefix of an instruction its listing must contain ("v_mfma"): a matrix-core kernel that the
  // compiler lowered to something else is a failed compilation.
  std::string required_instruction = {};
};

std::unique_ptr<Kernel> make_hip_kernel(HipKernelSpec spec);

// The HIP kernel files embedded in the program by file name (hip_sources.cpp): the CUDA SIMT
// steps, the AMD-only steps and the headers they include.
const std::map<std::string_view, EmbeddedSource>& embedded_files();

// 01..07 (the CUDA SIMT steps), 09_mfma and 10_wmma (hip_kernels.cpp).
void register_kernels(Registry& r);

}  // namespace gemmlab::hip
