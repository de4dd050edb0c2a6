// 01_mdrange — one work item per element of C over a two-dimensional MDRangePolicy.
//
// Idea: the portable starting point. Kokkos::MDRangePolicy<Space, Rank<2>> spreads the M x N
// elements of C over whatever the execution space has (Serial: one loop nest; OpenMP: threads;
// CUDA/HIP: thread blocks); each item sums its row of A times its column of B straight from the
// space's memory, then writes alpha * sum (+ beta * C when beta != 0; C is not read otherwise).
// Nothing is reused on purpose: every item reads K elements of A and K of B.
// Hardware: none beyond what the execution space gives (Serial: one core).
// Parameters: none (the MDRange tiling is Kokkos's default for the space).
#include "kokkos_kernel.hpp"
#include "kokkos_kernels.hpp"

namespace gemmlab::kokkos {
namespace {

template <class T, class AView, class BView, class CView>
struct MdrangeGemm {
  AView a;
  BView b;
  CView c;
  T alpha = {}, beta = {};
  std::int64_t k = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, const std::int64_t j) const {
    T sum = 0;
    for (std::int64_t p = 0; p < k; ++p) sum += a(i, p) * b(p, j);
    c(i, j) = beta == T(0) ? alpha * sum : alpha * sum + beta * c(i, j);
  }
};

struct MdrangeLauncher {
  template <class Space, class T, class AView, class BView, class CView>
  void launch(const Problem& p, AView a, BView b, CView c) const {
    using Policy = Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>, Kokkos::IndexType<std::int64_t>>;
    const MdrangeGemm<T, AView, BView, CView> gemm{a, b, c, static_cast<T>(p.alpha), static_cast<T>(p.beta), p.k};
    Kokkos::parallel_for("gemmlab_01_mdrange", Policy({0, 0}, {p.m, p.n}), gemm);
  }
};

class Mdrange final : public KokkosKernel {
 public:
  Mdrange() : KokkosKernel("01_mdrange", "one item per element of C over a 2-D MDRangePolicy") {}
  SearchSpace space(const DeviceInfo&, Precision) const override { return {}; }
  Config preferred_config(const DeviceInfo&, Precision) const override { return {}; }

 protected:
  std::unique_ptr<Executable> build(Device& device, const Problem& p, const Config&) const override {
    return make_executable(device, p, MdrangeLauncher{});
  }
};
}  // namespace

std::unique_ptr<Kernel> make_mdrange() { return std::make_unique<Mdrange>(); }

}  // namespace gemmlab::kokkos
