// The CUDA kernel curriculum: each group of steps registers its kernels (the device code is
// kernels/cuda/<name>.cu; the specification of each — parameters, constraints, default, launch
// shape — is host code in the group's .cpp file), and register_kernels registers them all.
#pragma once

#include "gemmlab/registry.hpp"

namespace gemmlab::cuda {

void register_simt_kernels(Registry& r);         // 01_naive ... 08_cp_async_pipeline (simt_kernels.cpp)
void register_tensor_core_kernels(Registry& r);  // 09_wmma, 10_mma_sync (tensor_core_kernels.cpp)
void register_hopper_kernels(Registry& r);       // 11_wgmma_tma, 12_warp_specialized (hopper_kernels.cpp)

inline void register_kernels(Registry& r) {
  register_simt_kernels(r);
  register_tensor_core_kernels(r);
  register_hopper_kernels(r);
}

}  // namespace gemmlab::cuda
