// 04_1d_register_tiled — each thread computes TM elements of a column of C, kept in registers.
//
// Idea over 03: in 03 every multiply-add needs two loads from shared memory, and shared memory,
// not the FMA units, sets the pace. Here a thread computes TM results of one column of C: at
// each step k it loads one value of B into a register and uses it for TM multiply-adds with TM
// values of A (shared by the threads of a warp when BN >= 32: one broadcast read each).
// Fewer threads each do more work: a block of BM*BN/TM threads computes a BM x BN tile of C from
// BM x BK and BK x BN tiles in shared memory, and the tiles need not be square any more.
// Hardware: the register file (TM accumulators per thread) and shared-memory broadcast (a warp
// reading one address is served in one access).
// Parameters: BM, BN — rows and columns of C per block; BK — depth of the shared tiles;
//             TM — rows of C per thread.
// Constraints: whole thread tiles down the block tile; threads per block a whole number of warps,
//              within the device's limit; each thread copying the same number of elements of each
//              tile; the shared tiles within the shared memory a block may use without opting in;
//              the registers a thread keeps (accumulators, operands, its share of a tile copy)
//              few enough that ptxas does not spill, and the block's registers, estimated from
//              them, within the register file. The exact expressions, and how registers are
//              estimated, are in the specification (kernels/cuda/simt_kernels.cpp; `gemmlab kernels`).
//
// Launch: grid (ceil(N / BN), ceil(M / BM)), block (BM*BN/TM).

constexpr int THREADS = BM / TM * BN;

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm(int M, int N, int K, TC alpha, const TA* A, int lda, const TA* B, int ldb, TC beta, TC* C, int ldc) {
  __shared__ TA As[BM * BK];  // A[m0 .. m0+BM)[k0 .. k0+BK), row-major
  __shared__ TA Bs[BK * BN];  // B[k0 .. k0+BK)[n0 .. n0+BN), row-major

  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;  // this block's tile of C
  // This thread's results: rows row0 .. row0+TM of column col within the tile. Consecutive
  // threads take consecutive columns, so a warp reads one row of Bs and one value of As.
  const int col = tid % BN;
  const int row0 = tid / BN * TM;

  TC acc[TM];
  for (int i = 0; i < TM; ++i) acc[i] = 0;

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
      const TA b = Bs[k * BN + col];  // one load of B, reused TM times
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += As[(row0 + i) * BK + k] * b;
    }
    __syncthreads();  // everyone is done with the tiles before the next copy overwrites them
  }

  // beta == 0: C is not read (it may hold NaN).
  const int gc = n0 + col;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int gr = m0 + row0 + i;
    if (gr < M && gc < N) {
      TC* c = C + (long long)gr * ldc + gc;
      *c = beta == TC(0) ? alpha * acc[i] : alpha * acc[i] + beta * *c;
    }
  }
}
