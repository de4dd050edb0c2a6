// The HIP curriculum: the CUDA curriculum's SIMT steps on AMD GPUs (one source: their device code
// and specifications are CUDA's, evaluated on the AMD target's limits), and the AMD-only
// matrix-core steps 09_mfma (CDNA) and 10_wmma (RDNA3), each opening with its idea and layout.
#include <algorithm>
#include <string>

#include "../cuda/cuda_kernels.hpp"
#include "hip_kernel.hpp"

namespace gemmlab::hip {
namespace {

using cuda::ceil_div;
using cuda::CudaKernelSpec;
using cuda::Launch;

// The matrix-core kernels' shape: a work-group of WAVES_M x WAVES_N waves, each owning
// BLOCKS_M x BLOCKS_N blocks of `block` x `block` elements of C.
struct MatrixCoreShape {
  int block;  // 32 (v_mfma_f32_32x32x8*), 16 (v_wmma_f32_16x16x16_*)
  int wave;   // lanes
};

std::int64_t waves_of(const Config& c) { return c.at("WAVES_M") * c.at("WAVES_N"); }

// Registers a lane of a matrix-core kernel needs, estimated from hipcc 5.2's listings:
//   09_mfma: 32 * BLOCKS_M * BLOCKS_N + 8 (16 accumulators per block, the unrolled operand loads
//   and their offsets; measured 40, 136, 264 and 504 VGPRs at 1, 4, 8 and 16 blocks);
//   10_wmma: 16 * BLOCKS_M * BLOCKS_N + 12 * (BLOCKS_M + BLOCKS_N) + 8 (measured 47, 75, 128 at
//   1, 2, 4 blocks; 8 blocks spill).
std::int64_t estimated_vgprs(const MatrixCoreShape& shape, const Config& c) {
  const std::int64_t bm = c.at("BLOCKS_M"), bn = c.at("BLOCKS_N");
  return shape.block == 32 ? 32 * bm * bn + 8 : 16 * bm * bn + 12 * (bm + bn) + 8;
}

// What a lane may use: CDNA's 512 registers per lane (VGPRs and AGPRs) of a SIMD shared by the
// work-group's waves on that SIMD (4 SIMDs per CU); on RDNA3 what the compiler gives a lane.
std::int64_t vgpr_budget(const MatrixCoreShape& shape, const GpuLimits& gpu, const Config& c) {
  if (shape.wave == 32) return gpu.max_registers_per_thread;
  const std::int64_t simds = 4, per_simd = gpu.registers_per_sm / simds / shape.wave;
  return std::min<std::int64_t>(gpu.max_registers_per_thread, per_simd / ((waves_of(c) + simds - 1) / simds));
}

CudaKernelSpec matrix_core_spec(std::string name, std::string summary, MatrixCoreShape shape) {
  const std::string block = std::to_string(shape.block), wave = std::to_string(shape.wave);
  const std::string registers =
      shape.block == 32 ? "32*BLOCKS_M*BLOCKS_N + 8" : "16*BLOCKS_M*BLOCKS_N + 12*(BLOCKS_M+BLOCKS_N) + 8";
  return {
      .name = std::move(name),
      .summary = std::move(summary),
      .precisions = {Precision::fp16, Precision::bf16},
      .space =
          [=](const GpuLimits& gpu, Precision) {
            SearchSpace s;
            s.add("WAVES_M", {1, 2, 4}, "waves of the work-group along M")
                .add("WAVES_N", {1, 2, 4}, "waves of the work-group along N")
                .add("BLOCKS_M", {1, 2, 4}, block + "-row blocks of C per wave")
                .add("BLOCKS_N", {1, 2, 4}, block + "-column blocks of C per wave");
            const std::int64_t max_threads = gpu.max_threads_per_block;
            s.constrain(wave + "*WAVES_M*WAVES_N <= " + std::to_string(max_threads) + " (work-items per work-group)",
                        {"WAVES_M", "WAVES_N"},
                        [=](const Config& c) { return shape.wave * waves_of(c) <= max_threads; });
            const std::string budget =
                shape.wave == 32 ? std::to_string(gpu.max_registers_per_thread) + " (estimated VGPRs; what the compiler gives a lane)"
                                 : "512 / ceil(WAVES_M*WAVES_N / 4) (estimated VGPRs; a SIMD's 512 registers per lane "
                                   "are shared by the work-group's waves on it)";
            s.constrain(registers + " <= " + budget, {"WAVES_M", "WAVES_N", "BLOCKS_M", "BLOCKS_N"},
                        [=](const Config& c) { return estimated_vgprs(shape, c) <= vgpr_budget(shape, gpu, c); });
            return s;
          },
      .default_config =
          [](const GpuLimits&, Precision) {
            return Config{{"WAVES_M", 2}, {"WAVES_N", 2}, {"BLOCKS_M", 2}, {"BLOCKS_N", 2}};
          },
      .launch =
          [=](const Config& c, const Problem& p, const GpuLimits&) {
            const std::int64_t tile_m = shape.block * c.at("WAVES_M") * c.at("BLOCKS_M");
            const std::int64_t tile_n = shape.block * c.at("WAVES_N") * c.at("BLOCKS_N");
            return Launch{.grid = {ceil_div(p.n, tile_n), ceil_div(p.m, tile_m), 1},
                          .block = {static_cast<unsigned>(shape.wave * waves_of(c)), 1, 1}};
          },
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
