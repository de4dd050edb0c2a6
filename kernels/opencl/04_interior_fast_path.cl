// 04_interior_fast_path — 03 with the bounds checks taken out of the work-groups that need none.
//
// Idea over 03: 03 checks every load against M, N and K and every store against M and N, so that
// any shape works. Only the work-groups on the bottom and right edges of C, and the last step
// over K, can ever fail those checks; all others are interior. Here a work-group decides once
// whether its tile is interior and then runs loops without any check (full vector loads, a
// fixed trip count), falling back to 03's checked code only where the matrices end. Branch-free
// loops are what a CPU OpenCL compiler vectorises across work-items and a GPU runs without
// divergence.
// Hardware: as 03 (registers, vector loads, local memory, barriers).
// Parameters and constraints: as 03 (MWG, NWG, KWG, MDIMC, NDIMC, VWM, VWN, SA, SB, KWI); the two
// kernels share one space() in opencl_kernels.cpp.

#define MWI (MWG / MDIMC)
#define NWI (NWG / NDIMC)
#define NVI (NWI / VWN)  // vectors of C per work-item along N
// The tiles are loaded with the work-items in their computing layout (CLBlast's MDIMA and NDIMB
// are MDIMC and NDIMC here): A as MDIMC rows by NDIMC vectors along K, B as MDIMC rows (along K)
// by NDIMC vectors along N.
#define MDIMA MDIMC
#define KDIMA NDIMC
#define NDIMB NDIMC
#define KDIMB MDIMC

// The same without checks, for a vector known to lie inside B.
inline realN load_b_inside(__global const REAL* B, int ldb, int k, int n) { return LOADN(0, B + k * ldb + n); }

__kernel __attribute__((reqd_work_group_size(NDIMC, MDIMC, 1)))
void gemm(const int M, const int N, const int K, const REAL alpha, const REAL beta,
          __global const REAL* restrict A, const int lda, __global const REAL* restrict B, const int ldb,
          __global REAL* C, const int ldc) {
  const int tn = get_local_id(0), tm = get_local_id(1);
  const int tid = tm * NDIMC + tn;
  const int m0 = get_group_id(1) * MWG, n0 = get_group_id(0) * NWG;
#if SA
  __local REAL Als[MWG][KWG];
#endif
#if SB
  __local REAL Bls[KWG][NWG];
#endif

  realN acc[MWI][NVI];
  for (int i = 0; i < MWI; ++i)
    for (int j = 0; j < NVI; ++j) acc[i][j] = 0;

  // Interior: the whole MWG x NWG tile lies inside C (the K edge is decided per step).
  const bool inside_mn = m0 + MWG <= M && n0 + NWG <= N;
  for (int k0 = 0; k0 < K; k0 += KWG) {
    const bool inside = inside_mn && k0 + KWG <= K;
#if SA
    // The A tile, MDIMA rows x KDIMA vectors of work-items at a time; zeros outside A.
    {
      const int la_m = tid % MDIMA, la_k = tid / MDIMA;
      for (int r = 0; r < MWG / MDIMA; ++r)
        for (int c = 0; c < KWG / (KDIMA * VWM); ++c) {
          const int row = la_m + r * MDIMA, col = (la_k + c * KDIMA) * VWM;
          const int m = m0 + row, k = k0 + col;
          if (inside || (m < M && k + VWM <= K)) {
            STOREM(LOADM(0, A + m * lda + k), 0, &Als[row][col]);
          } else {
            for (int x = 0; x < VWM; ++x) Als[row][col + x] = m < M && k + x < K ? A[m * lda + k + x] : 0;
          }
        }
    }
#endif
#if SB
    // The B tile, KDIMB rows x NDIMB vectors of work-items at a time.
    {
      const int lb_n = tid % NDIMB, lb_k = tid / NDIMB;
      for (int r = 0; r < KWG / KDIMB; ++r)
        for (int c = 0; c < NWG / (NDIMB * VWN); ++c) {
          const int row = lb_k + r * KDIMB, col = (lb_n + c * NDIMB) * VWN;
          STOREN(inside ? load_b_inside(B, ldb, k0 + row, n0 + col) : load_b(B, ldb, K, N, k0 + row, n0 + col), 0,
                 &Bls[row][col]);
        }
    }
#endif
#if SA || SB
    barrier(CLK_LOCAL_MEM_FENCE);
#endif

#if !SA || !SB
    if (inside) {  // no checks: the tile and this step over K are inside the matrices
#pragma unroll KWI
      for (int k = 0; k < KWG; ++k) {
        REAL a[MWI];
        for (int i = 0; i < MWI; ++i) {
#if SA
          a[i] = Als[tm + i * MDIMC][k];
#else
          a[i] = A[(m0 + tm + i * MDIMC) * lda + k0 + k];
#endif
        }
        realN b[NVI];
        for (int j = 0; j < NVI; ++j) {
#if SB
          b[j] = LOADN(0, &Bls[k][(tn + j * NDIMC) * VWN]);
#else
          b[j] = load_b_inside(B, ldb, k0 + k, n0 + (tn + j * NDIMC) * VWN);
#endif
        }
        for (int i = 0; i < MWI; ++i)
          for (int j = 0; j < NVI; ++j) acc[i][j] += a[i] * b[j];
      }
    } else
#endif
#pragma unroll KWI
    for (int k = 0; k < KWG; ++k) {
      REAL a[MWI];
      for (int i = 0; i < MWI; ++i) {
        const int row = tm + i * MDIMC;
#if SA
        a[i] = Als[row][k];
#else
        a[i] = m0 + row < M && k0 + k < K ? A[(m0 + row) * lda + k0 + k] : 0;
#endif
      }
      realN b[NVI];
      for (int j = 0; j < NVI; ++j) {
        const int col = (tn + j * NDIMC) * VWN;
#if SB
        b[j] = LOADN(0, &Bls[k][col]);
#else
        b[j] = load_b(B, ldb, K, N, k0 + k, n0 + col);
#endif
      }
      for (int i = 0; i < MWI; ++i)
        for (int j = 0; j < NVI; ++j) acc[i][j] += a[i] * b[j];
    }
#if SA || SB
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
  }

  // C = alpha * acc + beta * C, a vector at a time where the whole vector is inside C.
  if (inside_mn) {
    for (int i = 0; i < MWI; ++i)
      for (int j = 0; j < NVI; ++j) {
        __global REAL* c = C + (m0 + tm + i * MDIMC) * ldc + n0 + (tn + j * NDIMC) * VWN;
        STOREN(beta == 0 ? alpha * acc[i][j] : alpha * acc[i][j] + beta * LOADN(0, c), 0, c);
      }
    return;
  }
  for (int i = 0; i < MWI; ++i) {
    const int m = m0 + tm + i * MDIMC;
    if (m >= M) continue;
    for (int j = 0; j < NVI; ++j) {
      const int n = n0 + (tn + j * NDIMC) * VWN;
      __global REAL* c = C + m * ldc + n;
      if (n + VWN <= N) {
        const realN result = beta == 0 ? alpha * acc[i][j] : alpha * acc[i][j] + beta * LOADN(0, c);
        STOREN(result, 0, c);
      } else {
        REAL v[VWN];
        STOREN(acc[i][j], 0, v);
        for (int e = 0; e < VWN && n + e < N; ++e) c[e] = beta == 0 ? alpha * v[e] : alpha * v[e] + beta * c[e];
      }
    }
  }
}
