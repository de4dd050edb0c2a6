// 03_smem_tiled — tiles of A and B staged in shared memory and reused by the whole block.
//
// Idea over 02: in 02 every thread reads its own row of A and column of B from global memory, so
// each element of A is fetched by all the threads of its row of C (N times in all) and each
// element of B by those of its column. Here the block walks K in steps of TILE: its threads copy
// a TILE x TILE tile of A and one of B into shared memory (one element each, coalesced), wait
// for each other, and then every thread takes its dot-product step from the shared tiles. Each
// element fetched from global memory is now used TILE times.
// Hardware: shared memory (on-chip, about as fast as L1, explicitly managed by the block) and
// __syncthreads(), the barrier that makes a tile complete before it is read and read before it
// is overwritten.
// Parameters: TILE — a block is TILE x TILE threads; C, A and B tiles are TILE x TILE.
// Constraints: the block's threads within the device's threads per block; the two shared tiles
//              within the shared memory a block may use without opting in. The exact expressions
//              are in the specification (kernels/cuda/simt_kernels.cpp; `gemmlab kernels`).
//
// Launch: grid (ceil(N / TILE), ceil(M / TILE)), block (TILE, TILE).

constexpr int THREADS = TILE * TILE;

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm(int M, int N, int K, TC alpha, const TA* A, int lda, const TA* B, int ldb, TC beta, TC* C, int ldc) {
  __shared__ TA As[TILE][TILE];  // A[row0 .. row0+TILE)[k0 .. k0+TILE)
  __shared__ TA Bs[TILE][TILE];  // B[k0 .. k0+TILE)[col0 .. col0+TILE)

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;  // the element of C this thread computes
  const int col = blockIdx.x * TILE + tx;

  TC sum = 0;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // Each thread copies one element of each tile; elements outside the matrices are zeros, so
    // edge tiles need no other care. (No early return above: every thread reaches the barriers.)
    const int a_col = k0 + tx, b_row = k0 + ty;
    As[ty][tx] = row < M && a_col < K ? A[(long long)row * lda + a_col] : TA(0);
    Bs[ty][tx] = b_row < K && col < N ? B[(long long)b_row * ldb + col] : TA(0);
    __syncthreads();  // the tiles are complete

    for (int k = 0; k < TILE; ++k) sum += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone is done with the tiles before the next copy overwrites them
  }

  if (row < M && col < N) {
    TC* c = C + (long long)row * ldc + col;
    // beta == 0: C is not read (it may hold NaN).
    *c = beta == TC(0) ? alpha * sum : alpha * sum + beta * *c;
  }
}
