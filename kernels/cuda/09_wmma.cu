// 09_wmma — tensor cores through the WMMA API: each warp multiplies 16x16x16 fragments.
//
// Idea over 08: up to 08 every multiply-add is one FP32 FMA of one thread. A tensor core
// multiplies whole small matrices: one warp-wide instruction computes a 16x16x16 product of
// 16-bit inputs with fp32 accumulation, many times the FMA throughput of the same SM. The
// nvcuda::wmma API exposes this as opaque per-warp "fragments": load_matrix_sync fills one from
// memory, mma_sync multiplies, store_matrix_sync writes the result back; which lane holds which
// element is left unspecified (10 takes it into its own hands).
// The rest is 08 with fragments in place of a thread's scalars:
//   - a block computes a BM x BN tile of C and walks K in BK-deep tiles of A (BM x BK) and B
//     (BK x BN), copied by cp.async into STAGES shared-memory buffers, STAGES-1 tiles ahead
//     (16-byte copies, zero-filled outside the matrices; one barrier per tile, as in 08);
//   - its WARPS_M x WARPS_N warps each own a (BM/WARPS_M) x (BN/WARPS_N) warp tile of C, held as
//     FM x FN accumulator fragments (FM = BM/WARPS_M/16, FN = BN/WARPS_N/16) for the whole K loop;
//   - per 16-deep slice each warp loads FM fragments of A and FN of B from shared memory and does
//     FM*FN mma_sync: every A fragment is used FN times and every B fragment FM times.
// Both tiles are kept as they lie in memory (row-major, K along the rows of A): WMMA reads either
// layout, so A needs no transposition here (08 stores it transposed, 4 bytes per copy).
// Shared rows are padded by 8 elements (16 bytes). A fragment load reads 16-byte pieces of eight
// consecutive rows at once; with rows a multiple of 32 bytes long those pieces would share banks
// (all eight the same four banks for rows of 128 bytes). Padded, a row is an odd number of 16-byte
// units long, so the eight pieces land on eight different groups of four banks. (10 reaches the
// same without wasting space by swizzling.)
// The epilogue: the fragment-to-element mapping is unspecified, so each warp stores one
// accumulator fragment at a time to its own 16x16 fp32 scratch in shared memory and its lanes
// then apply alpha and beta to the elements inside C (beta == 0: C is not read).
// Where a row of A or B is not 16-byte aligned (lda or ldb % 8 != 0), its 16-byte chunks start at
// addresses cp.async does not accept, so those tiles are loaded element by element with ordinary
// loads and stores instead (slower, still correct).
// Hardware: tensor cores: fp16 inputs from sm_70, bf16 from sm_80 (this kernel asks for sm_80);
// cp.async (sm_80+); dynamic shared memory beyond 48 KiB per block (the runtime opts in).
// Parameters: BM, BN, BK (block tile), WARPS_M, WARPS_N (warps per block along M and N), STAGES
//             (tiles in flight + 1; 2: double buffering).
// Constraints: whole 16 x 16 fragments per warp in both directions (BK's allowed values are
//              multiples of 16); threads per block within the device's limit; the accumulators
//              and fragments of a thread within the registers __launch_bounds__ leaves it; the
//              padded stages and the epilogue scratch within the shared memory a block may opt
//              in to. The exact expressions are in the specification
//              (kernels/cuda/tensor_core_kernels.cpp; `gemmlab kernels`).
//
// Launch: grid (ceil(N / BN), ceil(M / BM)), block (32*WARPS_M*WARPS_N), dynamic shared memory
//         STAGES*(BM*(BK+8) + BK*(BN+8))*2 + 1024*WARPS_M*WARPS_N bytes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WARPS_M) || !defined(WARPS_N) || !defined(STAGES)
#error "compile with -DBM= -DBN= -DBK= -DWARPS_M= -DWARPS_N= -DSTAGES= (the configuration)"
#endif

namespace wmma = nvcuda::wmma;

constexpr int THREADS = 32 * WARPS_M * WARPS_N;
constexpr int WM = BM / WARPS_M;  // warp tile
constexpr int WN = BN / WARPS_N;
constexpr int FM = WM / 16;  // fragments per warp along M
constexpr int FN = WN / 16;  // ... and along N
constexpr int PAD = 8;       // elements (16 bytes) of padding per shared row
constexpr int LDA_S = BK + PAD, LDB_S = BN + PAD;
constexpr int STAGE_ELEMS = BM * LDA_S + BK * LDB_S;  // one stage: A tile, then B tile

static_assert(BM % (16 * WARPS_M) == 0, "BM must be a multiple of 16 * WARPS_M");
static_assert(BN % (16 * WARPS_N) == 0, "BN must be a multiple of 16 * WARPS_N");
static_assert(BK % 16 == 0, "BK must be a multiple of 16");
static_assert(STAGES >= 2, "the pipeline needs at least two buffers");
static_assert(sizeof(TA) == 2, "tensor-core inputs are 16-bit (fp16 or bf16)");

// The asynchronous copies of 08: the destination is a 32-bit shared-window address, and of the
// 16 bytes only the first src_bytes are read, the rest filled with zeros.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

// Copies the ROWS x COLS tile of a row-major matrix (rows x cols, leading dimension ld) whose
// top-left element is (row0, col0) into the shared tile dst (row stride LD), zeros outside the
// matrix. Every thread moves whole 16-byte chunks of 8 elements. vec: 16-byte copies are allowed
// (ld % 8 == 0 and a 16-byte aligned base).
template <int ROWS, int COLS, int LD>
__device__ __forceinline__ void load_tile(TA* dst, const TA* src, int ld, int rows, int cols, int row0,
                                          int col0, bool vec) {
  constexpr int chunks_per_row = COLS / 8;
  for (int c = threadIdx.x; c < ROWS * chunks_per_row; c += THREADS) {
    const int r = c / chunks_per_row, col = (c % chunks_per_row) * 8;
    const int gr = row0 + r, gc = col0 + col;
    int valid = gr < rows ? cols - gc : 0;  // elements of this chunk inside the matrix
    valid = valid < 0 ? 0 : valid > 8 ? 8 : valid;
    TA* d = dst + r * LD + col;
    const TA* s = src + static_cast<long long>(gr) * ld + gc;
    if (vec) {
      cp_async_16(d, valid > 0 ? s : src, 2 * valid);  // with 0 bytes the address is not read
    } else {
      const unsigned short* s16 = reinterpret_cast<const unsigned short*>(s);
      unsigned short* d16 = reinterpret_cast<unsigned short*>(d);
#pragma unroll
      for (int e = 0; e < 8; ++e) d16[e] = e < valid ? s16[e] : 0;  // 0x0000 is +0 in fp16 and bf16
    }
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm(int M, int N, int K, TC alpha, const TA* A, int lda, const TA* B, int ldb, TC beta, TC* C, int ldc) {
  // STAGES x [A tile: BM x LDA_S | B tile: BK x LDB_S], then one 16x16 fp32 scratch per warp.
  // load_matrix_sync wants 32-byte aligned fragment addresses: every tile starts on a multiple
  // of 32 bytes, and fragments lie 16 rows (16 * an odd multiple of 16 bytes) or 16 columns
  // (32 bytes) apart.
  extern __shared__ __align__(128) unsigned char shared[];
  TA* tiles = reinterpret_cast<TA*>(shared);
  float* scratch = reinterpret_cast<float*>(tiles + STAGES * STAGE_ELEMS);

  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;  // warp tile within the block
  const bool vec_a = lda % 8 == 0 && reinterpret_cast<unsigned long long>(A) % 16 == 0;
  const bool vec_b = ldb % 8 == 0 && reinterpret_cast<unsigned long long>(B) % 16 == 0;

  auto load_stage = [&](int stage, int k0) {
    TA* as = tiles + stage * STAGE_ELEMS;
    load_tile<BM, BK, LDA_S>(as, A, lda, M, K, m0, k0, vec_a);
    load_tile<BK, BN, LDB_S>(as + BM * LDA_S, B, ldb, K, N, k0, n0, vec_b);
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int k_tiles = (K + BK - 1) / BK;
  // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty past the end).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, s * BK);
    cp_async_commit();
  }

  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed ...
    __syncthreads();              // ... everyone's too, and the buffer read at kt-1 is free
    const int next = kt + STAGES - 1;
    if (next < k_tiles) load_stage(next % STAGES, next * BK);
    cp_async_commit();

    const TA* as = tiles + (kt % STAGES) * STAGE_ELEMS;
    const TA* bs = as + BM * LDA_S;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, TA, wmma::row_major> a[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, TA, wmma::row_major> b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(a[i], as + (wm0 + i * 16) * LDA_S + kk, LDA_S);
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(b[j], bs + kk * LDB_S + wn0 + j * 16, LDB_S);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    // No barrier here: the next iteration's barrier comes before any copy into this stage.
  }

  // Epilogue, one fragment at a time through this warp's scratch (apart from the tiles, so no
  // barrier is needed): lane l handles the elements l, l+32, ... of the 16x16 fragment, i.e.
  // rows 2q and 2q+1, 16 consecutive floats of C per row.
  float* mine = scratch + warp * 16 * 16;
#pragma unroll
  for (int i = 0; i < FM; ++i) {
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      wmma::store_matrix_sync(mine, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
#pragma unroll
      for (int e = lane; e < 16 * 16; e += 32) {
        const int row = m0 + wm0 + i * 16 + e / 16, col = n0 + wn0 + j * 16 + e % 16;
        if (row < M && col < N) {
          TC* p = C + static_cast<long long>(row) * ldc + col;
          *p = beta == TC(0) ? alpha * mine[e] : alpha * mine[e] + beta * *p;  // beta == 0: C is not read
        }
      }
      __syncwarp();  // the scratch is read before the next fragment overwrites it
    }
  }
}
