// 06_vectorized — 05 with 16-byte loads: float4 from global memory, A transposed in shared memory.
//
// Idea over 05: 05 moves every value with its own 4-byte instruction, from global and from shared
// memory alike. Here the tiles are copied from global memory four floats at a time (one 16-byte
// load instead of four: fewer instructions, fewer address computations), and the tile of A is
// stored transposed, As[k][m], so that the TM values of A a thread needs at step k lie side by
// side, as its TN values of B already do: both are read from shared memory with 16-byte loads,
// TM/4 + TN/4 instructions per step instead of TM + TN.
// A float4 load needs a 16-byte-aligned address and all four elements inside the matrix. Where
// that does not hold (a leading dimension that is not a multiple of 4, the last columns of a
// row) the four elements are read one by one, those outside the matrix as zeros: every shape
// and every lda, ldb is correct, and the common case pays one test of the address.
// Hardware: 128-bit load instructions (LDG.E.128, LDS.128): the same bytes in fewer instructions.
// Parameters: BM, BN — rows and columns of C per block; BK — depth of the shared tiles;
//             TM, TN — rows and columns of C per thread, multiples of 4. fp32 only.
// Constraints: as 05, with each thread copying whole float4s of each tile. The exact expressions
//              are in the specification (kernels/cuda/simt_kernels.cpp; `gemmlab kernels`).
//
// Launch: grid (ceil(N / BN), ceil(M / BM)), block ((BM/TM)*(BN/TN)).

constexpr int THREADS = (BM / TM) * (BN / TN);

// Four consecutive floats of a row starting at p, of which `left` (possibly <= 0 or > 4) lie
// inside the matrix; the others read as zero. One 16-byte load when all four are inside and p is
// 16-byte aligned, else one load per element inside.
__device__ __forceinline__ float4 load4(const float* p, int left) {
  if (left >= 4 && (reinterpret_cast<unsigned long long>(p) & 15) == 0)
    return *reinterpret_cast<const float4*>(p);
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (left > 0) v.x = p[0];
  if (left > 1) v.y = p[1];
  if (left > 2) v.z = p[2];
  if (left > 3) v.w = p[3];
  return v;
}

// Four floats of shared memory starting at p (16-byte aligned) into r[0..3]: one 16-byte load.
__device__ __forceinline__ void load4_shared(float* r, const float* p) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
}

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm(int M, int N, int K, TC alpha, const TA* A, int lda, const TA* B, int ldb, TC beta, TC* C, int ldc) {
  // fp32 only: TA and TC are float.
  __shared__ __align__(16) float As[BK * BM];  // A[m0 .. m0+BM)[k0 .. k0+BK), transposed: As[k][m]
  __shared__ __align__(16) float Bs[BK * BN];  // B[k0 .. k0+BK)[n0 .. n0+BN), row-major

  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;  // this block's tile of C
  // This thread's results: rows row0 .. row0+TM, columns col0 .. col0+TN within the tile.
  const int row0 = tid / (BN / TN) * TM;
  const int col0 = tid % (BN / TN) * TN;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
  float a_reg[TM], b_reg[TN];

  for (int k0 = 0; k0 < K; k0 += BK) {
    // A: float4 along a row of A (4 values of k), scattered into 4 rows of the transposed tile.
#pragma unroll
    for (int j = 0; j < BM * BK / 4 / THREADS; ++j) {
      const int e = j * THREADS + tid, r = e / (BK / 4), c = e % (BK / 4) * 4;
      const int gr = m0 + r, gc = k0 + c;
      const float4 v = load4(A + (long long)gr * lda + gc, gr < M ? K - gc : 0);
      As[(c + 0) * BM + r] = v.x;
      As[(c + 1) * BM + r] = v.y;
      As[(c + 2) * BM + r] = v.z;
      As[(c + 3) * BM + r] = v.w;
    }
    // B: float4 along a row of B, stored as it is.
#pragma unroll
    for (int j = 0; j < BK * BN / 4 / THREADS; ++j) {
      const int e = j * THREADS + tid, r = e / (BN / 4), c = e % (BN / 4) * 4;
      const int gr = k0 + r, gc = n0 + c;
      *reinterpret_cast<float4*>(&Bs[r * BN + c]) = load4(B + (long long)gr * ldb + gc, gr < K ? N - gc : 0);
    }
    __syncthreads();  // the tiles are complete

#pragma unroll
    for (int k = 0; k < BK; ++k) {
      // Both reads are contiguous now: TM/4 + TN/4 16-byte loads for TM*TN multiply-adds.
#pragma unroll
      for (int i = 0; i < TM; i += 4) load4_shared(&a_reg[i], &As[k * BM + row0 + i]);
#pragma unroll
      for (int j = 0; j < TN; j += 4) load4_shared(&b_reg[j], &Bs[k * BN + col0 + j]);
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
        float* c = C + (long long)gr * ldc + gc;
        *c = beta == 0.f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *c;
      }
    }
  }
}
