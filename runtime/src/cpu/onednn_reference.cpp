// oneDNN as a reference: dnnl_sgemm, Intel's just-in-time generated fp32 GEMM (row-major, like
// gemmlab's problems, with 'N'/'T' transposes). oneDNN has no fp64 GEMM. Opened with
// dlopen(RTLD_LOCAL) (SharedLibrary; GEMMLAB_ONEDNN_LIBRARY overrides the file CMake found); its
// declarations are repeated here from oneDNN's documented C API so that building gemmlab does not
// need oneDNN's headers. Its threads are OpenMP's (Debian's build): set_threads
// sets the OpenMP default of the calling thread, which oneDNN's parallel regions follow.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "gemmlab/cpu.hpp"
#include "shared_library.hpp"

namespace gemmlab::cpu {
namespace {

using DnnlDim = std::int64_t;  // dnnl_dim_t
using SgemmFn = int (*)(char transa, char transb, DnnlDim m, DnnlDim n, DnnlDim k, float alpha, const float* a,
                        DnnlDim lda, const float* b, DnnlDim ldb, float beta, float* c, DnnlDim ldc);
struct DnnlVersion {  // dnnl_version_t
  int major, minor, patch;
  const char* hash;
  unsigned cpu_runtime, gpu_runtime;
};
using VersionFn = const DnnlVersion* (*)();
using SetThreadsFn = void (*)(int);  // omp_set_num_threads

class OneDnn final : public Reference {
 public:
  OneDnn()
      : library_({std::getenv("GEMMLAB_ONEDNN_LIBRARY"), GEMMLAB_ONEDNN_LIBRARY, "libdnnl.so.3", "libdnnl.so.2"}, "onednn",
                 "cannot load onednn: libdnnl.so not found (Debian: libdnnl-dev)") {
    library_.load(sgemm_, "dnnl_sgemm");
    library_.load(version_, "dnnl_version");
    library_.load(set_threads_, "omp_set_num_threads");
  }

  std::string name() const override { return "onednn"; }
  std::string version() const override {
    const DnnlVersion* v = version_();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
           " (" + library_.file() + ")";
  }
  void set_threads(int threads) override { set_threads_(threads); }

  void gemm(const Problem& p, const Operands& ops) override {
    validate(p, ops.a, ops.b, ops.c);
    if (p.precision != Precision::fp32)
      throw std::invalid_argument("onednn has no " + std::string(to_string(p.precision)) + " GEMM (dnnl_sgemm: fp32)");
    if (p.m == 0 || p.n == 0) return;
    const int status = sgemm_(p.trans_a ? 'T' : 'N', p.trans_b ? 'T' : 'N', p.m, p.n, p.k, static_cast<float>(p.alpha),
                              static_cast<const float*>(ops.a), p.lda, static_cast<const float*>(ops.b), p.ldb,
                              static_cast<float>(p.beta), static_cast<float*>(ops.c), p.ldc);
    if (status != 0) throw std::runtime_error("dnnl_sgemm failed with status " + std::to_string(status));
  }

 private:
  SharedLibrary library_;  // never closed: oneDNN's threads and generated code may outlive us
  SgemmFn sgemm_ = nullptr;
  VersionFn version_ = nullptr;
  SetThreadsFn set_threads_ = nullptr;
};
}  // namespace

std::vector<std::string> reference_names() {
  std::vector<std::string> names = cblas_names();
  names.emplace_back("onednn");
  names.emplace_back("libxsmm");
  return names;
}

std::unique_ptr<Reference> load_reference(const std::string& name) {
  if (name == "onednn") return std::make_unique<OneDnn>();
  if (name == "libxsmm") return load_libxsmm();
  for (const std::string& cblas : cblas_names())
    if (name == cblas) return load_cblas(name);
  throw std::invalid_argument("unknown reference '" + name + "'; references: openblas, blis, onednn, libxsmm");
}

}  // namespace gemmlab::cpu
