// 07_warp_tiled — 06 with a level between block and thread: each warp owns a WM x WN tile of C.
//
// Idea over 06: in 06 the threads of a block take consecutive TM x TN tiles row by row, so the
// 32 threads of a warp cover a flat strip of C (at the defaults 2 x 16 thread tiles: 16 rows x
// 128 columns), need 16 + 128 values of A and B per step k, and read B 32 bytes apart from lane
// to lane (bank conflicts). Here the tile of C is cut three times:
//   block:  BM x BN, from BM x BK and BK x BN tiles in shared memory, copied as in 06;
//   warp:   WM x WN, a compact piece: WM + WN values per step for WM*WN results (64 + 32 at the
//           defaults, against the strip's 16 + 128 for as many);
//   thread: the warp tile is covered by WMITER x WNITER sub-tiles of WSUBM x WSUBN, in each of
//           which the 32 lanes own TM x TN pieces side by side. Lanes in one row of a sub-tile
//           read the same values of A (broadcast); neighbouring lanes read neighbouring 16-byte
//           pieces of B (no bank conflicts).
// A thread thus holds WMITER*TM x WNITER*TN results, in runs of TM rows (TN columns) that lie
// WSUBM (WSUBN) apart. The warp tile is also the unit that the later steps hand to tensor cores.
// Hardware: warps (32 threads issued together) and the 32 four-byte banks of shared memory.
// Parameters: BM, BN — C per block; BK — depth of the shared tiles; WM, WN — C per warp;
//             WNITER — sub-tiles across a warp tile (WMITER follows); TM, TN — C per lane and
//             sub-tile, multiples of 4 (16-byte reads). fp32 only.
// Constraints: whole warp tiles in the block tile; threads per block within the device's limit;
//              a whole number of sub-tiles (WMITER) down a warp tile, and lanes' pieces that tile
//              a sub-tile exactly; each thread copying whole float4s of each tile; the shared
//              tiles within the shared memory a block may use without opting in; registers as 05.
//              The exact expressions, WMITER's among them, are in the specification
//              (kernels/cuda/simt_kernels.cpp; `gemmlab kernels`).
//
// Launch: grid (ceil(N / BN), ceil(M / BM)), block ((BM/WM)*(BN/WN)*32).

constexpr int WARPS = (BM / WM) * (BN / WN);
constexpr int THREADS = WARPS * 32;
constexpr int WMITER = WM * WN / (32 * TM * TN * WNITER);  // sub-tiles down a warp tile
constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;    // one sub-tile: 32 lanes' pieces
constexpr int LANE_COLS = WSUBN / TN;                      // lanes across a sub-tile

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

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;  // this block's tile of C
  const int warp_row0 = warp / (BN / WN) * WM;           // this warp's tile within the block's
  const int warp_col0 = warp % (BN / WN) * WN;
  const int lane_row0 = lane / LANE_COLS * TM;  // this lane's piece within a sub-tile
  const int lane_col0 = lane % LANE_COLS * TN;
  // Result (wm*TM + i, wn*TN + j) of this thread is C[m0 + row(wm, i)][n0 + col(wn, j)] with
  // row(wm, i) = warp_row0 + wm*WSUBM + lane_row0 + i, col(wn, j) = warp_col0 + wn*WSUBN + lane_col0 + j.

  float acc[WMITER * TM][WNITER * TN];
#pragma unroll
  for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
    for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.f;
  float a_reg[WMITER * TM], b_reg[WNITER * TN];

  for (int k0 = 0; k0 < K; k0 += BK) {
    // The tiles are copied as in 06: float4 along rows of A (stored transposed) and of B.
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
#pragma unroll
    for (int j = 0; j < BK * BN / 4 / THREADS; ++j) {
      const int e = j * THREADS + tid, r = e / (BN / 4), c = e % (BN / 4) * 4;
      const int gr = k0 + r, gc = n0 + c;
      *reinterpret_cast<float4*>(&Bs[r * BN + c]) = load4(B + (long long)gr * ldb + gc, gr < K ? N - gc : 0);
    }
    __syncthreads();  // the tiles are complete

#pragma unroll
    for (int k = 0; k < BK; ++k) {
      // This thread's values of A and B for step k, one TM (TN) run per sub-tile.
#pragma unroll
      for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; i += 4)
          load4_shared(&a_reg[wm * TM + i], &As[k * BM + warp_row0 + wm * WSUBM + lane_row0 + i]);
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
          load4_shared(&b_reg[wn * TN + j], &Bs[k * BN + warp_col0 + wn * WSUBN + lane_col0 + j]);
#pragma unroll
      for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
    }
    __syncthreads();  // everyone is done with the tiles before the next copy overwrites them
  }

  // beta == 0: C is not read (it may hold NaN).
#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int gr = m0 + warp_row0 + wm * WSUBM + lane_row0 + i;
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          const int gc = n0 + warp_col0 + wn * WSUBN + lane_col0 + j;
          if (gr < M && gc < N) {
            const float r = acc[wm * TM + i][wn * TN + j];
            float* c = C + (long long)gr * ldc + gc;
            *c = beta == 0.f ? alpha * r : alpha * r + beta * *c;
          }
        }
    }
}
