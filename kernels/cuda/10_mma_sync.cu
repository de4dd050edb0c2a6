// 10_mma_sync — tensor cores by hand: mma.sync + ldmatrix on swizzled shared memory, cp.async.
//
// Idea over 09: WMMA hides which lane holds which element. Its load_matrix_sync takes only a
// pointer and a row stride (CUDA 13 turns it into ldmatrix for fp16, not for bf16), so shared
// tiles must be plain row-major (padded against bank conflicts) and the results must pass
// through shared memory on their way to C. Issuing the PTX instruction mma.sync ourselves, we
// know the fragment layout, and so:
//   - each lane computes its own ldmatrix address, so shared memory can be XOR-swizzled instead
//     of padded: ldmatrix and the copies into shared memory are free of bank conflicts at no cost
//     in space;
//   - each lane writes the accumulator elements it knows it holds straight from registers to C.
// The cp.async pipeline around it is 08's and 09's.
//
// The m16n8k16 fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type").
// One mma.sync computes D (16x8, fp32) = A (16x16) * B (16x8) + C with all 32 lanes of the warp.
// With g = lane / 4 (0..7) and t = lane % 4 (0..3), each lane holds
//   A: four 32-bit registers, two 16-bit elements each (lower k in the low half):
//        a0 = A[g  ][2t, 2t+1]    a1 = A[g+8][2t, 2t+1]
//        a2 = A[g  ][2t+8, 2t+9]  a3 = A[g+8][2t+8, 2t+9]
//   B: two registers, each two consecutive k of one column ("col" layout):
//        b0 = B[2t, 2t+1][g]      b1 = B[2t+8, 2t+9][g]
//   C and D: four floats        c0, c1 = C[g][2t], C[g][2t+1]    c2, c3 = C[g+8][2t], C[g+8][2t+1]
// So lane 5 (g = 1, t = 1) holds A rows 1 and 9, k = 2, 3, 10, 11; B column 1 at the same k; and
// C rows 1 and 9, columns 2 and 3.
//
// ldmatrix.m8n8.x4 loads four 8x8 matrices of 16-bit elements: lanes 8q .. 8q+7 give the shared
// addresses of the eight 16-byte rows of matrix q, and register q of every lane receives from
// matrix q the pair (row lane/4, columns 2*(lane%4), 2*(lane%4)+1) — exactly the shape of one A
// register above. So for the A fragment at (row m, depth k) lane l points at row m + l%16, column
// k + 8*(l/16): matrices 0..3 are then rows 0-7/8-15 at k 0-7, and rows 0-7/8-15 at k 8-15, in
// the order a0..a3. With .trans a lane receives the transposed pair (rows 2*(lane%4), +1; column
// lane/4): reading the B tile as it lies in shared memory (rows of k, columns of n, row-major
// like B itself), that is the pair of consecutive k in column g that b0/b1 want. Lane l points at
// k-row k + l%16, column n + 8*(l/16), and one ldmatrix.x4.trans gives b0, b1 of the 8 columns at
// n and b0, b1 of the 8 columns at n + 8.
//
// The swizzle. Shared memory has 32 banks of 4 bytes: a 128-byte line touches each bank once.
// One ldmatrix phase reads the same 16-byte chunk of eight consecutive rows. With rows of 128
// bytes (or a multiple), those eight chunks sit in the same four banks: an 8-way conflict
// (rows of 64 bytes: 4-way). So the 16-byte chunk c of row r is stored at chunk position
//   c XOR (r mod 8)                              for rows of 8 or more chunks (>= 128 bytes),
//   c XOR ((r / (8 / chunks)) mod chunks)         for shorter rows, 8/chunks of which share a line,
// which puts the eight rows of a phase on eight different bank groups. The XOR only permutes the
// chunks within a row, so a 16-byte copy (cp.async) or an ldmatrix row stays one contiguous chunk
// and nothing is wasted, unlike 09's padding.
//
// The pipeline, as in 08 and 09: STAGES buffers of (A tile, B tile), STAGES-1 tiles in flight;
// at step kt each thread waits until its copies of tile kt have landed (cp.async.wait_group),
// one barrier makes everyone's visible and guarantees that the buffer used at step kt-1 is free,
// the copies of tile kt + STAGES-1 are issued into that buffer, and tile kt is multiplied.
// Edges: a 16-byte copy whose elements lie partly outside A or B copies only the ones inside
// (cp.async's src-size) and zero-fills the rest; a chunk outside copies nothing and is zeros.
// Where a row of A or B is not 16-byte aligned (lda or ldb % 8 != 0), its tiles are loaded
// element by element with ordinary loads and stores instead (slower, still correct).
// Each lane writes its own accumulators straight to C with bounds checks (beta == 0: C not read).
//
// Hardware: sm_80+ tensor cores (mma.sync m16n8k16 with fp16 or bf16 inputs, fp32 accumulation),
// ldmatrix (sm_75+), cp.async with zero-fill (sm_80+), 32 shared-memory banks; dynamic shared
// memory beyond 48 KiB per block (the runtime opts in).
// Parameters: BM, BN, BK (block tile), WARPS_M x WARPS_N warps (each a (BM/WARPS_M) x (BN/WARPS_N)
// warp tile of 16x8 mma tiles), STAGES (shared-memory buffers in the pipeline).
// Constraints: whole warp tiles of 16 rows, and of 16 columns (ldmatrix.x4.trans gives two 8-wide
// B fragments); threads per block within the device's limit; the stages within the shared memory
// a block may opt in to; the accumulators and fragments of a thread within its registers. BM, BN
// and BK take powers of two only (the swizzle XORs chunk indices within a row), BK multiples of
// 16. The exact expressions are in the specification (kernels/cuda/tensor_core_kernels.cpp;
// `gemmlab kernels`).
//
// Launch: grid (ceil(N / BN), ceil(M / BM)), block (32*WARPS_M*WARPS_N), dynamic shared memory
//         STAGES*(BM*BK + BK*BN)*2 bytes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WARPS_M) || !defined(WARPS_N) || !defined(STAGES)
#error "compile with -DBM= -DBN= -DBK= -DWARPS_M= -DWARPS_N= -DSTAGES= (the configuration)"
#endif

constexpr int THREADS = 32 * WARPS_M * WARPS_N;
constexpr int WM = BM / WARPS_M;  // warp tile
constexpr int WN = BN / WARPS_N;
constexpr int MI = WM / 16;  // 16-row mma tiles per warp
constexpr int NI = WN / 8;   // 8-column mma tiles per warp

static_assert(BM % (16 * WARPS_M) == 0, "BM must be a multiple of 16 * WARPS_M");
static_assert(BN % (16 * WARPS_N) == 0, "BN must be a multiple of 16 * WARPS_N");
static_assert(BK % 16 == 0, "BK must be a multiple of 16");
static_assert(STAGES >= 2, "the pipeline needs at least two buffers");
static_assert(sizeof(TA) == 2, "tensor-core inputs are 16-bit (fp16 or bf16)");

// Element offset of (row, col) in a shared tile of COLS 16-bit elements per row, with the
// 16-byte chunks of each row permuted by the XOR swizzle described above. col % 8 is kept, so
// the eight elements of one chunk stay together.
template <int COLS>
__device__ __forceinline__ int swizzled(int row, int col) {
  constexpr int chunks = COLS / 8;                             // 16-byte chunks per row
  constexpr int rows_per_line = chunks >= 8 ? 1 : 8 / chunks;  // rows sharing a 128-byte line
  constexpr int period = chunks >= 8 ? 8 : chunks;
  const int chunk = (col / 8) ^ ((row / rows_per_line) % period);
  return row * COLS + chunk * 8 + col % 8;
}

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16-byte asynchronous copy global -> shared; the bytes past src_bytes (0..16) are zero-filled.
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

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const TA* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                                  const TA* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(shared_address(p)));
}

// d = a * b + d for one 16x8x16 tile; the last argument only selects the input type.
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                          __half) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                          __nv_bfloat16) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Copies the ROWS x COLS tile of a row-major matrix (rows x cols, leading dimension ld) whose
// top-left element is (row0, col0) into the swizzled shared tile dst, zeros outside the matrix.
// vec: 16-byte copies are allowed (ld % 8 == 0 and a 16-byte aligned base).
template <int ROWS, int COLS>
__device__ __forceinline__ void load_tile(TA* dst, const TA* src, int ld, int rows, int cols, int row0,
                                          int col0, bool vec) {
  constexpr int chunks_per_row = COLS / 8;
  for (int c = threadIdx.x; c < ROWS * chunks_per_row; c += THREADS) {
    const int r = c / chunks_per_row, col = (c % chunks_per_row) * 8;
    const int gr = row0 + r, gc = col0 + col;
    int valid = gr < rows ? cols - gc : 0;  // elements of this chunk inside the matrix
    valid = valid < 0 ? 0 : valid > 8 ? 8 : valid;
    TA* d = dst + swizzled<COLS>(r, col);
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

__device__ __forceinline__ void store_c(TC* C, int ldc, int M, int N, int row, int col, TC alpha, TC beta,
                                        float v) {
  if (row < M && col < N) {
    TC* p = C + static_cast<long long>(row) * ldc + col;
    *p = beta == TC(0) ? alpha * v : alpha * v + beta * *p;  // beta == 0: C is not read
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm(int M, int N, int K, TC alpha, const TA* A, int lda, const TA* B, int ldb, TC beta, TC* C, int ldc) {
  extern __shared__ __align__(128) unsigned char shared[];
  TA* As = reinterpret_cast<TA*>(shared);  // STAGES tiles of BM x BK
  TA* Bs = As + STAGES * BM * BK;          // STAGES tiles of BK x BN

  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;  // warp tile within the block
  const bool vec_a = lda % 8 == 0 && reinterpret_cast<unsigned long long>(A) % 16 == 0;
  const bool vec_b = ldb % 8 == 0 && reinterpret_cast<unsigned long long>(B) % 16 == 0;

  auto load_stage = [&](int stage, int k0) {
    load_tile<BM, BK>(As + stage * BM * BK, A, lda, M, K, m0, k0, vec_a);
    load_tile<BK, BN>(Bs + stage * BK * BN, B, ldb, K, N, k0, n0, vec_b);
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const int k_tiles = (K + BK - 1) / BK;
  // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty past the end, so that
  // the group count stays in step with the tiles).
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

    const TA* as = As + (kt % STAGES) * BM * BK;
    const TA* bs = Bs + (kt % STAGES) * BK * BN;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned a[MI][4], b[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i)
        ldmatrix_x4(a[i], as + swizzled<BK>(wm0 + i * 16 + lane % 16, kk + (lane / 16) * 8));
#pragma unroll
      for (int j = 0; j < NI; j += 2)
        ldmatrix_x4_trans(b[j][0], b[j][1], b[j + 1][0], b[j + 1][1],
                          bs + swizzled<BN>(kk + lane % 16, wn0 + j * 8 + (lane / 16) * 8));
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) mma_16816(acc[i][j], a[i], b[j], TA());
    }
  }

  // Epilogue: lane (g, t) holds C[g][2t, 2t+1] and C[g+8][2t, 2t+1] of each 16x8 tile.
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int row = m0 + wm0 + i * 16 + g, col = n0 + wn0 + j * 8 + 2 * t;
      store_c(C, ldc, M, N, row, col, alpha, beta, acc[i][j][0]);
      store_c(C, ldc, M, N, row, col + 1, alpha, beta, acc[i][j][1]);
      store_c(C, ldc, M, N, row + 8, col, alpha, beta, acc[i][j][2]);
      store_c(C, ldc, M, N, row + 8, col + 1, alpha, beta, acc[i][j][3]);
    }
  }
}
