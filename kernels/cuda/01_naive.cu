// 01_naive — the definition: one thread per element of C, a dot product over K.
//
// Idea: the plainest mapping of the three loops onto the GPU. Each thread owns one element
// C[row][col] and walks a row of A and a column of B straight from global memory. The threads of
// a warp (consecutive threadIdx.x) take consecutive rows of C, so at every step of the k loop
// the warp reads values of A from up to 32 different rows, lda elements apart: one load
// instruction touches up to 32 different 32-byte sectors to use one value from each. Its stores
// to C are scattered the same way. That is on purpose: step 02 changes only this mapping.
// Hardware: global memory only (every load goes through L1 and L2).
// Parameters: BLOCK — a block is BLOCK x BLOCK threads computing a BLOCK x BLOCK tile of C.
// Constraints: the block's threads within the device's threads per block. The specification
//              (kernels/cuda/simt_kernels.cpp; `gemmlab kernels --backend cuda` prints it) states
//              the exact expressions.
//
// Launch: grid (ceil(M / BLOCK), ceil(N / BLOCK)), block (BLOCK, BLOCK).

constexpr int THREADS = BLOCK * BLOCK;

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm(int M, int N, int K, TC alpha, const TA* A, int lda, const TA* B, int ldb, TC beta, TC* C, int ldc) {
  const int row = blockIdx.x * BLOCK + threadIdx.x;  // neighbours in a warp: neighbouring rows
  const int col = blockIdx.y * BLOCK + threadIdx.y;
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
