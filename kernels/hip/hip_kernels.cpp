// The HIP curriculum: the CUDA curriculum's SIMT steps on AMD GPUs (one source: their device code
// and specifications are CUDA's, evaluated on the AMD target's limits), and the AMD-only
// matrix-core steps 09_mfma (CDNA) and 10_wmma (RDNA3), each opening with its idea and layout.
#include <string>
#include <utility>

#include "../cuda/cuda_kernels.hpp"
#include "hip_kernel.hpp"

namespace gemmlab::hip {
namespace {

using cuda::CudaKernelSpec;

// The matrix-core kernels' shape: a work-group of WAVES_M x WAVES_N waves, each owning
// BLOCKS_M x BLOCKS_N blocks of `block` x `block` elements of C.
struct MatrixCoreShape {
  int block;  // 32 (v_mfma_f32_32x32x8*), 16 (v_wmma_f32_16x16x16_*)
  int wave;   // lanes
};

// Registers a lane of a matrix-core kernel needs, estimated from hipcc 5.2's listings:
//   09_mfma: 32 * BLOCKS_M * BLOCKS_N + 8 (16 accumulators per block, the unrolled operand loads
//   and their offsets; measured 40, 136, 264 and 504 VGPRs at 1, 4, 8 and 16 blocks);
//   10_wmma: 16 * BLOCKS_M * BLOCKS_N + 12 * (BLOCKS_M + BLOCKS_N) + 8 (measured 47, 75, 128 at
//   1, 2, 4 blocks; 8 blocks spill).
// What a lane may use: on CDNA a SIMD's registers per lane (VGPRs and AGPRs together), shared by
// the work-group's waves on that SIMD (4 SIMDs per CU); on RDNA3 what the compiler gives a lane.
SearchSpace matrix_core_space(const GpuLimits& gpu, const MatrixCoreShape& shape) {
  SearchSpace s;
  const std::string block = std::to_string(shape.block);
  s.add("WAVES_M", {1, 2, 4}, "waves of the work-group along M")
      .add("WAVES_N", {1, 2, 4}, "waves of the work-group along N")
      .add("BLOCKS_M", {1, 2, 4}, block + "-row blocks of C per wave")
      .add("BLOCKS_N", {1, 2, 4}, block + "-column blocks of C per wave");
  cuda::let_limits(s, gpu, {cuda::Limit::max_threads_per_block, cuda::Limit::max_registers_per_thread});
  s.let("wave", shape.wave, "lanes of the waves the kernel is written for")
      .let("block", shape.block, "rows and columns of C one matrix instruction computes");
  s.derive("threads", "wave*WAVES_M*WAVES_N", "work-items per work-group")
      .derive("tile_m", "block*WAVES_M*BLOCKS_M", "rows of C per work-group")
      .derive("tile_n", "block*WAVES_N*BLOCKS_N", "columns of C per work-group")
      .derive("vgprs",
              shape.block == 32 ? "32*BLOCKS_M*BLOCKS_N + 8" : "16*BLOCKS_M*BLOCKS_N + 12*(BLOCKS_M + BLOCKS_N) + 8",
              "VGPRs a lane needs, estimated from hipcc's listings");
  s.require("threads <= max_threads_per_block", "work-items per work-group")
      .require("vgprs <= max_registers_per_thread", "VGPRs the compiler gives a lane, estimated");
  if (shape.wave == 64) {
    constexpr int simds = 4;
    s.let("simds", simds, "SIMDs of a CDNA compute unit")
        .let("registers_per_simd_lane", gpu.registers_per_sm / simds / shape.wave,
             "registers a SIMD has per lane, VGPRs and AGPRs together")
        .derive("waves_per_simd", "(WAVES_M*WAVES_N + simds - 1) / simds", "the work-group's waves on one SIMD");
    s.require("vgprs <= registers_per_simd_lane / waves_per_simd",
              "the work-group's waves on a SIMD share its registers, estimated");
  }
  return s;
}

CudaKernelSpec matrix_core_spec(std::string name, std::string summary, MatrixCoreShape shape) {
  return {
      .name = std::move(name),
      .summary = std::move(summary),
      .precisions = {Precision::fp16, Precision::bf16},
      .space = [=](const GpuLimits& gpu, Precision) { return matrix_core_space(gpu, shape); },
      .preferred_config = cuda::fixed_config({{"WAVES_M", 2}, {"WAVES_N", 2}, {"BLOCKS_M", 2}, {"BLOCKS_N", 2}}),
  };
}

}  // namespace

void register_kernels(Registry& r) {
  // The SIMT steps that use only what HIP spells the same way; 08 (cp.async) and the NVIDIA
  // tensor-core steps have no AMD counterpart in this source.
  for (CudaKernelSpec& spec : cuda::simt_kernel_specs()) {
    if (spec.min_compute_capability > 70) continue;
    const std::string source = "cuda/" + spec.name + ".cu";
    r.add_kernel(make_hip_kernel({.kernel = std::move(spec), .source = source}));
  }
  r.add_kernel(make_hip_kernel({
      .kernel = matrix_core_spec("09_mfma",
                                 "CDNA matrix cores: each wave multiplies 32x32x8 blocks with one v_mfma instruction",
                                 {.block = 32, .wave = 64}),
      .source = "hip/09_mfma.hip",
      .required_feature = "mfma",
      .required_instruction = "v_mfma",
  }));
  r.add_kernel(make_hip_kernel({
      .kernel = matrix_core_spec("10_wmma",
                                 "RDNA3 WMMA: each 32-lane wave multiplies 16x16x16 blocks with one v_wmma instruction",
                                 {.block = 16, .wave = 32}),
      .source = "hip/10_wmma.hip",
      .required_feature = "wmma",
      .required_instruction = "v_wmma",
  }));
}

}  // namespace gemmlab::hip
