// OpenBLAS and BLIS as references, through their CBLAS interface.
//
// Both libraries export cblas_sgemm/cblas_dgemm, so linking both into one program would let the
// dynamic linker pick one for every caller. Each is therefore opened with dlopen(RTLD_LOCAL) from
// the file CMake found at configure time (GEMMLAB_<NAME>_LIBRARY overrides it at run time), and
// its functions are looked up in that handle only.
#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>

#include "gemmlab/cpu.hpp"
#include "gemmlab/sanitizer.hpp"

namespace gemmlab::cpu {
namespace {

// CBLAS enumerators (cblas.h): CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112.
constexpr int cblas_row_major = 101;
constexpr int cblas_no_trans = 111;
constexpr int cblas_trans = 112;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                         int, float, float*, int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                         int, double, double*, int);
using SetThreadsFn = void (*)(int);              // openblas_set_num_threads(int)
using SetThreadsDimFn = void (*)(std::int64_t);  // bli_thread_set_num_threads(dim_t): 64 bits
using VersionFn = const char* (*)();

struct LibrarySpec {
  const char* name;
  const char* env;             // run-time override of the path
  const char* configured;      // path found by CMake
  const char* soname;          // fallback for the dynamic loader's search
  const char* set_threads;
  // Whether it takes BLIS's dim_t (64 bits) rather than an int (the call's type must be the
  // function's: through an int, the upper half of the register is whatever was left there).
  bool set_threads_takes_dim_t;
  const char* version;
};

const LibrarySpec specs[] = {
    {"openblas", "GEMMLAB_OPENBLAS_LIBRARY", GEMMLAB_OPENBLAS_LIBRARY, "libopenblas.so.0",
     "openblas_set_num_threads", false, "openblas_get_config"},
    {"blis", "GEMMLAB_BLIS_LIBRARY", GEMMLAB_BLIS_LIBRARY, "libblis.so.4", "bli_thread_set_num_threads", true,
     "bli_info_get_version_str"},
};

// The library's calls to its own exported functions stay inside it (RTLD_DEEPBIND). gemmlab
// itself links the system's BLAS (OpenBLAS, through liblapack), whose dgemm_ otherwise took BLIS's
// internal calls: `--reference blis` ran OpenBLAS on all cores whatever --threads said (fp64
// 512^3 with --threads 1: 60-73 GFLOP/s, one core's ceiling 51; 39-45 with DEEPBIND).
// AddressSanitizer refuses RTLD_DEEPBIND: a sanitized build keeps the old lookup.
constexpr int own_symbols_first = address_sanitizer ? 0 : RTLD_DEEPBIND;

int as_blas_int(std::int64_t value, const char* what) {
  if (value > INT_MAX)
    throw std::invalid_argument(std::string(what) + "=" + std::to_string(value) +
                                " exceeds the 32-bit CBLAS interface");
  return static_cast<int>(value);
}

class CblasLibrary final : public Reference {
 public:
  explicit CblasLibrary(const LibrarySpec& spec) : spec_(spec) {
    std::string tried;
    for (const char* path : {static_cast<const char*>(std::getenv(spec.env)), spec.configured, spec.soname}) {
      if (path == nullptr || *path == '\0') continue;
      handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL | own_symbols_first);
      if (handle_ != nullptr) {
        path_ = path;
        break;
      }
      tried += std::string(tried.empty() ? "" : "; ") + dlerror();
    }
    if (handle_ == nullptr)
      throw std::runtime_error(std::string("cannot load ") + spec.name + ": " + tried);
    sgemm_ = reinterpret_cast<SgemmFn>(symbol("cblas_sgemm"));
    dgemm_ = reinterpret_cast<DgemmFn>(symbol("cblas_dgemm"));
    set_threads_ = symbol(spec.set_threads);
    version_ = reinterpret_cast<VersionFn>(symbol(spec.version));
  }
  ~CblasLibrary() override {
    // Not dlclose'd: the libraries' thread pools may still be parked on their code.
  }

  std::string name() const override { return spec_.name; }
  std::string version() const override { return std::string(version_()) + " (" + path_ + ")"; }
  void set_threads(int threads) override {
    if (spec_.set_threads_takes_dim_t)
      reinterpret_cast<SetThreadsDimFn>(set_threads_)(threads);
    else
      reinterpret_cast<SetThreadsFn>(set_threads_)(threads);
  }

  void gemm(const Problem& p, const Operands& ops) override {
    validate(p, ops.a, ops.b, ops.c);
    if (p.m == 0 || p.n == 0) return;
    const int m = as_blas_int(p.m, "m"), n = as_blas_int(p.n, "n"), k = as_blas_int(p.k, "k");
    const int lda = as_blas_int(p.lda, "lda"), ldb = as_blas_int(p.ldb, "ldb"),
              ldc = as_blas_int(p.ldc, "ldc");
    const int ta = p.trans_a ? cblas_trans : cblas_no_trans, tb = p.trans_b ? cblas_trans : cblas_no_trans;
    switch (p.precision) {
      case Precision::fp32:
        sgemm_(cblas_row_major, ta, tb, m, n, k, static_cast<float>(p.alpha),
               static_cast<const float*>(ops.a), lda, static_cast<const float*>(ops.b), ldb,
               static_cast<float>(p.beta), static_cast<float*>(ops.c), ldc);
        return;
      case Precision::fp64:
        dgemm_(cblas_row_major, ta, tb, m, n, k, p.alpha,
               static_cast<const double*>(ops.a), lda, static_cast<const double*>(ops.b), ldb,
               p.beta, static_cast<double*>(ops.c), ldc);
        return;
      default:
        throw std::invalid_argument(std::string(spec_.name) + " has no " +
                                    std::string(to_string(p.precision)) + " GEMM");
    }
  }

 private:
  void* symbol(const char* name) {
    void* s = dlsym(handle_, name);
    if (s == nullptr)
      throw std::runtime_error(std::string(spec_.name) + " (" + path_ + ") lacks " + name);
    return s;
  }

  const LibrarySpec& spec_;
  void* handle_ = nullptr;
  std::string path_;
  SgemmFn sgemm_ = nullptr;
  DgemmFn dgemm_ = nullptr;
  void* set_threads_ = nullptr;  // called through SetThreadsFn or SetThreadsDimFn (the spec says)
  VersionFn version_ = nullptr;
};
}  // namespace

std::vector<std::string> cblas_names() {
  std::vector<std::string> names;
  for (const auto& s : specs) names.emplace_back(s.name);
  return names;
}

std::unique_ptr<Reference> load_cblas(const std::string& name) {
  for (const auto& s : specs)
    if (name == s.name) return std::make_unique<CblasLibrary>(s);
  throw std::invalid_argument("unknown reference '" + name + "'; references: openblas, blis");
}

}  // namespace gemmlab::cpu
