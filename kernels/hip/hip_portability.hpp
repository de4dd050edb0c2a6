// The one header the CUDA curriculum's SIMT kernels (kernels/cuda/01..07) need to compile as HIP
// for AMD GPUs: HIP spells the CUDA built-ins they use the same way (threadIdx, blockIdx,
// __syncthreads, __shared__, __launch_bounds__, extern "C" __global__), so the kernel bodies are
// shared, not copied. What differs on AMD is a matter of parameters and constraints, not code
// (kernels/hip/hip_kernel.cpp evaluates each CUDA specification on the AMD target's limits):
//   - a wave has 64 lanes on CDNA (gfx90a, gfx94x) and 32 on RDNA (gfx11): a constraint keeps
//     work-groups to whole waves;
//   - LDS (shared memory) is 64 KiB per work-group: the shared-memory constraints' limit;
//   - registers: the register file a work-group's waves share, and on gfx1100 the 128 VGPRs per
//     lane hipcc 5.2 gives, limit the register tiles;
//   - there is no cp.async: 08_cp_async_pipeline stays CUDA-only.
// Used as `hipcc -include hip_portability.hpp -x hip kernels/cuda/0N_*.cu`.
#pragma once

#include <hip/hip_runtime.h>
