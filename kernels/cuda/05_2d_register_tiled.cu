// 05_2d_register_tiled — each thread computes a TM x TN tile of C as a sum of outer products.
//
// Idea over 04: 04 reuses a value of B TM times but loads a fresh value of A for every single
// multiply-add. Here a thread owns a TM x TN tile of C: at each step k it loads TM values of A
// (a column of its rows) and TN values of B (a row of its columns) into registers and adds their
// outer product, TM*TN multiply-adds for TM + TN shared-memory loads (64 for 16 at 8 x 8,
// against 8 for 9 in 04). A block of (BM/TM)*(BN/TN) threads computes a BM x BN tile of C;
// the threads of a block each copy a few elements of the shared tiles.
// Hardware: the register file — TM*TN accumulators plus TM + TN operands per thread (up to 255
// 32-bit registers per thread; the fewer each thread needs, the more warps fit an SM).
// Parameters: BM, BN — rows and columns of C per block; BK — depth of the shared tiles;
//             TM, TN — rows and columns of C per thread.
// Constraints: as 04 (whole warps within the device's threads per block, even tile copies, the
//              shared tiles within shared memory per block, registers estimated from what a thread
//              keeps), with a TM x TN tile per thread. The exact expressions are in the
//              specification (kernels/cuda/simt_kernels.cpp; `gemmlab kernels`).
//
// Launch: grid (ceil(N / BN), ceil(M / BM)), block ((BM/TM)*(BN/TN)).

constexpr int THREADS = (BM / TM) * (BN / TN);

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm(int M, int N, int K, TC alpha, const TA* A, int lda, const TA* B, int ldb, TC beta, TC* C, int ldc) {
  __shared__ TA As[BM * BK];  // A[m0 .. m0+BM)[k0 .. k0+BK), row-major
  __shared__ TA Bs[BK * BN];  // B[k0 .. k0+BK)[n0 .. n0+BN), row-major

  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;  // this block's tile of C
  // This thread's results: rows row0 .. row0+TM, columns col0 .. col0+TN within the tile.
  const int row0 = tid / (BN / TN) * TM;
  const int col0 = tid % (BN / TN) * TN;

  TC acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0;
  TA a_reg[TM], b_reg[TN];

  for (int k0 = 0; k0 < K; k0 += BK) {
    // Copy the tiles, THREADS elements at a time; consecutive threads copy consecutive elements
    // of a row (coalesced). Elements outside the matrices are zeros.
#pragma unroll
    for (int j = 0; j < BM * BK / THREADS; ++j) {
      const int e = j * THREADS + tid, r = e / BK, c = e % BK;
      const int gr = m0 + r, gc = k0 + c;
      As[e] = gr < M && gc < K ? A[(long long)gr * lda + gc] : TA(0);
    }
#pragma unroll
    for (int j = 0; j < BK * BN / THREADS; ++j) {
      const int e = j * THREADS + tid, r = e / BN, c = e % BN;
      const int gr = k0 + r, gc = n0 + c;
      Bs[e] = gr < K && gc < N ? B[(long long)gr * ldb + gc] : TA(0);
    }
    __syncthreads();  // the tiles are complete

#pragma unroll
    for (int k = 0; k < BK; ++k) {
      // TM + TN loads from shared memory, then TM*TN multiply-adds from registers.
#pragma unroll
      for (int i = 0; i < TM; ++i) a_reg[i] = As[(row0 + i) * BK + k];
#pragma unroll
      for (int j = 0; j < TN; ++j) b_reg[j] = Bs[k * BN + col0 + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
    }
    __syncthreads();  // everyone is done with the tiles before the next copy overwrites them
  }

  // beta == 0: C is not read (it may hold NaN).
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int gr = m0 + row0 + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int gc = n0 + col0 + j;
      if (gr < M && gc < N) {
        TC* c = C + (long long)gr * ldc + gc;
        *c = beta == TC(0) ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *c;
      }
    }
  }
}
