// 05_packed_avx512 — BLIS-style: packed panels, five loops around an AVX-512 micro-kernel.
//
// Idea over 04: 04 reads A and B where they lie, so the micro-kernel's loads stride through
// memory and a strip of B is refetched from far caches for every row block. Here the operands
// are first copied (packed) into the order the micro-kernel reads them:
//   loop 5  jc: NC columns of B and C                 (B block KC x NC lives in L3)
//   loop 4  pc: KC deep; pack B[pc:, jc:] into NR-wide panels, k-major
//   loop 3  ic: MC rows; pack A[ic:, pc:] into MR-tall panels, k-major   (A block in L2)
//   loop 2  jr: one NR-wide panel of B                (B micro-panel KC x NR in L1)
//   loop 1  ir: one MR-tall panel of A -> micro-kernel: MR x NR of C in zmm registers
// The micro-kernel then reads both operands with unit stride, from caches it was sized for.
// The rows are split evenly among OpenMP threads, each packing its own A blocks.
// Hardware: AVX-512F (32 zmm registers, masked loads/stores for the right edge of C), the cache
// hierarchy (sizes read from the OS), and the cores (OpenMP).
// Parameters: MR, NV (compile-time variants; NR = NV * lanes), MC, KC, NC (run time), threads.
// Constraints: MR*NV + NV + 1 <= 32 (zmm registers); MC % MR == 0; NC % NR == 0;
//              KC*NR*elem <= L1d; MC*KC*elem <= L2; KC*NC*elem <= L3.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "cpu_kernel.hpp"
#include "cpu_kernels.hpp"
#include "gemmlab/buffer.hpp"
#include "simd.hpp"

namespace gemmlab::cpu {
namespace {

constexpr bool fits_zmm(int mr, int nv) { return mr * nv + nv + 1 <= 32; }

template <class T>
using MicroKernelFn = void (*)(std::int64_t kc, const T* a_panel, const T* b_panel, T* c,
                               std::int64_t ldc, int mr, int nr, T alpha, T beta);

// C[0:mr][0:nr] = alpha * A_panel * B_panel + beta * C. A_panel holds kc columns of MR values,
// B_panel kc rows of NR values, both contiguous.
template <class T, int MR, int NV>
[[gnu::target("avx512f")]] void micro_kernel(std::int64_t kc, const T* a_panel, const T* b_panel,
                                             T* c, std::int64_t ldc, int mr, int nr, T alpha,
                                             T beta) {
  using V = simd::Avx512<T>;
  constexpr int L = V::lanes;
  typename V::Reg acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = V::zero();
  // Ask for the C tile now so that its cache lines arrive while the k loop runs, not at the
  // write-back (rows of C are ldc apart: the hardware prefetcher does not see them coming).
  for (int r = 0; r < mr; ++r)
    for (int v = 0; v < NV; ++v) _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + v * L), _MM_HINT_T0);

#pragma GCC unroll 2
  for (std::int64_t p = 0; p < kc; ++p) {
    typename V::Reg b_vec[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b_vec[v] = V::load(b_panel + v * L);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const typename V::Reg a_bcast = V::broadcast(a_panel[r]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fma(a_bcast, b_vec[v], acc[r][v]);
    }
    a_panel += MR;
    b_panel += NV * L;
  }

  const typename V::Reg alpha_v = V::broadcast(alpha), beta_v = V::broadcast(beta);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    if (r >= mr) break;
    T* c_row = c + r * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const int cols = nr - v * L;
      if (cols <= 0) break;
      const auto mask = V::first(cols);
      typename V::Reg result = V::mul(alpha_v, acc[r][v]);
      if (beta != T(0)) result = V::fma(beta_v, V::load(mask, c_row + v * L), result);
      V::store(mask, c_row + v * L, result);
    }
  }
}

template <class T, int MR, int NV>
constexpr MicroKernelFn<T> variant() {
  if constexpr (fits_zmm(MR, NV)) return &micro_kernel<T, MR, NV>;
  else return nullptr;
}
template <class T, int MR, int... NVs>
MicroKernelFn<T> select_nv(int nv) {
  MicroKernelFn<T> found = nullptr;
  ((nv == NVs ? (found = variant<T, MR, NVs>(), 0) : 0), ...);
  return found;
}
template <class T, int... MRs>
MicroKernelFn<T> select_micro_kernel(int mr, int nv) {
  MicroKernelFn<T> found = nullptr;
  ((mr == MRs ? (found = select_nv<T, MRs, 1, 2, 3, 4>(nv), 0) : 0), ...);
  return found;
}

// A[0:rows][0:depth] (leading dimension lda) -> MR-tall panels, k-major, zero-padded rows.
template <class T>
void pack_a(const T* a, std::int64_t lda, std::int64_t rows, std::int64_t depth, int mr, T* packed) {
  for (std::int64_t i0 = 0; i0 < rows; i0 += mr) {
    const std::int64_t panel_rows = std::min<std::int64_t>(mr, rows - i0);
    for (std::int64_t r = 0; r < mr; ++r) {
      const T* src = a + (i0 + r) * lda;
      for (std::int64_t k = 0; k < depth; ++k) packed[k * mr + r] = r < panel_rows ? src[k] : T(0);
    }
    packed += depth * mr;
  }
}

// B[0:depth][j0:j0+nr] (leading dimension ldb) -> one NR-wide panel, k-major, zero-padded columns.
template <class T>
void pack_b_panel(const T* b, std::int64_t ldb, std::int64_t depth, std::int64_t cols, int nr, T* packed) {
  for (std::int64_t k = 0; k < depth; ++k) {
    std::memcpy(packed + k * nr, b + k * ldb, sizeof(T) * static_cast<std::size_t>(cols));
    std::fill(packed + k * nr + cols, packed + (k + 1) * nr, T(0));
  }
}

class PackedRoutine {
 public:
  PackedRoutine(const Problem& p, const Config& c)
      : mr_(int(c.at("MR"))), nv_(int(c.at("NV"))), mc_(c.at("MC")), kc_(c.at("KC")),
        nc_(c.at("NC")), threads_(int(c.at("threads"))) {
    // Workspace sized once for this problem: one B block, one A block per thread.
    const std::int64_t elem = static_cast<std::int64_t>(element_size(p.precision));
    const std::int64_t nr = nv_ * (64 / elem);
    const std::int64_t kc = std::min(kc_, p.k), nc = std::min(nc_, round_up(p.n, nr));
    const std::int64_t mc = std::min(mc_, round_up(p.m, mr_));
    a_block_elements_ = std::max<std::int64_t>(1, mc * kc);
    b_pack_ = HostBuffer<std::byte>(static_cast<std::size_t>(std::max<std::int64_t>(1, kc * nc) * elem));
    a_pack_ = HostBuffer<std::byte>(static_cast<std::size_t>(a_block_elements_ * threads_ * elem));
  }

  template <class T>
  void operator()(const Problem& p, const T* a, const T* b, T* c) {
    const MicroKernelFn<T> kernel = select_micro_kernel<T, 4, 6, 8, 12, 14, 16>(mr_, nv_);
    const int nr = nv_ * simd::Avx512<T>::lanes;
    T* b_pack = reinterpret_cast<T*>(b_pack_.data());
    const T alpha = static_cast<T>(p.alpha);

#pragma omp parallel num_threads(threads_)
    {
      // The runtime may grant fewer threads than asked for: split the rows among those present.
      const int team = omp_get_num_threads(), me = omp_get_thread_num();
      T* a_pack = reinterpret_cast<T*>(a_pack_.data()) + a_block_elements_ * me;
      for (std::int64_t jc = 0; jc < p.n; jc += nc_) {                       // loop 5
        const std::int64_t nc = std::min(nc_, p.n - jc);
        for (std::int64_t pc = 0; pc < p.k; pc += kc_) {                     // loop 4
          const std::int64_t kc = std::min(kc_, p.k - pc);
          // Only the first depth block scales C by beta; later ones accumulate into it.
          const T beta = pc == 0 ? static_cast<T>(p.beta) : T(1);
          const std::int64_t panels = (nc + nr - 1) / nr;
#pragma omp for schedule(static)
          for (std::int64_t jp = 0; jp < panels; ++jp)
            pack_b_panel(b + pc * p.ldb + jc + jp * nr, p.ldb, kc, std::min<std::int64_t>(nr, nc - jp * nr),
                         nr, b_pack + jp * kc * nr);
          // (implicit barrier: B is packed before anyone uses it)
          // Each thread takes an equal, MR-aligned share of the rows, in MC blocks.
          const std::int64_t share = round_up((p.m + team - 1) / team, mr_);
          const std::int64_t first_row = share * me;
          const std::int64_t end_row = std::min(p.m, first_row + share);
          for (std::int64_t ic = first_row; ic < end_row; ic += mc_) {           // loop 3
            const std::int64_t mc = std::min(mc_, end_row - ic);
            pack_a(a + ic * p.lda + pc, p.lda, mc, kc, mr_, a_pack);
            for (std::int64_t jr = 0; jr < nc; jr += nr) {                   // loop 2
              const T* b_panel = b_pack + (jr / nr) * kc * nr;
              const int cols = static_cast<int>(std::min<std::int64_t>(nr, nc - jr));
              for (std::int64_t ir = 0; ir < mc; ir += mr_) {                // loop 1
                const int rows = static_cast<int>(std::min<std::int64_t>(mr_, mc - ir));
                kernel(kc, a_pack + (ir / mr_) * kc * mr_, b_panel, c + (ic + ir) * p.ldc + jc + jr,
                       p.ldc, rows, cols, alpha, beta);
              }
            }
          }
#pragma omp barrier
          // (barrier above: nobody still reads B when it is repacked)
        }
      }
    }
  }

 private:
  static std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

  int mr_, nv_;
  std::int64_t mc_, kc_, nc_;
  int threads_;
  std::int64_t a_block_elements_ = 0;
  HostBuffer<std::byte> a_pack_, b_pack_;
};

class PackedAvx512 final : public CpuKernel {
 public:
  PackedAvx512()
      : CpuKernel("05_packed_avx512",
                  "BLIS-style packing, five loops around an AVX-512 micro-kernel, OpenMP threads",
                  {"avx512f"}) {}

  SearchSpace space(const DeviceInfo& d, Precision precision) const override {
    const auto elem = static_cast<std::int64_t>(element_size(precision));
    const std::int64_t lanes = 64 / elem;
    const std::int64_t l1 = d.cache_bytes(1) > 0 ? d.cache_bytes(1) : 32 << 10;
    const std::int64_t l2 = d.cache_bytes(2) > 0 ? d.cache_bytes(2) : 1 << 20;
    const std::int64_t l3 = d.cache_bytes(3) > 0 ? d.cache_bytes(3) : l2;
    SearchSpace s;
    s.add("MR", {4, 6, 8, 12, 14, 16}, "rows of the micro-tile")
        .add("NV", {1, 2, 3, 4}, "zmm vectors per row of the micro-tile (NR = NV * lanes)")
        .add("MC", {16, 32, 48, 64, 96, 112, 128, 144, 168, 192, 224, 256, 288, 336, 384, 448, 512},
             "rows of the packed A block")
        .add("KC", {32, 64, 128, 192, 256, 320, 384, 448, 512, 768, 1024}, "depth of the packed blocks")
        .add("NC", {64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192},
             "columns of the packed B block")
        .add("threads", int_range(1, std::max(1, d.cores)), "OpenMP threads");
    s.constrain("MR*NV + NV + 1 <= 32 (zmm registers)", {"MR", "NV"},
                [](const Config& c) { return fits_zmm(int(c.at("MR")), int(c.at("NV"))); });
    s.constrain("MC % MR == 0", {"MC", "MR"}, [](const Config& c) { return c.at("MC") % c.at("MR") == 0; });
    s.constrain("NC % (NV*" + std::to_string(lanes) + ") == 0", {"NC", "NV"},
                [=](const Config& c) { return c.at("NC") % (c.at("NV") * lanes) == 0; });
    s.constrain("KC*NV*" + std::to_string(lanes * elem) + " <= L1d (" + std::to_string(l1) + " B)",
                {"KC", "NV"}, [=](const Config& c) { return c.at("KC") * c.at("NV") * lanes * elem <= l1; });
    s.constrain("MC*KC*" + std::to_string(elem) + " <= L2 (" + std::to_string(l2) + " B)",
                {"MC", "KC"}, [=](const Config& c) { return c.at("MC") * c.at("KC") * elem <= l2; });
    s.constrain("KC*NC*" + std::to_string(elem) + " <= L3 (" + std::to_string(l3) + " B)",
                {"KC", "NC"}, [=](const Config& c) { return c.at("KC") * c.at("NC") * elem <= l3; });
    return s;
  }

  Config default_config(const DeviceInfo& d, Precision precision) const override {
    Config c = precision == Precision::fp32
                   ? Config{{"MR", 14}, {"NV", 2}, {"MC", 112}, {"KC", 384}, {"NC", 3072}}
                   : Config{{"MR", 14}, {"NV", 2}, {"MC", 112}, {"KC", 256}, {"NC", 3072}};
    c["threads"] = std::max(1, d.cores);
    const SearchSpace s = space(d, precision);
    // Smaller caches than the machine these were tuned on: shrink the blocks until they fit.
    while (!s.is_valid(c) && c["KC"] > 32) c["KC"] /= 2;
    while (!s.is_valid(c) && c["NC"] > 384) c["NC"] /= 2;
    return c;
  }

 protected:
  std::unique_ptr<Executable> build(const DeviceInfo&, const Problem& p, const Config& c) const override {
    return make_executable(p, PackedRoutine(p, c));
  }
};
}  // namespace

std::unique_ptr<Kernel> make_packed_avx512() { return std::make_unique<PackedAvx512>(); }

}  // namespace gemmlab::cpu
