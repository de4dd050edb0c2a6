// 04_register_blocked_avx2 — an MR x NR block of C held in vector registers.
//
// Idea over 03: 02/03 load and store C[i][j:] in every k iteration; the FMA units wait on memory.
// Here the kernel keeps an MR x NR tile of C in registers for the whole K loop (NR = NV vectors
// of 8 floats / 4 doubles). Each k step loads NV vectors of B once and broadcasts MR elements of
// A: MR*NV FMAs for NV + MR loads. With MR*NV >= 8 independent accumulators, the two FMA pipes
// (4-cycle latency each) stay busy.
// Hardware: AVX2 (16 ymm registers) and FMA3, detected with cpuid.
// Edges: a partial column strip of B is copied into a zero-padded NR-wide buffer, missing rows of
// A point to a row of zeros, and a partial tile of C is written back element by element.
// Parameters (compile-time variants): MR (rows) and NV (vectors per row, NR = NV * lanes).
// Constraint (space(), as an expression): the accumulators, the B vectors and the A broadcast fit
// the 16 ymm registers; every pair that satisfies it is compiled.
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "cpu_kernel.hpp"
#include "cpu_kernels.hpp"
#include "simd.hpp"

namespace gemmlab::cpu {
namespace {

constexpr int max_mr = 8;
constexpr int ymm_registers = 16;
// The space's register constraint, for choosing which variants to compile.
constexpr bool fits_ymm(int mr, int nv) { return mr * nv + nv + 1 <= ymm_registers; }

template <class T>
using TileFn = void (*)(std::int64_t k, const T* const* a_rows, const T* b, std::int64_t ldb,
                        T alpha, T beta, T* c, std::int64_t ldc, int mr, int nr);

// C[0:mr][0:nr] = alpha * A_rows * B + beta * C for one MR x NR tile over the full depth k.
template <class T, int MR, int NV>
[[gnu::target("avx2,fma")]] void register_tile(std::int64_t k, const T* const* a_rows, const T* b,
                                               std::int64_t ldb, T alpha, T beta, T* c,
                                               std::int64_t ldc, int mr, int nr) {
  using V = simd::Avx2<T>;
  constexpr int L = V::lanes;
  typename V::Reg acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = V::zero();

  for (std::int64_t p = 0; p < k; ++p) {
    typename V::Reg b_vec[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b_vec[v] = V::load(b + p * ldb + v * L);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const typename V::Reg a_bcast = V::broadcast(a_rows[r][p]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fma(a_bcast, b_vec[v], acc[r][v]);
    }
  }

  const typename V::Reg alpha_v = V::broadcast(alpha), beta_v = V::broadcast(beta);
  if (mr == MR && nr == NV * L) {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        T* out = c + r * ldc + v * L;
        typename V::Reg result = V::mul(alpha_v, acc[r][v]);
        if (beta != T(0)) result = V::fma(beta_v, V::load(out), result);
        V::store(out, result);
      }
    return;
  }
  alignas(32) T tile[MR][NV * L];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) V::store(&tile[r][v * L], acc[r][v]);
  for (int r = 0; r < mr; ++r)
    for (int j = 0; j < nr; ++j) {
      T& out = c[r * ldc + j];
      out = beta == T(0) ? alpha * tile[r][j] : alpha * tile[r][j] + beta * out;
    }
}

// The compiled variant for (mr, nv), or null when the pair breaks the register constraint.
template <class T, int MR, int NV>
constexpr TileFn<T> variant() {
  if constexpr (fits_ymm(MR, NV)) return &register_tile<T, MR, NV>;
  else return nullptr;
}
template <class T, int MR, int... NVs>
TileFn<T> select_nv(int nv) {
  TileFn<T> found = nullptr;
  ((nv == NVs ? (found = variant<T, MR, NVs>(), 0) : 0), ...);
  return found;
}
template <class T, int... MRs>
TileFn<T> select_tile(int mr, int nv) {
  TileFn<T> found = nullptr;
  ((mr == MRs ? (found = select_nv<T, MRs, 1, 2, 3, 4>(nv), 0) : 0), ...);
  return found;
}

struct RegisterBlockedRoutine {
  int mr, nv;

  template <class T>
  void operator()(const Problem& p, const T* a, const T* b, T* c) const {
    const TileFn<T> tile = select_tile<T, 1, 2, 3, 4, 6, 8>(mr, nv);
    const int nr = nv * simd::Avx2<T>::lanes;
    const std::vector<T> zero_row(static_cast<std::size_t>(p.k), T(0));
    std::vector<T> b_edge;
    for (std::int64_t j0 = 0; j0 < p.n; j0 += nr) {
      const int cols = static_cast<int>(std::min<std::int64_t>(nr, p.n - j0));
      const T* b_strip = b + j0;
      std::int64_t ld_strip = p.ldb;
      if (cols < nr) {  // right edge: zero-padded copy of the last strip of B
        b_edge.assign(static_cast<std::size_t>(p.k * nr), T(0));
        for (std::int64_t k = 0; k < p.k; ++k)
          std::memcpy(&b_edge[static_cast<std::size_t>(k * nr)], b + k * p.ldb + j0, sizeof(T) * cols);
        b_strip = b_edge.data();
        ld_strip = nr;
      }
      for (std::int64_t i0 = 0; i0 < p.m; i0 += mr) {
        const int rows = static_cast<int>(std::min<std::int64_t>(mr, p.m - i0));
        std::array<const T*, max_mr> a_rows{};
        for (int r = 0; r < mr; ++r) a_rows[r] = r < rows ? a + (i0 + r) * p.lda : zero_row.data();
        tile(p.k, a_rows.data(), b_strip, ld_strip, static_cast<T>(p.alpha), static_cast<T>(p.beta),
             c + i0 * p.ldc + j0, p.ldc, rows, cols);
      }
    }
  }
};

class RegisterBlockedAvx2 final : public CpuKernel {
 public:
  RegisterBlockedAvx2()
      : CpuKernel("04_register_blocked_avx2",
                  "an MR x NR tile of C kept in ymm registers, AVX2+FMA intrinsics", {"avx2", "fma"}) {}

  SearchSpace space(const DeviceInfo&, Precision) const override {
    SearchSpace s;
    s.add("MR", {1, 2, 3, 4, 6, 8}, "rows of the register tile")
        .add("NV", {1, 2, 3, 4}, "ymm vectors per row of the register tile (NR = NV * lanes)");
    s.let("ymm_registers", ymm_registers, "AVX2 vector registers");
    s.require("MR*NV + NV + 1 <= ymm_registers", "MR*NV accumulators, NV vectors of B and a broadcast of A");
    return s;
  }
  Config preferred_config(const DeviceInfo&, Precision) const override {
    return {{"MR", 6}, {"NV", 2}};
  }

 protected:
  std::unique_ptr<Executable> build(Device&, const Problem& p, const Config& c) const override {
    return make_executable(p, RegisterBlockedRoutine{int(c.at("MR")), int(c.at("NV"))});
  }
};
}  // namespace

std::unique_ptr<Kernel> make_register_blocked_avx2() { return std::make_unique<RegisterBlockedAvx2>(); }

}  // namespace gemmlab::cpu
