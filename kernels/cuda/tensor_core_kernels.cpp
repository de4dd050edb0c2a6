// The tensor-core steps of the CUDA curriculum: 09_wmma and 10_mma_sync (their device code is
// kernels/cuda/09_wmma.cu and kernels/cuda/10_mma_sync.cu; each opens with the idea it adds).
// register_tensor_core_kernels is declared in cuda_kernels.hpp:
//   namespace gemmlab::cuda { void register_tensor_core_kernels(Registry& r); }
#include <algorithm>
#include <string>

#include "cuda_kernel.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab::cuda {
void register_tensor_core_kernels(Registry& r);

namespace {

std::int64_t threads_of(const Config& c) { return 32 * c.at("WARPS_M") * c.at("WARPS_N"); }

// The constraints both kernels share: whole warp tiles, threads per block, and accumulators that
// fit in registers. Each thread keeps BM*BN/threads fp32 accumulators for the whole K loop; about
// 64 more registers hold fragments of A and B, addresses and loop state. With
// __launch_bounds__(threads) the compiler gets registers_per_block/threads registers per thread (at
// most 255), and spills beyond that.
void add_common_constraints(SearchSpace& s, const GpuLimits& gpu, const std::string& n_reason) {
  s.constrain("BM % (16*WARPS_M) == 0 (whole 16-row tiles per warp)", {"BM", "WARPS_M"},
              [](const Config& c) { return c.at("BM") % (16 * c.at("WARPS_M")) == 0; });
  s.constrain("BN % (16*WARPS_N) == 0 (" + n_reason + ")", {"BN", "WARPS_N"},
              [](const Config& c) { return c.at("BN") % (16 * c.at("WARPS_N")) == 0; });
  const std::int64_t max_threads = gpu.max_threads_per_block;
  s.constrain("32*WARPS_M*WARPS_N <= " + std::to_string(max_threads) + " (max threads per block)",
              {"WARPS_M", "WARPS_N"}, [=](const Config& c) { return threads_of(c) <= max_threads; });
  const std::int64_t regs_per_block = gpu.registers_per_block;
  s.constrain("BM*BN/(32*WARPS_M*WARPS_N) + 64 <= min(255, " + std::to_string(regs_per_block) +
                  "/(32*WARPS_M*WARPS_N)) (accumulators and fragments in registers)",
              {"BM", "BN", "WARPS_M", "WARPS_N"}, [=](const Config& c) {
                const std::int64_t threads = threads_of(c);
                const std::int64_t per_thread = std::min<std::int64_t>(255, regs_per_block / threads);
                return c.at("BM") * c.at("BN") / threads + 64 <= per_thread;
              });
}

// Dynamic shared memory a launch may use: up to the opt-in limit (the runtime opts in above 48 KiB).
std::int64_t shared_limit(const GpuLimits& gpu) {
  return gpu.shared_bytes_per_block_optin > 0 ? gpu.shared_bytes_per_block_optin : gpu.shared_bytes_per_block;
}

// 09_wmma: STAGES padded tiles of A (BM x (BK+8)) and B (BK x (BN+8)), and a 16x16 fp32 scratch
// per warp for the epilogue.
std::int64_t wmma_shared_bytes(const Config& c, std::int64_t elem) {
  const std::int64_t bm = c.at("BM"), bn = c.at("BN"), bk = c.at("BK");
  return c.at("STAGES") * (bm * (bk + 8) + bk * (bn + 8)) * elem +
         16 * 16 * 4 * c.at("WARPS_M") * c.at("WARPS_N");
}

// 10_mma_sync: STAGES swizzled (unpadded) tiles of A (BM x BK) and B (BK x BN).
std::int64_t mma_sync_shared_bytes(const Config& c, std::int64_t elem) {
  const std::int64_t bk = c.at("BK");
  return c.at("STAGES") * (c.at("BM") * bk + bk * c.at("BN")) * elem;
}

Launch grid_over_c(const Config& c, const Problem& p) {
  Launch l;
  l.grid = {ceil_div(p.n, c.at("BN")), ceil_div(p.m, c.at("BM")), 1};
  l.block = {static_cast<unsigned>(threads_of(c)), 1, 1};
  return l;
}

}  // namespace

void register_tensor_core_kernels(Registry& r) {
  r.add_kernel(make_cuda_kernel({
      .name = "09_wmma",
      .summary = "tensor cores through the WMMA API: each warp multiplies 16x16x16 fragments",
      .precisions = {Precision::fp16, Precision::bf16},
      .min_compute_capability = 80,  // bf16 fragments and cp.async (fp16 WMMA alone: sm_70)
      .space =
          [](const GpuLimits& gpu, Precision precision) {
            const auto elem = static_cast<std::int64_t>(element_bytes(precision));
            const std::int64_t smem = shared_limit(gpu);
            SearchSpace s;
            s.add("BM", {32, 64, 128, 256}, "rows of the block tile of C")
                .add("BN", {32, 64, 128, 256}, "columns of the block tile of C")
                .add("BK", {16, 32, 64}, "depth of the A and B tiles per pipeline stage")
                .add("WARPS_M", {1, 2, 4, 8}, "warps along M; each owns BM/WARPS_M rows of the block tile")
                .add("WARPS_N", {1, 2, 4, 8}, "warps along N; each owns BN/WARPS_N columns of the block tile")
                .add("STAGES", {2, 3, 4},
                     "shared-memory buffers in the cp.async pipeline (tiles in flight + 1)");
            add_common_constraints(s, gpu, "whole 16-column fragments per warp");
            s.constrain("STAGES*(BM*(BK+8) + BK*(BN+8))*" + std::to_string(elem) +
                            " + 1024*WARPS_M*WARPS_N <= " + std::to_string(smem) +
                            " (shared memory per block, opt-in: padded tiles, epilogue scratch)",
                        {"BM", "BN", "BK", "WARPS_M", "WARPS_N", "STAGES"},
                        [=](const Config& c) { return wmma_shared_bytes(c, elem) <= smem; });
            return s;
          },
      .default_config =
          [](const GpuLimits&, Precision) {
            // 64x32 warp tiles (8 warps), 3 stages: 64 KiB of shared memory, two blocks per SM.
            return Config{{"BM", 128},    {"BN", 128},    {"BK", 32},
                          {"WARPS_M", 2}, {"WARPS_N", 4}, {"STAGES", 3}};
          },
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            Launch l = grid_over_c(c, p);
            l.shared_bytes = static_cast<std::size_t>(
                wmma_shared_bytes(c, static_cast<std::int64_t>(element_bytes(p.precision))));
            return l;
          },
  }));

  r.add_kernel(make_cuda_kernel({
      .name = "10_mma_sync",
      .summary =
          "mma.sync m16n8k16 in inline PTX, ldmatrix from XOR-swizzled shared memory, cp.async pipeline",
      .precisions = {Precision::fp16, Precision::bf16},
      .min_compute_capability = 80,  // cp.async, bf16 mma.sync
      .space =
          [](const GpuLimits& gpu, Precision precision) {
            const auto elem = static_cast<std::int64_t>(element_bytes(precision));
            const std::int64_t smem = shared_limit(gpu);
            SearchSpace s;
            s.add("BM", {32, 64, 128, 256}, "rows of the block tile of C")
                .add("BN", {32, 64, 128, 256}, "columns of the block tile of C")
                .add("BK", {16, 32, 64}, "depth of the A and B tiles per pipeline stage")
                .add("WARPS_M", {1, 2, 4, 8}, "warps along M; each owns BM/WARPS_M rows of the block tile")
                .add("WARPS_N", {1, 2, 4, 8}, "warps along N; each owns BN/WARPS_N columns of the block tile")
                .add("STAGES", {2, 3, 4},
                     "shared-memory buffers in the cp.async pipeline (tiles in flight + 1)");
            add_common_constraints(s, gpu, "ldmatrix.x4.trans loads two 8-column B fragments");
            s.constrain("STAGES*(BM*BK + BK*BN)*" + std::to_string(elem) + " <= " + std::to_string(smem) +
                            " (shared memory per block, opt-in)",
                        {"BM", "BN", "BK", "STAGES"},
                        [=](const Config& c) { return mma_sync_shared_bytes(c, elem) <= smem; });
            return s;
          },
      .default_config =
          [](const GpuLimits&, Precision) {
            // 64x64 warp tiles (4 warps); 3 stages of 16 KiB fit the 48 KiB that needs no opt-in.
            return Config{{"BM", 128},    {"BN", 128},    {"BK", 32},
                          {"WARPS_M", 2}, {"WARPS_N", 2}, {"STAGES", 3}};
          },
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            Launch l = grid_over_c(c, p);
            l.shared_bytes = static_cast<std::size_t>(
                mma_sync_shared_bytes(c, static_cast<std::int64_t>(element_bytes(p.precision))));
            return l;
          },
  }));
}

}  // namespace gemmlab::cuda
