// 02_loop_order — the same arithmetic in i-k-j order.
//
// Idea over 01: swap the two inner loops. For fixed i and k, the innermost loop runs along a row
// of B and a row of C, both contiguous, so every cache line brought in is used in full and the
// compiler can vectorise the loop (C[i][j:] += a_ik * B[k][j:]).
// Hardware: unit-stride loads and the compiler's auto-vectorisation (SSE2 in a portable build).
// Parameters: none.
#include "cpu_kernel.hpp"
#include "cpu_kernels.hpp"

namespace gemmlab::cpu {
namespace {

struct LoopOrderRoutine {
  template <class T>
  void operator()(const Problem& p, const T* a, const T* b, T* c) const {
    const T alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta);
    for (std::int64_t i = 0; i < p.m; ++i) {
      T* c_row = c + i * p.ldc;
      for (std::int64_t j = 0; j < p.n; ++j) c_row[j] = beta == T(0) ? T(0) : beta * c_row[j];
      for (std::int64_t k = 0; k < p.k; ++k) {
        const T a_ik = alpha * a[i * p.lda + k];
        const T* b_row = b + k * p.ldb;
        for (std::int64_t j = 0; j < p.n; ++j) c_row[j] += a_ik * b_row[j];
      }
    }
  }
};

class LoopOrder final : public CpuKernel {
 public:
  LoopOrder()
      : CpuKernel("02_loop_order", "loop order i-k-j: the inner loop streams rows of B and C", {}) {}
  SearchSpace space(const DeviceInfo&, Precision) const override { return {}; }
  Config preferred_config(const DeviceInfo&, Precision) const override { return {}; }

 protected:
  std::unique_ptr<Executable> build(Device&, const Problem& p, const Config&) const override {
    return make_executable(p, LoopOrderRoutine{});
  }
};
}  // namespace

std::unique_ptr<Kernel> make_loop_order() { return std::make_unique<LoopOrder>(); }

}  // namespace gemmlab::cpu
