// 03_register_tiled — each work-item computes an MWI x NWI block of C in registers, from tiles
// of A and B that the work-group optionally stages in local memory; vector loads and stores.
//
// Idea over 02: in 02 every product costs two local-memory reads. Here a work-item keeps MWI
// values of A and NWI values of B in registers for each k and forms all MWI x NWI products with
// them, so a loaded value is used MWI or NWI times. The work-group tile (MWG x NWG, KWG deep) is
// loaded by all its work-items, either into local memory (SA, SB) or read straight from global
// memory where a cache serves it as well (CPUs). B and C are read and written VWN elements at a
// time along N, A VWM at a time along K (their contiguous directions).
// Hardware: registers, vector loads (vloadn; realN, LOADN, load_b: vector_access.clh), local
// memory, barriers.
// Parameters (the names of CLBlast's tuned GEMM; docs/opencl.md maps them to its records):
//   MWG, NWG, KWG  work-group tile: rows of C, columns of C, depth per step;
//   MDIMC, NDIMC   work-items along M and N computing (the work-group is NDIMC x MDIMC);
//   VWM, VWN       vector widths: A along K, B and C along N;
//   SA, SB         stage the A / B tile in local memory (1) or read it from global memory (0);
//   KWI            unroll factor of the loop over the tile's depth.
// Constraints: whole rows and whole vectors of C per work-item; a tile depth KWG that the
//   work-items' loading layout and the unroll factor divide; VWM only with a staged A; the
//   work-group within the device's work-group size; the staged tiles within local memory. The
//   exact expressions, each with its reason, are in this kernel's space() (opencl_kernels.cpp;
//   `gemmlab kernels --backend opencl` prints them).

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

  for (int k0 = 0; k0 < K; k0 += KWG) {
#if SA
    // The A tile, MDIMA rows x KDIMA vectors of work-items at a time; zeros outside A.
    {
      const int la_m = tid % MDIMA, la_k = tid / MDIMA;
      for (int r = 0; r < MWG / MDIMA; ++r)
        for (int c = 0; c < KWG / (KDIMA * VWM); ++c) {
          const int row = la_m + r * MDIMA, col = (la_k + c * KDIMA) * VWM;
          const int m = m0 + row, k = k0 + col;
          if (m < M && k + VWM <= K) {
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
          STOREN(load_b(B, ldb, K, N, k0 + row, n0 + col), 0, &Bls[row][col]);
        }
    }
#endif
#if SA || SB
    barrier(CLK_LOCAL_MEM_FENCE);
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
