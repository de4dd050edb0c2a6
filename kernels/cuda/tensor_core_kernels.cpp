// The tensor-core steps of the CUDA curriculum: 09_wmma and 10_mma_sync (their device code is
// kernels/cuda/09_wmma.cu and kernels/cuda/10_mma_sync.cu; each opens with the idea it adds).
// register_tensor_core_kernels is declared in cuda_kernels.hpp:
//   namespace gemmlab::cuda { void register_tensor_core_kernels(Registry& r); }
#include <string>

#include "cuda_kernel.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab::cuda {
void register_tensor_core_kernels(Registry& r);

namespace {

// What both kernels share: a BM x BN x BK block tile, WARPS_M x WARPS_N warps and a STAGES-deep
// cp.async pipeline; whole warp tiles, threads per block, and accumulators that fit in
// registers. Each thread keeps BM*BN/threads fp32 accumulators for the whole K loop; about 64
// more registers hold fragments of A and B, addresses and loop state. With
// __launch_bounds__(threads) the compiler gets registers_per_block/threads registers per thread
// (at most max_registers_per_thread), and spills beyond that. The caller adds its shared memory.
SearchSpace tensor_core_space(const GpuLimits& gpu, Precision precision, const std::string& n_reason) {
  SearchSpace s;
  s.add("BM", {32, 64, 128, 256}, "rows of the block tile of C")
      .add("BN", {32, 64, 128, 256}, "columns of the block tile of C")
      .add("BK", {16, 32, 64}, "depth of the A and B tiles per pipeline stage")
      .add("WARPS_M", {1, 2, 4, 8}, "warps along M; each owns BM/WARPS_M rows of the block tile")
      .add("WARPS_N", {1, 2, 4, 8}, "warps along N; each owns BN/WARPS_N columns of the block tile")
      .add("STAGES", {2, 3, 4}, "shared-memory buffers in the cp.async pipeline (tiles in flight + 1)");
  let_limits(s, gpu,
             {Limit::max_threads_per_block, Limit::shared_bytes_optin, Limit::registers_per_block,
              Limit::max_registers_per_thread});
  s.let("element_bytes", static_cast<ParamValue>(element_bytes(precision)), "bytes per element of A and B");
  s.derive("threads", "32*WARPS_M*WARPS_N", "threads per block: one warp per warp tile")
      .derive("tile_m", "BM", "rows of C per block")
      .derive("tile_n", "BN", "columns of C per block")
      .derive("registers", "BM*BN/threads + 64",
              "registers a thread needs, estimated: its accumulators, and 64 for fragments, addresses, loop state");
  s.require("BM % (16*WARPS_M) == 0", "whole 16-row tiles per warp")
      .require("BN % (16*WARPS_N) == 0", n_reason)
      .require("threads <= max_threads_per_block", "threads per block")
      .require("registers <= max_registers_per_thread", "registers per thread, estimated")
      .require("registers <= registers_per_block/threads",
               "registers per thread that __launch_bounds__ leaves, estimated");
  return s;
}

// 09_wmma: STAGES padded tiles of A (BM x (BK+8)) and B (BK x (BN+8)), and a 16x16 fp32 scratch
// per warp for the epilogue.
SearchSpace wmma_space(const GpuLimits& gpu, Precision precision) {
  SearchSpace s = tensor_core_space(gpu, precision, "whole 16-column fragments per warp");
  s.derive("shared_bytes", "STAGES*(BM*(BK+8) + BK*(BN+8))*element_bytes + 16*16*4*WARPS_M*WARPS_N",
           "padded tiles of A and B per stage, and a 16x16 fp32 epilogue scratch per warp");
  s.require("shared_bytes <= shared_bytes_optin", "shared memory per block, opted in");
  return s;
}

// 10_mma_sync: STAGES swizzled (unpadded) tiles of A (BM x BK) and B (BK x BN).
SearchSpace mma_sync_space(const GpuLimits& gpu, Precision precision) {
  SearchSpace s = tensor_core_space(gpu, precision, "ldmatrix.x4.trans loads two 8-column B fragments");
  s.derive("shared_bytes", "STAGES*(BM*BK + BK*BN)*element_bytes", "swizzled tiles of A and B per stage");
  s.require("shared_bytes <= shared_bytes_optin", "shared memory per block, opted in");
  return s;
}

}  // namespace

void register_tensor_core_kernels(Registry& r) {
  r.add_kernel(make_cuda_kernel({
      .name = "09_wmma",
      .summary = "tensor cores through the WMMA API: each warp multiplies 16x16x16 fragments",
      .precisions = {Precision::fp16, Precision::bf16},
      .min_compute_capability = 80,  // bf16 fragments and cp.async (fp16 WMMA alone: sm_70)
      .space = wmma_space,
      // 64x32 warp tiles (8 warps), 3 stages: 64 KiB of shared memory, two blocks per SM.
      .preferred_config = fixed_config({{"BM", 128}, {"BN", 128}, {"BK", 32}, {"WARPS_M", 2}, {"WARPS_N", 4}, {"STAGES", 3}}),
      .dynamic_shared_memory = true,
  }));

  r.add_kernel(make_cuda_kernel({
      .name = "10_mma_sync",
      .summary =
          "mma.sync m16n8k16 in inline PTX, ldmatrix from XOR-swizzled shared memory, cp.async pipeline",
      .precisions = {Precision::fp16, Precision::bf16},
      .min_compute_capability = 80,  // cp.async, bf16 mma.sync
      .space = mma_sync_space,
      // 64x64 warp tiles (4 warps); 3 stages of 16 KiB fit the 48 KiB that needs no opt-in.
      .preferred_config = fixed_config({{"BM", 128}, {"BN", 128}, {"BK", 32}, {"WARPS_M", 2}, {"WARPS_N", 2}, {"STAGES", 3}}),
      .dynamic_shared_memory = true,
  }));
}

}  // namespace gemmlab::cuda
