// The CUDA kernel curriculum: each group of steps registers its kernels (the device code is
// kernels/cuda/<name>.cu; the specification of each — parameters, constraints, default, launch
// shape — is host code in the group's .cpp file), and register_kernels registers them all.
#pragma once

#include <vector>

#include "cuda_kernel.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab::cuda {

// 01_naive ... 08_cp_async_pipeline (simt_kernels.cpp): specifications only, so that the HIP
// backend compiles the same device code with the same spaces for AMD GPUs.
std::vector<CudaKernelSpec> simt_kernel_specs();
void register_tensor_core_kernels(Registry& r);  // 09_wmma, 10_mma_sync (tensor_core_kernels.cpp)
void register_hopper_kernels(Registry& r);       // 11_wgmma_tma, 12_warp_specialized (hopper_kernels.cpp)

inline void register_kernels(Registry& r) {
  for (CudaKernelSpec& spec : simt_kernel_specs()) r.add_kernel(make_cuda_kernel(std::move(spec)));
  register_tensor_core_kernels(r);
  register_hopper_kernels(r);
}

}  // namespace gemmlab::cuda
