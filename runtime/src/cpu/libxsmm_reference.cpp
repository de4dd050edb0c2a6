// libxsmm as a reference: its tiled OpenMP GEMM (libxsmm_xgemm_omp), built from JIT-generated
// small-matrix kernels, in fp32 and fp64. gemmlab's module libgemmlab_libxsmm.so carries it
// (src/cpu/libxsmm_module.cpp: Debian ships libxsmm only as static archives) and is opened with
// dlopen(RTLD_LOCAL) like the other references; GEMMLAB_LIBXSMM_MODULE overrides the file CMake
// built. libxsmm is column-major: a row-major C = op(A) op(B) is computed as the column-major
// C^T = op(B)^T op(A)^T, B and A exchanging places, each keeping its transpose.
#include <cstdlib>
#include <stdexcept>

#include "gemmlab/cpu.hpp"
#include "shared_library.hpp"

#ifndef GEMMLAB_LIBXSMM_MODULE
#define GEMMLAB_LIBXSMM_MODULE ""
#endif

namespace gemmlab::cpu {
namespace {

template <class T>
using GemmFn = void (*)(char transa, char transb, long long m, long long n, long long k, T alpha, const T* a,
                        long long lda, const T* b, long long ldb, T beta, T* c, long long ldc);
using VersionFn = const char* (*)();
using SetThreadsFn = void (*)(int);

class Libxsmm final : public Reference {
 public:
  Libxsmm()
      : library_({std::getenv("GEMMLAB_LIBXSMM_MODULE"), GEMMLAB_LIBXSMM_MODULE}, "libxsmm",
                 "cannot load libxsmm: gemmlab was built without its libxsmm module (Debian: libxsmm-dev)") {
    library_.load(sgemm_, "gemmlab_libxsmm_sgemm");
    library_.load(dgemm_, "gemmlab_libxsmm_dgemm");
    library_.load(version_, "gemmlab_libxsmm_version");
    library_.load(set_threads_, "gemmlab_libxsmm_set_threads");
  }

  std::string name() const override { return "libxsmm"; }
  std::string version() const override { return std::string(version_()) + " (" + library_.file() + ")"; }
  void set_threads(int threads) override { set_threads_(threads); }

  void gemm(const Problem& p, const Operands& ops) override {
    validate(p, ops.a, ops.b, ops.c);
    if (p.m == 0 || p.n == 0) return;
    const char ta = p.trans_a ? 'T' : 'N', tb = p.trans_b ? 'T' : 'N';
    if (p.precision == Precision::fp32)
      sgemm_(tb, ta, p.n, p.m, p.k, static_cast<float>(p.alpha), static_cast<const float*>(ops.b), p.ldb,
             static_cast<const float*>(ops.a), p.lda, static_cast<float>(p.beta), static_cast<float*>(ops.c), p.ldc);
    else if (p.precision == Precision::fp64)
      dgemm_(tb, ta, p.n, p.m, p.k, p.alpha, static_cast<const double*>(ops.b), p.ldb,
             static_cast<const double*>(ops.a), p.lda, p.beta, static_cast<double*>(ops.c), p.ldc);
    else
      throw std::invalid_argument("libxsmm has no " + std::string(to_string(p.precision)) + " GEMM here (fp32, fp64)");
  }

 private:
  SharedLibrary library_;
  GemmFn<float> sgemm_ = nullptr;
  GemmFn<double> dgemm_ = nullptr;
  VersionFn version_ = nullptr;
  SetThreadsFn set_threads_ = nullptr;
};
}  // namespace

std::unique_ptr<Reference> load_libxsmm() { return std::make_unique<Libxsmm>(); }

}  // namespace gemmlab::cpu
