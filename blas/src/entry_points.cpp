// The standard GEMM entry points: Fortran-ABI sgemm_ and dgemm_ (column-major, LP64: 32-bit
// integers, the strings' hidden lengths ignored) and CBLAS cblas_sgemm and cblas_dgemm. Each
// checks its arguments as netlib's reference BLAS does, answers the quick returns, and hands the
// rest to the engine as one row-major problem: a column-major C = op(A) op(B) is the row-major
// C^T = op(B)^T op(A)^T, so A and B swap places and each keeps its transpose flag. Only these four
// symbols are exported (exports.map).
//
// Errors. An illegal argument is reported with netlib's parameter number: the Fortran entry
// points call XERBLA(name, info) as the process resolves xerbla_ (a program's own, else its BLAS
// library's), CBLAS cblas_xerbla(info, name, message) likewise; where neither exists, one line
// goes to stderr. C is not touched, and nothing is thrown or aborted from here.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <string>

#include "dispatch.hpp"

namespace gemmlab::blas {
namespace {

using FortranXerbla = void (*)(const char* name, const int* info, std::size_t name_length);
using CblasXerbla = void (*)(int info, const char* routine, const char* form, ...);

// Fortran's XERBLA: the routine's name blank-padded to six characters, as netlib passes it.
void report_fortran(const char* name6, int info) {
  if (auto* xerbla = reinterpret_cast<FortranXerbla>(dlsym(RTLD_DEFAULT, "xerbla_"))) {
    xerbla(name6, &info, 6);
    return;
  }
  std::fprintf(stderr, " ** On entry to %.6s parameter number %d had an illegal value\n", name6, info);
}

void report_cblas(const char* routine, int info, const char* what) {
  if (auto* xerbla = reinterpret_cast<CblasXerbla>(dlsym(RTLD_DEFAULT, "cblas_xerbla"))) {
    xerbla(info, routine, "Illegal %s\n", what);
    return;
  }
  std::fprintf(stderr, "Parameter %d to routine %s was incorrect (illegal %s)\n", info, routine, what);
}

bool transpose_flag(char t, bool& transposed) {
  switch (t) {
    case 'N': case 'n': transposed = false; return true;
    case 'T': case 't': case 'C': case 'c': transposed = true; return true;  // real: C means T
    default: return false;
  }
}

template <class T>
constexpr Precision precision_of() {
  return sizeof(T) == 4 ? Precision::fp32 : Precision::fp64;
}

// C = beta * C over the column-major M x N matrix C: what is left when alpha or K is zero.
template <class T>
void scale_column_major(int m, int n, T beta, T* c, int ldc) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      T& x = c[static_cast<std::ptrdiff_t>(j) * ldc + i];
      x = beta == T(0) ? T(0) : beta * x;
    }
}

// The row-major problem and its operands for the engine; the quick returns first (netlib's
// rules: nothing when M or N is zero, or when alpha or K is zero with beta one; with alpha zero,
// C = beta * C). `routine` names the call in messages and the log.
template <class T>
void run(Problem p, T alpha, T beta, const T* a, const T* b, T* c, const char* routine) {
  if (p.m == 0 || p.n == 0) return;
  if ((alpha == T(0) || p.k == 0) && beta == T(1)) return;
  p.alpha = alpha;
  p.beta = beta;
  p.precision = precision_of<T>();
  try {
    if (alpha == T(0) || p.k == 0) {  // row-major C (ldc) scaled by beta: the same loop, transposed view
      scale_column_major(static_cast<int>(p.n), static_cast<int>(p.m), beta, c, static_cast<int>(p.ldc));
      return;
    }
    Engine::instance().gemm(p, a, b, c, routine);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemmlab-blas: %s: %s\n", routine, e.what());
  } catch (...) {
    std::fprintf(stderr, "gemmlab-blas: %s failed\n", routine);
  }
}

// The row-major problem C = op(A) op(B) (precision, alpha and beta are set by run()).
Problem row_major_problem(bool ta, bool tb, int m, int n, int k, int lda, int ldb, int ldc) {
  Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.trans_a = ta;
  p.lda = lda;
  p.trans_b = tb;
  p.ldb = ldb;
  p.ldc = ldc;
  return p;
}

// A column-major GEMM (Fortran's and CBLAS's ColMajor) as the row-major problem C^T = op(B)^T op(A)^T:
// the row-major A is B, the row-major B is A.
Problem column_major(bool ta, bool tb, int m, int n, int k, int lda, int ldb, int ldc) {
  return row_major_problem(tb, ta, n, m, k, ldb, lda, ldc);
}

template <class T>
void fortran_gemm(const char* name6, const char* routine, char transa, char transb, int m, int n, int k, T alpha,
                  const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc) {
  bool ta = false, tb = false;
  int info = 0;
  if (!transpose_flag(transa, ta)) info = 1;
  else if (!transpose_flag(transb, tb)) info = 2;
  else if (m < 0) info = 3;
  else if (n < 0) info = 4;
  else if (k < 0) info = 5;
  else if (lda < std::max(1, ta ? k : m)) info = 8;
  else if (ldb < std::max(1, tb ? n : k)) info = 10;
  else if (ldc < std::max(1, m)) info = 13;
  if (info != 0) return report_fortran(name6, info);
  run(column_major(ta, tb, m, n, k, lda, ldb, ldc), alpha, beta, b, a, c, routine);
}

// CBLAS enumerators (cblas.h).
constexpr int row_major = 101, col_major = 102;
constexpr int no_trans = 111, trans = 112, conj_trans = 113;

bool cblas_transpose(int t, bool& transposed) {
  if (t != no_trans && t != trans && t != conj_trans) return false;
  transposed = t != no_trans;
  return true;
}

template <class T>
void cblas_gemm(const char* routine, int layout, int transa, int transb, int m, int n, int k, T alpha, const T* a,
                int lda, const T* b, int ldb, T beta, T* c, int ldc) {
  bool ta = false, tb = false;
  const bool row = layout == row_major;
  // Parameter numbers are positions in the CBLAS call: 1 layout, 2 TransA, 3 TransB, 4 M, 5 N,
  // 6 K, 9 lda, 11 ldb, 14 ldc; the leading dimensions are checked against the layout's rows.
  if (layout != row_major && layout != col_major) return report_cblas(routine, 1, "layout");
  if (!cblas_transpose(transa, ta)) return report_cblas(routine, 2, "TransA");
  if (!cblas_transpose(transb, tb)) return report_cblas(routine, 3, "TransB");
  if (m < 0) return report_cblas(routine, 4, "M");
  if (n < 0) return report_cblas(routine, 5, "N");
  if (k < 0) return report_cblas(routine, 6, "K");
  const int a_row_length = row ? (ta ? m : k) : (ta ? k : m);
  const int b_row_length = row ? (tb ? k : n) : (tb ? n : k);
  if (lda < std::max(1, a_row_length)) return report_cblas(routine, 9, "lda");
  if (ldb < std::max(1, b_row_length)) return report_cblas(routine, 11, "ldb");
  if (ldc < std::max(1, row ? n : m)) return report_cblas(routine, 14, "ldc");
  if (!row) return run(column_major(ta, tb, m, n, k, lda, ldb, ldc), alpha, beta, b, a, c, routine);
  run(row_major_problem(ta, tb, m, n, k, lda, ldb, ldc), alpha, beta, a, b, c, routine);
}

}  // namespace
}  // namespace gemmlab::blas

extern "C" {

void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc) {
  gemmlab::blas::fortran_gemm("SGEMM ", "sgemm_", *transa, *transb, *m, *n, *k, *alpha, a, *lda, b, *ldb, *beta, c,
                              *ldc);
}

void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc) {
  gemmlab::blas::fortran_gemm("DGEMM ", "dgemm_", *transa, *transb, *m, *n, *k, *alpha, a, *lda, b, *ldb, *beta, c,
                              *ldc);
}

void cblas_sgemm(int layout, int transa, int transb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc) {
  gemmlab::blas::cblas_gemm("cblas_sgemm", layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void cblas_dgemm(int layout, int transa, int transb, int m, int n, int k, double alpha, const double* a, int lda,
                 const double* b, int ldb, double beta, double* c, int ldc) {
  gemmlab::blas::cblas_gemm("cblas_dgemm", layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // extern "C"
