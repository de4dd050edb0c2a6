// 12_warp_specialized — producer and consumer warpgroups, full/empty mbarriers, a persistent grid.
//
// Idea over 11: in 11 every warpgroup both waits for data and multiplies, and the whole block meets at
// a __syncthreads each k-step before a stage can be refilled; each block does one tile and its
// epilogue (the stores of C) leaves the tensor cores idle. Here the roles are split:
//   - warpgroup 0 is the producer: one of its threads walks the block's tiles and k-slices and issues
//     the TMA copies; it only computes addresses, so the warpgroup gives most of its registers back
//     (setmaxnreg.dec to 40 per thread);
//   - warpgroups 1..CONSUMERS are consumers: they take those registers (setmaxnreg.inc to 232) for the
//     wgmma accumulators, each multiplying 64 rows of the tile.
// Each stage has two mbarriers. "full" (1 arrival + the stage's bytes) says the copies have landed;
// "empty" (one arrival per consumer warp) says every consumer has finished reading it. The producer
// waits on empty before refilling a stage, the consumers wait on full before reading it; nobody else
// waits, so there is no block-wide barrier after the start. Phases: the n-th fill of a stage
// completes phase n of its full barrier, the n-th release phase n of its empty barrier, and a wait
// names the parity (n % 2) of the phase it needs; the producer's first pass waits on parity 1 of a
// fresh empty barrier, which counts as already completed, so it starts without waiting.
// The grid is persistent: one block per SM (its shared memory allows no second), each taking tiles
// t = blockIdx.x, blockIdx.x + gridDim.x, ... in a grouped order (8 tile rows at a time, column by
// column within the group) so that the tiles in flight at once share rows of A and columns of B in L2.
// The producer runs ahead across tile boundaries, so the next tile's first stages load while the
// consumers are still storing the previous tile's C.
// Shared memory layouts, descriptors and the accumulator layout are those of 11:
//   A stage: BM x 64, K-major, 128-byte swizzle; consumer c's descriptor for k-step kk starts at
//     stage + c*64*128 + kk*32, SBO = 1024, LBO = 16 (unused), swizzle mode 1.
//   B stage: BN/64 chunks of 64 (k) x 64 (n), N-major, 8 KiB each; descriptor for k-step kk starts at
//     stage + kk*2048, LBO = 8192 (next 64-column chunk), SBO = 1024 (next 8 rows of k), swizzle
//     mode 1, read with imm-trans-b = 1.
//   Accumulator d[4j + 2h + e] of thread t (warp w = t/32, lane l) in a consumer warpgroup is
//     C(16w + 8h + l/4, 8j + 2(l%4) + e) of its 64 x BN part of the tile.
//
// Hardware: sm_90a: TMA, mbarrier transaction counts, wgmma.mma_async, setmaxnreg (registers moved
// between warpgroups of a block), 227 KiB of shared memory per block, one block per SM.
// Parameters: BM (64 or 128: one or two consumer warpgroups), BN (64, 128, 192, 256), STAGES (2..5);
// BK = 64. Grid: min(tiles, SMs) blocks of (BM/64 + 1) * 128 threads.
// Constraints: as 11 (two mbarriers per stage here); the exact expression is in the specification
// (kernels/cuda/hopper_kernels.cpp). TMA needs A and B 16-byte aligned and lda, ldb multiples of 8
// elements (row pitch multiple of 16 B); the runtime copies an operand that is not so into a buffer
// that is, as part of the run.
// With BM = 128 the block has 384 threads, so the launch gives each 168 registers (65536 / 384); the
// producer's 40 and the consumers' 232 add up to the same 64512. With BM = 64 (256 threads) every
// thread already may have up to 255 registers and the kernel leaves the split alone.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if !defined(TA) || !defined(TC) || !defined(BM) || !defined(BN) || !defined(STAGES)
#error "compile with -DTA=... -DTC=float -DBM=... -DBN=... -DSTAGES=..."
#endif

#include "hopper_primitives.cuh"

constexpr int BK = 64;                          // k per stage: one 128-byte row of 16-bit elements
constexpr int CONSUMERS = BM / 64;              // consumer warpgroups, 64 rows of the tile each
constexpr int THREADS = (CONSUMERS + 1) * 128;  // plus the producer warpgroup
constexpr u32 A_STAGE_BYTES = BM * BK * 2;      // BM rows of 128 bytes
constexpr u32 B_CHUNK_BYTES = BK * 64 * 2;      // 64 rows (k) of 64 columns (n): 8 KiB
constexpr u32 B_STAGE_BYTES = BN * BK * 2;      // BN/64 chunks
constexpr int GROUP_ROWS = 8;                   // tile rows per group of the tile order

static_assert(BM == 64 || BM == 128, "BM must be 64 or 128 (one consumer warpgroup per 64 rows)");
static_assert(BN % 64 == 0 && BN >= 64 && BN <= 256, "BN must be 64, 128, 192 or 256");
static_assert(STAGES >= 2, "STAGES must be at least 2");
static_assert(sizeof(TC) == 4, "TC must be float (fp32 accumulation)");

// ---- the kernel -------------------------------------------------------------------------------------

// Registers per thread after the split (see the opening comment); multiples of 8 in 24..256.
constexpr int PRODUCER_REGISTERS = 40;
constexpr int CONSUMER_REGISTERS = 232;
static_assert(CONSUMERS == 1 || PRODUCER_REGISTERS * 128 + CONSUMERS * CONSUMER_REGISTERS * 128 <= 65536,
              "the register split must fit the block's registers");

// Tile t of the static schedule: groups of GROUP_ROWS tile rows, walked column by column.
__device__ __forceinline__ void tile_origin(int t, int tiles_m, int tiles_n, int& m0, int& n0) {
  const int per_group = GROUP_ROWS * tiles_n;
  const int first_row = t / per_group * GROUP_ROWS;
  const int rows = min(GROUP_ROWS, tiles_m - first_row);  // the last group may be shorter
  const int in_group = t % per_group;
  m0 = (first_row + in_group % rows) * BM;
  n0 = in_group / rows * BN;
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    gemm(int M, int N, int K, TC alpha, const TA* A, int lda, const TA* B, int ldb, TC beta, TC* C, int ldc,
         const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map) {
  // A and B are read only through the tensor maps, which hold their addresses and pitches.
  (void)A, (void)lda, (void)B, (void)ldb;

  // Dynamic shared memory: [pad to 1 KiB] [A stages] [B stages] [full barriers] [empty barriers]; the
  // host adds the 1 KiB of padding to the size.
  extern __shared__ unsigned char shared_raw[];
  const u32 base = (shared_address(shared_raw) + 1023u) & ~1023u;
  const u32 a_smem = base;
  const u32 b_smem = a_smem + STAGES * A_STAGE_BYTES;
  const u32 full_bars = b_smem + STAGES * B_STAGE_BYTES;
  const u32 empty_bars = full_bars + 8 * STAGES;

  const int tid = threadIdx.x;
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int tiles = tiles_m * tiles_n;
  const int k_tiles = (K + BK - 1) / BK;

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      barrier_init(full_bars + 8 * s, 1);               // the producer's expect_tx arrival
      barrier_init(empty_bars + 8 * s, 4 * CONSUMERS);  // one arrival per consumer warp
    }
    // Make the initialised barriers visible to the TMA unit (the asynchronous proxy) as well.
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the last block-wide barrier

  const int warpgroup = tid / 128;
  if (warpgroup == 0) {
    // ---- producer ----
#if BM == 128
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGISTERS));
#endif
    if (tid != 0) return;  // one thread issues every copy
    int stage = 0;
    u32 phase = 0;  // parity of the current pass over the ring
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      int m0, n0;
      tile_origin(t, tiles_m, tiles_n, m0, n0);
      // B boxes lying wholly right of column N would only bring zeros for columns that are never
      // stored: they are skipped (what is left in their place reaches only those columns).
      const int b_boxes = min(BN / 64, (N - n0 + 63) / 64);
      for (int kt = 0; kt < k_tiles; ++kt) {
        barrier_wait(empty_bars + 8 * stage, phase ^ 1);  // the consumers released the previous fill
        const u32 full = full_bars + 8 * stage;
        barrier_expect_bytes(full, A_STAGE_BYTES + b_boxes * B_CHUNK_BYTES);  // zero-filled parts count
        tma_load(a_smem + stage * A_STAGE_BYTES, &a_map, kt * BK, m0, full);
        for (int j = 0; j < b_boxes; ++j)
          tma_load(b_smem + stage * B_STAGE_BYTES + j * B_CHUNK_BYTES, &b_map, n0 + 64 * j, kt * BK, full);
        if (++stage == STAGES) stage = 0, phase ^= 1;
      }
    }
    return;
  }

  // ---- consumers ----
#if BM == 128
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGISTERS));
#endif
  const int consumer = warpgroup - 1;
  const int t128 = tid % 128, warp = t128 / 32, lane = t128 % 32;
  const bool pairs_aligned = ldc % 2 == 0 && (reinterpret_cast<u64>(C) & 7) == 0;
  int stage = 0;
  u32 phase = 0;
  float acc[BN / 2];
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    int m0, n0;
    tile_origin(t, tiles_m, tiles_n, m0, n0);
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
    fence_accumulators(acc);

    int previous = 0;  // the stage of the previous k-step, released once its wgmma are done
    for (int kt = 0; kt < k_tiles; ++kt) {
      barrier_wait(full_bars + 8 * stage, phase);
      const u32 a_tile = a_smem + stage * A_STAGE_BYTES + consumer * 64 * 128;
      const u32 b_tile = b_smem + stage * B_STAGE_BYTES;
      __syncwarp();  // the spin-wait may leave the warp diverged; wgmma runs converged
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk)
        wgmma<BN>(acc, swizzle128_descriptor(a_tile + kk * 32, 16, 1024),
                  swizzle128_descriptor(b_tile + kk * 16 * 128, B_CHUNK_BYTES, 1024));
      wgmma_commit();
      // Keep this k-step's wgmma running; once the previous one is done, its stage goes back.
      wgmma_wait<1>();
      if (kt > 0 && lane == 0) barrier_arrive(empty_bars + 8 * previous);
      previous = stage;
      if (++stage == STAGES) stage = 0, phase ^= 1;
    }
    wgmma_wait<0>();
    fence_accumulators(acc);
    if (k_tiles > 0 && lane == 0) barrier_arrive(empty_bars + 8 * previous);

    // Epilogue: straight from the accumulator layout to C, while the producer loads the next tile.
    const int row0 = m0 + consumer * 64 + warp * 16 + lane / 4;
    const int col0 = n0 + 2 * (lane % 4);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 8 * h;
      if (row >= M) continue;
      TC* c_row = C + static_cast<long long>(row) * ldc;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const int col = col0 + 8 * j;
        store_pair(c_row + col, col, N, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1], alpha, beta,
                   pairs_aligned);
      }
    }
  }
}
