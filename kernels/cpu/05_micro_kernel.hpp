// 05_packed_avx512's micro-kernel and A-panel packing, written once for any instruction set V of
// simd.hpp (simd::Avx512<T>: 32 zmm registers of 16 floats; simd::Avx2<T>: 16 ymm registers of 8).
// A function's instruction set cannot be a template parameter (the target attribute is fixed
// text), so each set's variants are compiled in a file of their own with that set's compiler
// flags: 05_micro_kernel_avx512.cpp (-mavx512f) and 05_micro_kernel_avx2.cpp (-mavx2 -mfma).
// 05_packed_avx512.cpp picks the set by cpuid when it builds a routine.
// Everything below the declarations is in an unnamed namespace: each of those files gets its own
// copy, compiled for its set, so that the linker can never keep the AVX-512 copy of a function for
// a CPU without AVX-512.
#pragma once

#include <cstdint>

#include "simd.hpp"

namespace gemmlab::cpu::packed {

template <class T>
using MicroKernelFn = void (*)(std::int64_t kc, const T* a_panel, std::int64_t a_row_step,
                               std::int64_t a_k_step, const T* b_panel, std::int64_t b_k_step, T* c,
                               std::int64_t ldc, int mr, int nr, T alpha, T beta);
template <class T>
using PackAFn = void (*)(const T* a, std::int64_t lda, std::int64_t rows, std::int64_t depth, T* packed);

// The compiled pieces of one (MR, NV) variant.
template <class T>
struct Variant {
  MicroKernelFn<T> micro_kernel = nullptr;
  PackAFn<T> pack_a = nullptr;
};

// The variant for (mr, nv) of each instruction set; empty when the pair breaks its register
// constraint. Every height from 1 to 16 is compiled: the space's MR values, and the heights of a
// last panel of fewer than MR rows, which runs a micro-kernel only as tall as its rows.
template <class T>
Variant<T> avx512_variant(int mr, int nv);
template <class T>
Variant<T> avx2_variant(int mr, int nv);

namespace {

// How far ahead (in k-steps) the micro-kernel prefetches its B panel: about L2 latency
// (~16 cycles) divided by the cycles of one k-step (MR*NV FMAs on two pipes), with margin.
// A B read where it lies is fetched as far ahead: its rows are ldb apart, so the fetch is a row
// b_prefetch_steps further down.
constexpr int b_prefetch_steps = 8;

// The space's register constraint, for choosing which variants to compile.
template <class V>
constexpr bool fits_registers(int mr, int nv) {
  return mr * nv + nv + 1 <= V::registers;
}

// The micro-kernel's k loop: acc += A_panel * B_panel over kc steps. Inlined into each of the
// micro-kernel's calls, so that for a packed panel the strides are the constants 1 and MR and each
// broadcast addresses its row by an immediate offset. With strides known only at run time a
// 14-row panel needs 13 index registers, more than are free: the compiler reloaded some from the
// stack on every k-step.
template <class V, int MR, int NV, class T>
[[gnu::always_inline]] inline void accumulate(std::int64_t kc, const T* a_panel, std::int64_t a_row_step,
                                              std::int64_t a_k_step, const T* b_panel, std::int64_t b_k_step,
                                              typename V::Reg (&acc)[MR][NV]) {
  constexpr int L = V::lanes;
#pragma GCC unroll 2
  for (std::int64_t p = 0; p < kc; ++p) {
    typename V::Reg b_vec[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      // The B panel streams from L2: fetch the line needed b_prefetch_steps k-steps from now.
      _mm_prefetch(reinterpret_cast<const char*>(b_panel + b_prefetch_steps * b_k_step + v * L), _MM_HINT_T0);
      b_vec[v] = V::load(b_panel + v * L);
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const typename V::Reg a_bcast = V::broadcast(a_panel[r * a_row_step]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fma(a_bcast, b_vec[v], acc[r][v]);
    }
    a_panel += a_k_step;
    b_panel += b_k_step;
  }
}

// C[0:mr][0:nr] = alpha * A_panel * B_panel + beta * C. A_panel holds kc columns of MR values,
// A[r][p] at a_panel[r * a_row_step + p * a_k_step] (packed: 1 and MR; in place: lda and 1),
// B_panel kc rows of NR contiguous values, b_k_step apart (packed: NR; in place: ldb).
template <class V, int MR, int NV, class T>
void micro_kernel(std::int64_t kc, const T* a_panel, std::int64_t a_row_step, std::int64_t a_k_step,
                  const T* b_panel, std::int64_t b_k_step, T* c, std::int64_t ldc, int mr, int nr, T alpha,
                  T beta) {
  constexpr int L = V::lanes;
  typename V::Reg acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = V::zero();
  // Ask for the C tile now so that its cache lines arrive while the k loop runs, not at the
  // write-back (rows of C are ldc apart: the hardware prefetcher does not see them coming).
  for (int r = 0; r < mr; ++r)
    for (int v = 0; v < NV; ++v)
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + v * L), _MM_HINT_T0);

  constexpr std::int64_t packed_b = NV * L;
  if (b_k_step == packed_b) {
    if (a_row_step == 1 && a_k_step == MR)
      accumulate<V, MR, NV>(kc, a_panel, 1, MR, b_panel, packed_b, acc);
    else if (a_row_step == 1)  // the first MR rows of a taller packed panel (its last, short panel)
      accumulate<V, MR, NV>(kc, a_panel, 1, a_k_step, b_panel, packed_b, acc);
    else
      accumulate<V, MR, NV>(kc, a_panel, a_row_step, a_k_step, b_panel, packed_b, acc);
  } else if (a_row_step == 1 && a_k_step == MR) {  // B where it lies, A packed
    accumulate<V, MR, NV>(kc, a_panel, 1, MR, b_panel, b_k_step, acc);
  } else {
    accumulate<V, MR, NV>(kc, a_panel, a_row_step, a_k_step, b_panel, b_k_step, acc);
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
      simd::store_edge<V>(cols, mask, c_row + v * L, result);
    }
  }
}

// A[0:rows][0:depth] (leading dimension lda) -> one MR-tall panel, k-major, zero-padded rows.
// The k-outer order keeps all MR row streams in flight at once; MR is a compile-time constant so
// that the inner loop is unrolled into MR loads and MR contiguous stores.
template <class T, int MR>
void pack_a_panel(const T* a, std::int64_t lda, std::int64_t rows, std::int64_t depth, T* packed) {
  if (rows == MR) {
    for (std::int64_t k = 0; k < depth; ++k)
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) packed[k * MR + r] = a[r * lda + k];
    return;
  }
  for (std::int64_t k = 0; k < depth; ++k)
    for (int r = 0; r < MR; ++r) packed[k * MR + r] = r < rows ? a[r * lda + k] : T(0);
}

template <class V, int MR, int NV, class T = typename V::Elem>
constexpr Variant<T> variant() {
  if constexpr (fits_registers<V>(MR, NV)) return {&micro_kernel<V, MR, NV, T>, &pack_a_panel<T, MR>};
  else return {};
}
template <class V, int MR, int... NVs>
Variant<typename V::Elem> select_nv(int nv) {
  Variant<typename V::Elem> found;
  ((nv == NVs ? (found = variant<V, MR, NVs>(), 0) : 0), ...);
  return found;
}
// The variant for (mr, nv) of instruction set V, for the heights MRs and NV 1 to 4.
template <class V, int... MRs>
Variant<typename V::Elem> select_variant(int mr, int nv) {
  Variant<typename V::Elem> found;
  ((mr == MRs ? (found = select_nv<V, MRs, 1, 2, 3, 4>(nv), 0) : 0), ...);
  return found;
}

}  // namespace
}  // namespace gemmlab::cpu::packed
