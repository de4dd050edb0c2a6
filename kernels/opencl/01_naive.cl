// 01_naive — one work-item per element of C, a dot product over K.
//
// Idea: the definition of C = alpha*A*B + beta*C, one work-item for each of its M x N elements;
// work-items along dimension 0 take neighbouring columns, so a work-group's reads of B and
// writes of C are contiguous, while each work-item walks a row of A on its own.
// Hardware: work-items and work-groups (SIMT lanes on a GPU; vectorised loops over work-items
// on a CPU through pocl).
// Parameters: WGN x WGM, the work-group shape (columns x rows of C).
// Constraints: the work-group within the device's work-group size. The exact expressions are in
// this kernel's space() (opencl_kernels.cpp), as `gemmlab kernels --backend opencl` prints them.
// Every kernel of this folder: row-major A (M x K, lda), B (K x N, ldb), C (M x N, ldc); REAL is
// float or double; C is not read when beta == 0.

__kernel __attribute__((reqd_work_group_size(WGN, WGM, 1)))
void gemm(const int M, const int N, const int K, const REAL alpha, const REAL beta,
          __global const REAL* restrict A, const int lda, __global const REAL* restrict B, const int ldb,
          __global REAL* C, const int ldc) {
  const int n = get_global_id(0), m = get_global_id(1);
  if (m >= M || n >= N) return;
  REAL sum = 0;
  for (int k = 0; k < K; ++k) sum += A[m * lda + k] * B[k * ldb + n];
  C[m * ldc + n] = beta == 0 ? alpha * sum : alpha * sum + beta * C[m * ldc + n];
}
