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

#include "cuda_kernel.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab::cuda {
namespace {

constexpr std::int64_t hopper_bk = 64;  // k per stage: one 128-byte swizzle row of 16-bit elements

// Dynamic shared memory of a block: STAGES slices of A (BM x 64) and B (64 x BN) of 2-byte elements,
// `barriers_per_stage` 8-byte mbarriers per stage, and 1 KiB of slack for aligning the tiles to the
// 1 KiB period of the 128-byte swizzle.
std::int64_t hopper_shared_bytes(const Config& c, std::int64_t barriers_per_stage) {
  const std::int64_t stages = c.at("STAGES");
  return 1024 + stages * (c.at("BM") + c.at("BN")) * hopper_bk * 2 + stages * barriers_per_stage * 8;
}

SearchSpace hopper_space(const GpuLimits& gpu, std::int64_t barriers_per_stage, const std::string& bm_help) {
  const std::int64_t limit = gpu.shared_bytes_per_block_optin;
  SearchSpace s;
  s.add("BM", {64, 128}, bm_help)
      .add("BN", {64, 128, 192, 256},
           "columns of the C tile: the N of each wgmma, B loaded in 64-column boxes")
      .add("STAGES", int_range(2, 5), "depth of the TMA pipeline: slices of 64 (k) of A and B in flight");
  s.constrain("1024 + STAGES*(BM+BN)*128 + " + std::to_string(8 * barriers_per_stage) +
                  "*STAGES <= shared memory per block (" + std::to_string(limit) + " B)",
              {"BM", "BN", "STAGES"},
              [=](const Config& c) { return hopper_shared_bytes(c, barriers_per_stage) <= limit; });
  return s;
}

// BM=128, BN=256, STAGES=4 (192 KiB of tiles), shrunk where the device has less shared memory.
Config hopper_default(const SearchSpace& s) {
  Config c{{"BM", 128}, {"BN", 256}, {"STAGES", 4}};
  while (!s.is_valid(c) && c["STAGES"] > 2) --c["STAGES"];
  while (!s.is_valid(c) && c["BN"] > 64) c["BN"] -= 64;
  return c;
}

TensorMapBoxes hopper_boxes(const Config& c) {
  TensorMapBoxes t;
  t.a_rows = static_cast<unsigned>(c.at("BM"));
  t.a_cols = static_cast<unsigned>(hopper_bk);
  t.b_rows = static_cast<unsigned>(hopper_bk);
  t.b_cols = 64;  // a 128-byte swizzled box is at most 128 bytes wide; BN/64 boxes per stage
  t.swizzle_128b = true;
  return t;
}

const char* const bm_help_11 = "rows of the C tile: one warpgroup (128 threads) per 64 rows";
const char* const bm_help_12 = "rows of the C tile: one consumer warpgroup per 64 rows, plus the producer";

Launch launch_wgmma_tma(const Config& c, const Problem& p, const GpuLimits&) {
  Launch l;
  l.grid = {ceil_div(p.n, c.at("BN")), ceil_div(p.m, c.at("BM")), 1};
  l.block = {static_cast<unsigned>(c.at("BM") / 64 * 128), 1, 1};
  l.shared_bytes = static_cast<std::size_t>(hopper_shared_bytes(c, 1));
  return l;
}

// Persistent: one block per SM (or per tile, when there are fewer tiles than SMs).
Launch launch_warp_specialized(const Config& c, const Problem& p, const GpuLimits& gpu) {
  const std::int64_t tiles = std::int64_t{ceil_div(p.m, c.at("BM"))} * ceil_div(p.n, c.at("BN"));
  const std::int64_t blocks = std::max<std::int64_t>(1, std::min<std::int64_t>(tiles, gpu.multiprocessors));
  Launch l;
  l.grid = {static_cast<unsigned>(blocks), 1, 1};
  l.block = {static_cast<unsigned>((c.at("BM") / 64 + 1) * 128), 1, 1};
  l.shared_bytes = static_cast<std::size_t>(hopper_shared_bytes(c, 2));
  return l;
}

std::unique_ptr<Kernel> make_wgmma_tma() {
  return make_cuda_kernel({
      .name = "11_wgmma_tma",
      .summary = "Hopper: TMA copies 128-byte swizzled tiles through an mbarrier pipeline, warpgroups "
                 "multiply them from shared memory with wgmma",
      .precisions = {Precision::fp16, Precision::bf16},
      .min_compute_capability = 90,
      .arch_specific = true,
      .space = [](const GpuLimits& gpu, Precision) { return hopper_space(gpu, 1, bm_help_11); },
      .default_config = [](const GpuLimits& gpu,
                           Precision) { return hopper_default(hopper_space(gpu, 1, bm_help_11)); },
      .launch = launch_wgmma_tma,
      .tensor_maps = hopper_boxes,
  });
}

std::unique_ptr<Kernel> make_warp_specialized() {
  return make_cuda_kernel({
      .name = "12_warp_specialized",
      .summary = "warp specialisation: a producer warpgroup issues TMA, consumer warpgroups run wgmma, "
                 "full/empty mbarriers, setmaxnreg, persistent grid of one block per SM",
      .precisions = {Precision::fp16, Precision::bf16},
      .min_compute_capability = 90,
      .arch_specific = true,
      .space = [](const GpuLimits& gpu, Precision) { return hopper_space(gpu, 2, bm_help_12); },
      .default_config = [](const GpuLimits& gpu,
                           Precision) { return hopper_default(hopper_space(gpu, 2, bm_help_12)); },
      .launch = launch_warp_specialized,
      .tensor_maps = hopper_boxes,
  });
}

}  // namespace

void register_hopper_kernels(Registry& r) {
  r.add_kernel(make_wgmma_tma());
  r.add_kernel(make_warp_specialized());
}

}  // namespace gemmlab::cuda
