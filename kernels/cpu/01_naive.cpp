// 01_naive — the definition of GEMM as three loops, i-j-k.
//
// Idea: C[i][j] = alpha * sum_k A[i][k] * B[k][j] + beta * C[i][j], one dot product per element.
// Hardware: none beyond a scalar FPU. The inner loop walks a column of B (stride ldb), so every
// iteration touches a new cache line of B: this is the baseline every later step improves on.
// Parameters: none.
// A and B may be stored transposed (the BLAS interface's TRANSA/TRANSB): only the strides of the
// two walks change, which makes this the library's path for the tiniest problems too.
#include "cpu_kernel.hpp"
#include "cpu_kernels.hpp"

namespace gemmlab::cpu {
namespace {

struct NaiveRoutine {
  template <class T>
  void operator()(const Problem& p, const T* a, const T* b, T* c) const {
    const T alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta);
    // Element (i, k) of op(A) is a[i * a_row + k * a_col]; (k, j) of op(B) is b[k * b_row + j * b_col].
    const std::int64_t a_row = p.trans_a ? 1 : p.lda, a_col = p.trans_a ? p.lda : 1;
    const std::int64_t b_row = p.trans_b ? 1 : p.ldb, b_col = p.trans_b ? p.ldb : 1;
    for (std::int64_t i = 0; i < p.m; ++i) {
      for (std::int64_t j = 0; j < p.n; ++j) {
        T sum = 0;
        for (std::int64_t k = 0; k < p.k; ++k) sum += a[i * a_row + k * a_col] * b[k * b_row + j * b_col];
        T& out = c[i * p.ldc + j];
        out = beta == T(0) ? alpha * sum : alpha * sum + beta * out;  // beta = 0: C is not read
      }
    }
  }
};

class Naive final : public CpuKernel {
 public:
  Naive() : CpuKernel("01_naive", "triple loop i-j-k: one dot product per element of C", {}) {}
  bool reads_transposed() const override { return true; }
  SearchSpace space(const DeviceInfo&, Precision) const override { return {}; }
  Config preferred_config(const DeviceInfo&, Precision) const override { return {}; }

 protected:
  std::unique_ptr<Executable> build(Device&, const Problem& p, const Config&) const override {
    return make_executable(p, NaiveRoutine{});
  }
};
}  // namespace

std::unique_ptr<Kernel> make_naive() { return std::make_unique<Naive>(); }

}  // namespace gemmlab::cpu
