// libgemmlab_libxsmm.so: libxsmm as a module that gemmlab opens at run time like the other
// reference libraries. Debian packages libxsmm only as static archives (position-independent);
// linked into this module, libxsmm's symbols, its JIT state and the BLAS it falls back to stay
// out of gemmlab's own namespace (dlopen with RTLD_LOCAL), and gemmlab builds and runs without
// libxsmm. The entry points take column-major (Fortran) arguments, as libxsmm does.
#include <libxsmm.h>
#include <omp.h>

#include <string>

namespace {
// libxsmm's tiled, OpenMP-parallel GEMM: small-matrix JIT kernels over tiles of the problem.
template <class T>
void gemm(libxsmm_gemm_precision precision, char transa, char transb, long long m, long long n, long long k,
          T alpha, const T* a, long long lda, const T* b, long long ldb, T beta, T* c, long long ldc) {
  const libxsmm_blasint mm = m, nn = n, kk = k, la = lda, lb = ldb, lc = ldc;
  libxsmm_xgemm_omp(precision, precision, &transa, &transb, &mm, &nn, &kk, &alpha, a, &la, b, &lb, &beta, c, &lc);
}
}  // namespace

extern "C" {

__attribute__((visibility("default"))) const char* gemmlab_libxsmm_version() {
  static const std::string version = "libxsmm " LIBXSMM_CONFIG_VERSION " (" + std::string(libxsmm_get_target_arch()) +
                                     " code, static archives in gemmlab's module)";
  return version.c_str();
}

__attribute__((visibility("default"))) void gemmlab_libxsmm_set_threads(int threads) { omp_set_num_threads(threads); }

__attribute__((visibility("default"))) void gemmlab_libxsmm_sgemm(char transa, char transb, long long m, long long n,
                                                                  long long k, float alpha, const float* a,
                                                                  long long lda, const float* b, long long ldb,
                                                                  float beta, float* c, long long ldc) {
  gemm(LIBXSMM_GEMM_PRECISION_F32, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

__attribute__((visibility("default"))) void gemmlab_libxsmm_dgemm(char transa, char transb, long long m, long long n,
                                                                  long long k, double alpha, const double* a,
                                                                  long long lda, const double* b, long long ldb,
                                                                  double beta, double* c, long long ldc) {
  gemm(LIBXSMM_GEMM_PRECISION_F64, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
}
