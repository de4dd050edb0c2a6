// 03_cache_blocked — the i-k-j loops of 02, run block by block so the working set stays in cache.
//
// Idea over 02: in 02 a row of B is reused only by the next row of A, long after the cache has
// dropped it once B is larger than L2. Here the loops are cut into blocks: for an NC-wide strip
// of columns and an MC-tall strip of rows, the KC x NC block of B is used by all MC rows while
// it sits in L2, and the MC x NC block of C is updated by all K/KC blocks while it sits there.
// Hardware: the L1 and L2 data caches (sizes read from the OS).
// Parameters (run time): MC, KC, NC — rows of A/C, depth, and columns of B/C per block.
// Constraints (space(), as expressions): the B and C blocks fit L2 together; a row of the C block
// fits half of L1d, so that it stays there during its update. The tile of C a block covers is
// MC x NC (tile_m, tile_n).
#include <algorithm>

#include "cpu_kernel.hpp"
#include "cpu_kernels.hpp"

namespace gemmlab::cpu {
namespace {

struct CacheBlockedRoutine {
  std::int64_t mc, kc, nc;

  template <class T>
  void operator()(const Problem& p, const T* a, const T* b, T* c) const {
    const T alpha = static_cast<T>(p.alpha);
    scale_c(p, c);
    for (std::int64_t j0 = 0; j0 < p.n; j0 += nc) {
      const std::int64_t j1 = std::min(j0 + nc, p.n);
      for (std::int64_t i0 = 0; i0 < p.m; i0 += mc) {
        const std::int64_t i1 = std::min(i0 + mc, p.m);
        for (std::int64_t k0 = 0; k0 < p.k; k0 += kc) {
          const std::int64_t k1 = std::min(k0 + kc, p.k);
          // One block: C[i0:i1][j0:j1] += alpha * A[i0:i1][k0:k1] * B[k0:k1][j0:j1], as in 02.
          for (std::int64_t i = i0; i < i1; ++i) {
            T* c_row = c + i * p.ldc;
            for (std::int64_t k = k0; k < k1; ++k) {
              const T a_ik = alpha * a[i * p.lda + k];
              const T* b_row = b + k * p.ldb;
              for (std::int64_t j = j0; j < j1; ++j) c_row[j] += a_ik * b_row[j];
            }
          }
        }
      }
    }
  }
};

class CacheBlocked final : public CpuKernel {
 public:
  CacheBlocked()
      : CpuKernel("03_cache_blocked",
                  "02's loops blocked MC x KC x NC so blocks of B and C stay in L2", {}) {}

  SearchSpace space(const DeviceInfo& d, Precision precision) const override {
    SearchSpace s;
    s.add("MC", pow2_range(8, 1024), "rows of A and C per block")
        .add("KC", pow2_range(8, 1024), "depth (columns of A, rows of B) per block")
        .add("NC", pow2_range(16, 8192), "columns of B and C per block");
    s.let("elem", static_cast<ParamValue>(element_size(precision)), "bytes per element");
    let_cache(s, d, "L1d", 1, 32 << 10);
    let_cache(s, d, "L2", 2, 256 << 10);
    s.derive("tile_m", "MC", "rows of C a block covers")
        .derive("tile_n", "NC", "columns of C a block covers");
    s.require("(MC + KC)*NC*elem <= L2", "the B and C blocks stay in L2 together")
        .require("NC*elem <= L1d/2", "a row of the C block stays in L1 during its update");
    return s;
  }
  // 1024 columns, depth 256 and 64 rows; where the caches are too small for them, default_config
  // takes the nearest valid configuration.
  Config preferred_config(const DeviceInfo&, Precision) const override {
    return {{"MC", 64}, {"KC", 256}, {"NC", 1024}};
  }

 protected:
  std::unique_ptr<Executable> build(Device&, const Problem& p, const Config& c) const override {
    return make_executable(p, CacheBlockedRoutine{c.at("MC"), c.at("KC"), c.at("NC")});
  }
};
}  // namespace

std::unique_ptr<Kernel> make_cache_blocked() { return std::make_unique<CacheBlocked>(); }

}  // namespace gemmlab::cpu
