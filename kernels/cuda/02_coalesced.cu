// 02_coalesced — 01 with the threads of a warp along N: loads of B and stores of C coalesce.
//
// Idea over 01: the arithmetic is unchanged; only which thread computes which element. Here
// consecutive threadIdx.x take consecutive columns of C. At each step of the k loop a warp now
// reads neighbouring elements of one row of B (with BLOCK = 32: 4 sectors of 32 bytes for 32
// floats, instead of 32 sectors), the threads of a row of the block read the same element of A
// (one broadcast), and stores to C are neighbours too. The memory system moves the bytes the
// kernel uses instead of a whole sector for each value.
// Hardware: coalescing — the load/store unit merges the addresses of a warp into as few 32-byte
// sectors as they span.
// Parameters: BLOCK — a block is BLOCK x BLOCK threads computing a BLOCK x BLOCK tile of C.
// Constraints: as 01; the exact expressions are in the specification (simt_kernels.cpp).
//
// Launch: grid (ceil(N / BLOCK), ceil(M / BLOCK)), block (BLOCK, BLOCK).

constexpr int THREADS = BLOCK * BLOCK;

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm(int M, int N, int K, TC alpha, const TA* A, int lda, const TA* B, int ldb, TC beta, TC* C, int ldc) {
  const int col = blockIdx.x * BLOCK + threadIdx.x;  // neighbours in a warp: neighbouring columns
  const int row = blockIdx.y * BLOCK + threadIdx.y;
  if (row >= M || col >= N) return;

  // Offsets in 64 bits: row * lda can pass 2^31 on large matrices.
  const TA* a = A + (long long)row * lda;  // row `row` of A
  const TA* b = B + col;                   // column `col` of B, ldb apart
  TC sum = 0;
  for (int k = 0; k < K; ++k) sum += a[k] * b[(long long)k * ldb];

  TC* c = C + (long long)row * ldc + col;
  // beta == 0: C is not read (it may hold NaN).
  *c = beta == TC(0) ? alpha * sum : alpha * sum + beta * *c;
}
