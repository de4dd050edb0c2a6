// 08_cp_async_pipeline — 07 fed by a STAGES-deep pipeline of asynchronous copies (cp.async).
//
// Idea over 07: in 07 a block stops at every tile: its threads load the next tiles into
// registers, store them to shared memory, wait at the barrier, and only then compute; the
// latency of global memory is hidden only by other blocks on the SM. Here shared memory holds
// STAGES tiles of A and B, and the copies of tile t + STAGES - 1 are issued before tile t is
// computed. cp.async copies from global to shared memory without passing through registers and
// without making the thread wait: the copies of the next tiles are in flight while the FMAs of
// this one run. The loop per tile t is
//   wait until tile t has landed (cp.async.wait_group) and __syncthreads();
//   issue the copies of tile t + STAGES - 1 into the stage tile t - 1 used (cp.async, commit);
//   compute tile t, as in 07.
// The one barrier per tile both publishes tile t and guarantees that all threads have finished
// tile t - 1 before its stage is overwritten. Every iteration commits one group, empty past the
// last tile, so "all but the newest STAGES - 2 groups complete" always means "tile t is here".
// cp.async cannot transpose 16 bytes, so A (kept transposed, As[k][m], as since 06) moves as
// 4-byte copies: a warp copies a patch of 4 rows x 8 columns of A (one 32-byte sector per row),
// and the rows of the transposed tile are padded to BM + 4 floats so that its 32 stores fall
// into 32 different banks. B moves 16 bytes per copy, zero-filled past the right edge (the
// src-size operand); where a row of B is not 16-byte aligned, 4 bytes per copy.
// Hardware: sm_80+: cp.async (LDGSTS), commit/wait groups; dynamic shared memory, beyond 48 KiB
// per block when the launch asks for it (the runtime opts in).
// Parameters: as 07 (BM, BN, BK, WM, WN, WNITER, TM, TN) and STAGES, the shared-memory stages
//             (STAGES - 1 tiles in flight while one is computed; 2 is double buffering). fp32 only.
// Constraints: as 07, except that every thread issues the same copies (A in 4-byte, B in 16-byte
//              pieces) and the STAGES stages fit the shared memory a block may opt in to; BK's
//              allowed values are multiples of 8 (the 4 x 8 patches of A). The exact expressions
//              are in the specification (kernels/cuda/simt_kernels.cpp; `gemmlab kernels`).
//
// Launch: grid (ceil(N / BN), ceil(M / BM)), block ((BM/WM)*(BN/WN)*32), dynamic shared memory
//         STAGES * (BK*(BM+4) + BK*BN) * 4 bytes.

constexpr int WARPS = (BM / WM) * (BN / WN);
constexpr int THREADS = WARPS * 32;
constexpr int WMITER = WM * WN / (32 * TM * TN * WNITER);  // sub-tiles down a warp tile
constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;    // one sub-tile: 32 lanes' pieces
constexpr int LANE_COLS = WSUBN / TN;                      // lanes across a sub-tile
constexpr int AS_STRIDE = BM + 4;                          // padded row of the transposed A tile
constexpr int STAGE_FLOATS = BK * AS_STRIDE + BK * BN;     // one stage: A tile, then B tile

// The asynchronous copy instructions (PTX, sm_80+). They take the destination as an address in
// the shared-memory window (32 bits; see shared_address). A copy of 4 or 16 bytes from global
// address g reads only the first src_bytes of them and fills the rest with zeros.
__device__ __forceinline__ unsigned shared_address(const float* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async_4(unsigned dst, const float* g, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(g), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_16(unsigned dst, const float* g, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(g), "r"(src_bytes)
               : "memory");
}
// Closes the group of copies this thread issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

// Four floats of shared memory starting at p (16-byte aligned) into r[0..3]: one 16-byte load.
__device__ __forceinline__ void load4_shared(float* r, const float* p) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
}

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm(int M, int N, int K, TC alpha, const TA* A, int lda, const TA* B, int ldb, TC beta, TC* C, int ldc) {
  // fp32 only: TA and TC are float. STAGES stages of [As: BK x AS_STRIDE | Bs: BK x BN].
  extern __shared__ __align__(16) float smem[];

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;  // this block's tile of C
  const int warp_row0 = warp / (BN / WN) * WM;           // this warp's tile within the block's
  const int warp_col0 = warp % (BN / WN) * WN;
  const int lane_row0 = lane / LANE_COLS * TM;  // this lane's piece within a sub-tile
  const int lane_col0 = lane % LANE_COLS * TN;

  // Issues this thread's copies of tile t (columns t*BK .. of A, rows t*BK .. of B) into
  // `stage`; returns at once. Elements outside the matrices are zero-filled (src-size 0, with
  // the matrix's own address as a harmless source). Destinations are shared-window byte
  // addresses, computed in 32 bits.
  const unsigned smem_base = shared_address(smem);
  auto issue_tile = [&](int t, int stage) {
    const unsigned As = smem_base + 4 * (stage * STAGE_FLOATS);
    const unsigned Bs = As + 4 * (BK * AS_STRIDE);
    const int k0 = t * BK;
#pragma unroll
    for (int j = 0; j < BM * BK / THREADS; ++j) {
      // This copy's element (r, c) of the tile; the 32 copies of a warp make one 4 x 8 patch
      // (THREADS % 32 == 0, so all lanes of a warp are in the same patch).
      const int patch = (j * THREADS + tid) / 32;
      const int r = patch % (BM / 4) * 4 + lane / 8, c = patch / (BM / 4) * 8 + lane % 8;
      const int gr = m0 + r, gc = k0 + c;
      const bool inside = gr < M && gc < K;
      cp_async_4(As + 4 * (c * AS_STRIDE + r), inside ? A + (long long)gr * lda + gc : A, inside ? 4 : 0);
    }
#pragma unroll
    for (int j = 0; j < BK * BN / 4 / THREADS; ++j) {
      const int e = j * THREADS + tid, r = e / (BN / 4), c = e % (BN / 4) * 4;
      const int gr = k0 + r, gc = n0 + c;
      const int left = gr >= K ? 0 : N - gc >= 4 ? 4 : N - gc > 0 ? N - gc : 0;  // inside, 0..4
      const float* g = B + (long long)gr * ldb + gc;
      const unsigned dst = Bs + 4 * (r * BN + c);
      if (left > 0 && (reinterpret_cast<unsigned long long>(g) & 15) == 0) {
        cp_async_16(dst, g, 4 * left);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) cp_async_4(dst + 4 * q, q < left ? g + q : B, q < left ? 4 : 0);
      }
    }
  };

  float acc[WMITER * TM][WNITER * TN];
#pragma unroll
  for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
    for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.f;
  float a_reg[WMITER * TM], b_reg[WNITER * TN];

  const int tiles = (K + BK - 1) / BK;
  // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) issue_tile(s, s);
    cp_async_commit();
  }

  for (int t = 0; t < tiles; ++t) {
    // Groups committed so far: t + STAGES - 1; once at most STAGES - 2 are in flight, the
    // first t + 1 have landed, tile t among them.
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile t is complete for everyone, and everyone is done with tile t - 1

    // Refill the stage that tile t - 1 used with tile t + STAGES - 1.
    const int next = t + STAGES - 1;
    if (next < tiles) issue_tile(next, next % STAGES);
    cp_async_commit();

    const float* As = smem + (t % STAGES) * STAGE_FLOATS;
    const float* Bs = As + BK * AS_STRIDE;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      // This thread's values of A and B for step k, one TM (TN) run per sub-tile, as in 07.
#pragma unroll
      for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; i += 4)
          load4_shared(&a_reg[wm * TM + i], &As[k * AS_STRIDE + warp_row0 + wm * WSUBM + lane_row0 + i]);
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
    // No barrier here: the next iteration's barrier comes before any copy into this stage.
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
