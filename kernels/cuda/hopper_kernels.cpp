// Specifications of the two Hopper steps of the CUDA curriculum (sm_90a only):
//   11_wgmma_tma         TMA tiles in 128-byte swizzled shared memory, an mbarrier pipeline, wgmma;
//   12_warp_specialized  a producer warpgroup and consumer warpgroups, full/empty mbarriers, a
//                        persistent grid of one block per SM.
// Both read A and B only through TMA tensor maps (boxes BM x 64 over A, 64 x 64 over B, 128-byte
// swizzle). TMA needs rows that start on 16 bytes (lda, ldb multiples of 8 elements): the runtime
// copies an operand whose rows do not into a buffer whose rows do (cuda_kernel.cpp), so any shape runs.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "cuda_kernel.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab::cuda {
namespace {

constexpr std::int64_t hopper_bk = 64;  // k per stage: one 128-byte swizzle row of 16-bit elements

// Both kernels' space: `barriers_per_stage` 8-byte mbarriers per stage (11: full; 12: full and
// empty) and `threads` per block (11: a warpgroup per 64 rows; 12: and the producer's).
SearchSpace hopper_space(const GpuLimits& gpu, Precision precision, std::int64_t barriers_per_stage,
                         const std::string& threads, const std::string& bm_help) {
  SearchSpace s;
  s.add("BM", {64, 128}, bm_help)
      .add("BN", {64, 128, 192, 256}, "columns of the C tile: the N of each wgmma, B loaded in 64-column boxes")
      .add("STAGES", int_range(2, 5), "depth of the TMA pipeline: slices of 64 (k) of A and B in flight");
  let_limits(s, gpu, {Limit::shared_bytes_optin});
  s.let("BK", hopper_bk, "k per stage: one 128-byte swizzle row of 16-bit elements")
      .let("element_bytes", static_cast<ParamValue>(element_bytes(precision)), "bytes per element of A and B")
      .let("barriers_per_stage", barriers_per_stage, "8-byte mbarriers per stage");
  s.derive("threads", threads, "threads per block: 128 per warpgroup")
      .derive("tile_m", "BM", "rows of C per block")
      .derive("tile_n", "BN", "columns of C per block")
      .derive("shared_bytes", "1024 + STAGES*(BM+BN)*BK*element_bytes + STAGES*barriers_per_stage*8",
              "STAGES slices of A (BM x BK) and B (BK x BN), their mbarriers, and 1 KiB for aligning the "
              "tiles to the swizzle's 1 KiB period");
  s.require("shared_bytes <= shared_bytes_optin", "shared memory per block, opted in");
  return s;
}

SearchSpace wgmma_tma_space(const GpuLimits& gpu, Precision precision) {
  return hopper_space(gpu, precision, 1, "BM/64*128", "rows of the C tile: one warpgroup (128 threads) per 64 rows");
}
SearchSpace warp_specialized_space(const GpuLimits& gpu, Precision precision) {
  return hopper_space(gpu, precision, 2, "(BM/64 + 1)*128",
                      "rows of the C tile: one consumer warpgroup per 64 rows, plus the producer");
}

// BM=128, BN=256, STAGES=4 (192 KiB of tiles); where a device has less shared memory, the
// kernel's default is the nearest configuration that fits (Kernel::default_config).
Config hopper_preferred(const GpuLimits&, Precision) { return Config{{"BM", 128}, {"BN", 256}, {"STAGES", 4}}; }

TensorMapBoxes hopper_boxes(const Config& c) {
  TensorMapBoxes t;
  t.a_rows = static_cast<unsigned>(c.at("BM"));
  t.a_cols = static_cast<unsigned>(hopper_bk);
  t.b_rows = static_cast<unsigned>(hopper_bk);
  t.b_cols = 64;  // a 128-byte swizzled box is at most 128 bytes wide; BN/64 boxes per stage
  t.swizzle_128b = true;
  return t;
}

// Persistent: one block per SM (or per tile, when there are fewer tiles than SMs).
Launch launch_warp_specialized(const Config& c, const Problem& p, const GpuLimits& gpu) {
  const std::int64_t tiles = std::int64_t{ceil_div(p.m, c.at("BM"))} * ceil_div(p.n, c.at("BN"));
  const std::int64_t blocks = std::max<std::int64_t>(1, std::min<std::int64_t>(tiles, gpu.multiprocessors));
  const SearchSpace s = warp_specialized_space(gpu, p.precision);
  Launch l;
  l.grid = {static_cast<unsigned>(blocks), 1, 1};
  l.block = {static_cast<unsigned>(derived(s, "threads", c)), 1, 1};
  l.shared_bytes = static_cast<std::size_t>(derived(s, "shared_bytes", c));
  return l;
}

// What 11 and 12 share: fp16 and bf16 on sm_90a only, the default, the TMA boxes, and the
// pipeline's stages in dynamic shared memory.
CudaKernelSpec hopper_spec(std::string name, std::string summary, decltype(CudaKernelSpec::space) space) {
  return {
      .name = std::move(name),
      .summary = std::move(summary),
      .precisions = {Precision::fp16, Precision::bf16},
      .min_compute_capability = 90,
      .arch_specific = true,
      .space = std::move(space),
      .preferred_config = hopper_preferred,
      .dynamic_shared_memory = true,
      .tensor_maps = hopper_boxes,
  };
}

}  // namespace

void register_hopper_kernels(Registry& r) {
  r.add_kernel(make_cuda_kernel(hopper_spec("11_wgmma_tma",
                                            "Hopper: TMA copies 128-byte swizzled tiles through an mbarrier pipeline, "
                                            "warpgroups multiply them from shared memory with wgmma",
                                            wgmma_tma_space)));
  CudaKernelSpec warp_specialized =
      hopper_spec("12_warp_specialized",
                  "warp specialisation: a producer warpgroup issues TMA, consumer warpgroups run wgmma, full/empty "
                  "mbarriers, setmaxnreg, persistent grid of one block per SM",
                  warp_specialized_space);
  warp_specialized.launch = launch_warp_specialized;
  r.add_kernel(make_cuda_kernel(std::move(warp_specialized)));
}

}  // namespace gemmlab::cuda
