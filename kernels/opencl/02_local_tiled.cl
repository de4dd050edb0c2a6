// 02_local_tiled — TS x TS tiles of A and B staged in local memory, shared by the work-group.
//
// Idea over 01: in 01 every work-item reads a whole row of A and column of B from global memory,
// so each element is read TS times by a work-group. Here the work-group first copies a TS x TS
// tile of A and of B into local memory (each work-item one element of each), waits at a barrier,
// and then every work-item takes its TS products from there: global traffic falls by TS.
// Hardware: local memory (a scratchpad on a GPU; cache-resident arrays on a CPU), barriers.
// Parameters: TS (tile side; the work-group is TS x TS).
// Constraints: the TS x TS work-group within the device's work-group size; the two tiles within
// local memory (exact expressions: this kernel's space() in opencl_kernels.cpp).

__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void gemm(const int M, const int N, const int K, const REAL alpha, const REAL beta,
          __global const REAL* restrict A, const int lda, __global const REAL* restrict B, const int ldb,
          __global REAL* C, const int ldc) {
  __local REAL As[TS][TS];
  __local REAL Bs[TS][TS];
  const int tn = get_local_id(0), tm = get_local_id(1);
  const int n = get_group_id(0) * TS + tn, m = get_group_id(1) * TS + tm;
  REAL sum = 0;
  for (int k0 = 0; k0 < K; k0 += TS) {
    // Outside the matrices the tiles hold zeros, which add nothing.
    As[tm][tn] = m < M && k0 + tn < K ? A[m * lda + k0 + tn] : 0;
    Bs[tm][tn] = k0 + tm < K && n < N ? B[(k0 + tm) * ldb + n] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TS; ++k) sum += As[tm][k] * Bs[k][tn];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (m < M && n < N) C[m * ldc + n] = beta == 0 ? alpha * sum : alpha * sum + beta * C[m * ldc + n];
}
