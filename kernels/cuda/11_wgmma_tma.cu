// 11_wgmma_tma — Hopper: TMA copies swizzled tiles, mbarriers track them, warpgroups multiply with wgmma.
//
// Idea over 10: up to 10 the threads do the copying themselves (cp.async, one 16-byte piece per thread
// and instruction) and feed the tensor cores a warp at a time (ldmatrix + mma.sync, 16x8x16 each).
// On Hopper both jobs move to hardware that works on whole tiles:
//   - TMA (the tensor memory accelerator) copies a 2-D box of a matrix into shared memory from one
//     instruction issued by one thread, using a tensor map the host encoded (base, sizes, row pitch,
//     box size). Elements outside the matrix arrive as zeros, so edge tiles need no special code. It
//     stores the box with 10's XOR swizzle done in hardware ("128-byte swizzle"): row r of the box
//     lies at byte r*128, and its 16-byte piece p at position p ^ (r % 8), so eight rows of one
//     column of pieces sit in eight different groups of banks.
//   - An mbarrier in shared memory counts the bytes: the issuing thread announces how many bytes a
//     stage will receive (arrive.expect_tx), the copies count them down as they land (complete_tx),
//     and the barrier's phase flips when all have arrived. Consumers wait on the phase's parity.
//   - wgmma.mma_async: a warpgroup (four warps, 128 threads) multiplies a 64 x N tile of A by an
//     N-wide tile of B, 16 deep, reading both straight from shared memory through 64-bit matrix
//     descriptors, accumulating in fp32 registers, asynchronously: the warpgroup issues the next
//     instructions while the tensor cores work (wgmma.fence / commit_group / wait_group order it).
// The block holds a STAGES-deep ring of stages, each one 64-deep slice of A (BM x 64) and B (64 x BN).
// Thread 0 keeps STAGES slices in flight; each k-step every warpgroup waits for its stage, issues four
// wgmma (k = 16 each) on it and then waits only for the previous k-step's wgmma, so one k-step of
// tensor-core work is always queued; after a __syncthreads the stage that k-step read is refilled.
//
// Shared memory layouts and descriptors (all stages start at 1 KiB-aligned addresses, the period of
// the 128-byte swizzle, so TMA's and wgmma's swizzle agree and the descriptor's base offset is 0):
//   A stage: BM rows (m) x 64 columns (k), one 128-byte row per m: "K-major", the layout wgmma takes
//     for A without transposition. Element (m, k) lies at m*128 + ((k/8) ^ (m%8))*16 + (k%8)*2.
//     Descriptor of warpgroup w for k-step kk (k = 16kk..16kk+15):
//       start = stage + w*64*128 + kk*32   (32 bytes = 16 elements further along the row; the
//                                           hardware swizzles the final address, so this stays right)
//       stride byte offset (SBO) = 1024    (from one group of 8 rows to the next)
//       leading byte offset (LBO) = 16     (unused for swizzled K-major layouts; 1 in 16-byte units)
//       swizzle mode = 1 (128B) in bits 62-63.
//   B stage: B is K x N row-major, so a tile's contiguous direction is N ("MN-major"). TMA boxes can
//     only be 128 bytes (64 elements) wide with this swizzle, so the stage holds BN/64 chunks, chunk j
//     = rows k 0..63 x columns 64j..64j+63, 8 KiB each, one after the other. Element (k, n) of chunk j
//     lies at j*8192 + k*128 + (((n%64)/8) ^ (k%8))*16 + (n%8)*2. wgmma reads it with the transpose
//     flag for B (imm-trans-b = 1, allowed for 16-bit types), descriptor for k-step kk:
//       start = stage + kk*16*128          (16 rows further down)
//       LBO = 8192                         (MN-major, swizzled: from one 64-column chunk to the next)
//       SBO = 1024                         (from rows k..k+7 to rows k+8..k+15)
//       swizzle mode = 1 (128B).
// Accumulator layout (m64nNk16, fp32): thread t of a warpgroup (warp w = t/32, lane l = t%32) holds
// N/2 floats d[i]; d[4j + 2h + e] is C(row, col) of the warpgroup's 64 x N tile with
//   row = 16w + 8h + l/4,  col = 8j + 2(l%4) + e      (j < N/8, h and e in {0, 1}),
// so each thread writes pairs of adjacent columns; the epilogue stores them straight to global memory
// (float2 where C is 8-byte aligned and ldc even), skipping rows >= M and columns >= N.
//
// Hardware: sm_90a (H100/H200): TMA (cp.async.bulk.tensor.2d, 128-byte swizzle, zero fill), mbarrier
// transaction counts, wgmma.mma_async (fp16/bf16 in, fp32 accumulate), up to 227 KiB of shared memory.
// Parameters: BM (64 or 128: one consumer warpgroup per 64 rows), BN (64, 128, 192, 256: the N of each
// wgmma, a multiple of the 64-column TMA box), STAGES (2..5). BK = 64 (one 128-byte swizzle row).
// Constraints: the STAGES slices of A and B, their mbarriers and 1 KiB of alignment slack within the
// shared memory a block may opt in to (the exact expression: kernels/cuda/hopper_kernels.cpp).
// TMA needs A and B 16-byte aligned and lda, ldb multiples of 8 elements (row pitch multiple of 16 B);
// the runtime copies an operand that is not so into a buffer that is, as part of the run.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if !defined(TA) || !defined(TC) || !defined(BM) || !defined(BN) || !defined(STAGES)
#error "compile with -DTA=... -DTC=float -DBM=... -DBN=... -DSTAGES=..."
#endif

#include "hopper_primitives.cuh"

constexpr int BK = 64;               // k per stage: one 128-byte row of 16-bit elements
constexpr int WARPGROUPS = BM / 64;  // each multiplies 64 rows of the tile
constexpr int THREADS = WARPGROUPS * 128;
constexpr u32 A_STAGE_BYTES = BM * BK * 2;  // BM rows of 128 bytes
constexpr u32 B_CHUNK_BYTES = BK * 64 * 2;  // 64 rows (k) of 64 columns (n): 8 KiB
constexpr u32 B_STAGE_BYTES = BN * BK * 2;  // BN/64 chunks

static_assert(BM == 64 || BM == 128, "BM must be 64 or 128 (one warpgroup per 64 rows)");
static_assert(BN % 64 == 0 && BN >= 64 && BN <= 256, "BN must be 64, 128, 192 or 256");
static_assert(STAGES >= 2, "STAGES must be at least 2");
static_assert(sizeof(TC) == 4, "TC must be float (fp32 accumulation)");

// ---- the kernel -------------------------------------------------------------------------------------

// Issued by one thread: k-slice kt of the block's A rows and B columns into stage `stage`, b_boxes of
// the BN/64 B boxes (see the kernel).
__device__ __forceinline__ void load_stage(int stage, int kt, int m0, int n0, int b_boxes, u32 a_smem,
                                           u32 b_smem, u32 full_bars, const CUtensorMap* a_map,
                                           const CUtensorMap* b_map) {
  const u32 bar = full_bars + 8 * stage;
  // Boxes count whole, zero-filled parts included.
  barrier_expect_bytes(bar, A_STAGE_BYTES + b_boxes * B_CHUNK_BYTES);
  tma_load(a_smem + stage * A_STAGE_BYTES, a_map, kt * BK, m0, bar);
  for (int j = 0; j < b_boxes; ++j)
    tma_load(b_smem + stage * B_STAGE_BYTES + j * B_CHUNK_BYTES, b_map, n0 + 64 * j, kt * BK, bar);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    gemm(int M, int N, int K, TC alpha, const TA* A, int lda, const TA* B, int ldb, TC beta, TC* C, int ldc,
         const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map) {
  // A and B are read only through the tensor maps, which hold their addresses and pitches.
  (void)A, (void)lda, (void)B, (void)ldb;

  // Dynamic shared memory: [pad to 1 KiB] [A stages] [B stages] [full barriers]; the host adds the
  // 1 KiB of padding to the size.
  extern __shared__ unsigned char shared_raw[];
  const u32 base = (shared_address(shared_raw) + 1023u) & ~1023u;
  const u32 a_smem = base;
  const u32 b_smem = a_smem + STAGES * A_STAGE_BYTES;
  const u32 full_bars = b_smem + STAGES * B_STAGE_BYTES;

  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int k_tiles = (K + BK - 1) / BK;
  // B boxes lying wholly right of column N would only bring zeros for columns that are never stored:
  // they are skipped (what is left in their place from before reaches only those columns).
  const int b_boxes = min(BN / 64, (N - n0 + 63) / 64);

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) barrier_init(full_bars + 8 * s, 1);
    // Make the initialised barriers visible to the TMA unit (the asynchronous proxy) as well.
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (tid == 0)
    for (int kt = 0; kt < STAGES && kt < k_tiles; ++kt)
      load_stage(kt, kt, m0, n0, b_boxes, a_smem, b_smem, full_bars, &a_map, &b_map);

  const int warpgroup = tid / 128;
  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
  fence_accumulators(acc);

  for (int kt = 0; kt < k_tiles; ++kt) {
    const int stage = kt % STAGES;
    barrier_wait(full_bars + 8 * stage, (kt / STAGES) & 1);  // the stage's (kt/STAGES)-th fill

    const u32 a_tile = a_smem + stage * A_STAGE_BYTES + warpgroup * 64 * 128;
    const u32 b_tile = b_smem + stage * B_STAGE_BYTES;
    __syncwarp();  // the spin-wait may leave the warp diverged; wgmma runs converged
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
      wgmma<BN>(acc, swizzle128_descriptor(a_tile + kk * 32, 16, 1024),
                swizzle128_descriptor(b_tile + kk * 16 * 128, B_CHUNK_BYTES, 1024));
    wgmma_commit();

    // Let this k-step's wgmma run; wait for the previous one, which read stage kt-1. Once every
    // warpgroup is past this point, that stage can take k-slice kt-1+STAGES.
    wgmma_wait<1>();
    __syncthreads();
    if (tid == 0 && kt >= 1 && kt - 1 + STAGES < k_tiles)
      load_stage((kt - 1) % STAGES, kt - 1 + STAGES, m0, n0, b_boxes, a_smem, b_smem, full_bars, &a_map,
                 &b_map);
  }
  wgmma_wait<0>();
  fence_accumulators(acc);

  // Epilogue: straight from the accumulator layout to C (see the opening comment).
  const int t = tid % 128, warp = t / 32, lane = t % 32;
  const int row0 = m0 + warpgroup * 64 + warp * 16 + lane / 4;
  const int col0 = n0 + 2 * (lane % 4);
  const bool pairs_aligned = ldc % 2 == 0 && (reinterpret_cast<u64>(C) & 7) == 0;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + 8 * h;
    if (row >= M) continue;
    TC* c_row = C + static_cast<long long>(row) * ldc;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int col = col0 + 8 * j;
      store_pair(c_row + col, col, N, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1], alpha, beta, pairs_aligned);
    }
  }
}
