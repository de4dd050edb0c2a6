// The one header the CUDA curriculum's SIMT kernels (kernels/cuda/01..07) need to compile as HIP
// for AMD GPUs: HIP spells the CUDA built-ins they use the same way (threadIdx, blockIdx,
// __syncthreads, __shared__, __launch_bounds__, extern "C" __global__), so the kernel bodies are
// shared, not copied. What differs on AMD is a matter of parameters and constraints, not code:
//   - a wave has 64 lanes on CDNA (gfx90a, gfx94x) and 32 on RDNA (gfx11): the kernels' block
//     sizes are multiples of 32, and on CDNA a multiple of 64 fills whole waves;
//   - LDS (shared memory) is 64 KiB per work-group;
//   - there is no cp.async: 08_cp_async_pipeline stays CUDA-only.
// Used as `hipcc -include kernels/hip/hip_portability.hpp -x hip kernels/cuda/0N_*.cu`.
#pragma once

#include <hip/hip_runtime.h>
