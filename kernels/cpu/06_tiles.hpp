// 06_small_m's tiles (the axpy form, its row order and the dot form), written once for any
// instruction set V of simd.hpp (simd::Avx512<T>: 32 zmm registers of 16 floats; simd::Avx2<T>:
// 16 ymm registers of 8), as 05's micro-kernel is (05_micro_kernel.hpp): each set's tiles are
// compiled in a file of their own with its flags, 06_tiles_avx512.cpp (-mavx512f) and
// 06_tiles_avx2.cpp (-mavx2 -mfma), and 06_small_m.cpp picks the set by cpuid. Everything below
// the declarations is in an unnamed namespace, so that each of those files keeps its own copy.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "simd.hpp"

namespace gemmlab::cpu::small_m {

constexpr int max_mr = 16;

// The most rows an axpy or dot tile of NV vectors holds in `registers` vector registers: its
// MR*NV accumulators, NV vectors of B and one of A (the space's register constraint).
constexpr int max_tile_rows(int registers, int nv) { return (registers - 1 - nv) / nv; }

// Which lines of B the axpy form asks for ahead of use.
enum BPrefetch {
  next_strip,  // columns split, one pass of rows: the next column tile's strip, into L1
  own_rows,    // columns split, several passes: the next strip into L2, this strip's rows into L1
  copy_strip,  // the first of several passes: as own_rows, and each vector of B read is also
               // stored to the tile's `strip`, a contiguous copy that the later passes read
  no_prefetch  // rows split: the passes share a few strips, which stay in cache
};

// One tile's operands. A's element (row r, step p) of the block is a[r * a_row + p * a_col];
// the axpy form reads B's row p at b + p * ldb, the dot form B's row v (a column of C) at
// b + v * ldb. C's tile starts at c. Passed by value: a copy of its own, which the stores to C
// cannot alias, keeps its fields in registers.
template <class T>
struct Tile {
  const T* a;
  std::int64_t a_row, a_col;
  const T* b;
  std::int64_t ldb;
  T* c;
  std::int64_t ldc;
  std::int64_t kb;     // steps of k in this block
  int cols;            // columns of C in this tile: up to NR (axpy form) or NV (dot form)
  BPrefetch prefetch;  // axpy form
  T* strip;            // copy_strip: where the copy of B's strip goes, KB rows of NV vectors
  // Row form: where C's rows are summed, sums_ld apart: C itself, or a copy whose rows fall into
  // different sets of L1.
  T* sums;
  std::int64_t sums_ld;
  T alpha, beta;       // C = alpha * (this block's product) + beta * C
};

template <class T>
using TileFn = void (*)(Tile<T>);

enum class Form { axpy, dot, rows };

// The tile functions for 1..max_mr rows (index: rows) of one NV and form, for each instruction
// set; null where the axpy or dot form's tile of that many rows breaks the register constraint.
template <class T>
using Tiles = std::array<TileFn<T>, max_mr + 1>;
template <class T>
Tiles<T> avx512_tiles(int nv, Form form);
template <class T>
Tiles<T> avx2_tiles(int nv, Form form);

namespace {

// The space's register constraint on the axpy and dot forms' tiles, for choosing which variants
// to compile. The row form holds no tile of C: its registers are RB * NV vectors of B and NV
// sums whatever the rows, so it is compiled for every count of rows.
template <class V>
constexpr bool fits_registers(int mr, int nv) {
  return mr <= max_tile_rows(V::registers, nv);
}

// How far ahead (in steps of k) an own_rows pass asks for its strip's rows. Near the end of B
// the address lies past it: harmless, a prefetch never faults.
constexpr std::int64_t own_rows_prefetch_steps = 8;

// The axpy form's KB steps of k into the tile's accumulators. MASKED: the tile reaches past the
// right edge of C, so B's rows are loaded under `mask`; a whole tile loads them plainly, without
// keeping NV masks live through the loop.
template <class V, int ROWS, int NV, bool MASKED, BPrefetch PREFETCH, class T = typename V::Elem>
[[gnu::always_inline]] inline void axpy_steps(
    const Tile<T>& t, const typename V::Mask* mask, typename V::Reg (&acc)[ROWS][NV]) {
  constexpr int L = V::lanes;
  const T* b = t.b;
  for (std::int64_t p = 0; p < t.kb; ++p) {
    typename V::Reg b_vec[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      // b + NV * L: the same row of the next column tile, needed one whole tile from now.
      if constexpr (PREFETCH == next_strip) {
        _mm_prefetch(reinterpret_cast<const char*>(b + (NV + v) * L), _MM_HINT_T0);
      } else if constexpr (PREFETCH == own_rows || PREFETCH == copy_strip) {
        _mm_prefetch(reinterpret_cast<const char*>(b + (NV + v) * L), _MM_HINT_T1);
        const T* ahead = b + own_rows_prefetch_steps * t.ldb + v * L;
        _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
      }
      b_vec[v] = simd::load<V, MASKED>(mask[v], b + v * L);
      if constexpr (PREFETCH == copy_strip) V::store(t.strip + (p * NV + v) * L, b_vec[v]);
    }
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      const typename V::Reg a_bcast = V::broadcast(t.a[r * t.a_row + p * t.a_col]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fma(a_bcast, b_vec[v], acc[r][v]);
    }
    b += t.ldb;
  }
}

// The same, with the tile's prefetch as a compile-time choice.
template <class V, int ROWS, int NV, bool MASKED, class T = typename V::Elem>
[[gnu::always_inline]] inline void axpy_steps_prefetching(
    const Tile<T>& t, const typename V::Mask* mask, typename V::Reg (&acc)[ROWS][NV]) {
  switch (t.prefetch) {
    case next_strip: axpy_steps<V, ROWS, NV, MASKED, next_strip>(t, mask, acc); break;
    case own_rows: axpy_steps<V, ROWS, NV, MASKED, own_rows>(t, mask, acc); break;
    case copy_strip:
      axpy_steps<V, ROWS, NV, MASKED, copy_strip>(t, mask, acc);
      break;
    default: axpy_steps<V, ROWS, NV, MASKED, no_prefetch>(t, mask, acc); break;
  }
}

// Axpy form: C[0:ROWS][0:cols] = alpha * A_block * B_strip + beta * C, B_strip KB x NR.
template <class V, int ROWS, int NV, class T = typename V::Elem>
void axpy_tile(const Tile<T> t) {
  constexpr int L = V::lanes;
  typename V::Mask mask[NV];  // all lanes but at the right edge of C; none past it
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) mask[v] = V::first(std::max(0, t.cols - v * L));
  typename V::Reg acc[ROWS][NV];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = V::zero();
  if (t.cols >= NV * L) axpy_steps_prefetching<V, ROWS, NV, false>(t, mask, acc);
  else axpy_steps_prefetching<V, ROWS, NV, true>(t, mask, acc);

  const typename V::Reg alpha_v = V::broadcast(t.alpha), beta_v = V::broadcast(t.beta);
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    T* c_row = t.c + r * t.ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (t.cols <= v * L) break;
      typename V::Reg result = V::mul(alpha_v, acc[r][v]);
      if (t.beta != T(0)) result = V::fma(beta_v, V::load(mask[v], c_row + v * L), result);
      simd::store_edge<V>(t.cols - v * L, mask[v], c_row + v * L, result);
    }
  }
}

// Row form, one step: R rows of B from row p, NV vectors of columns from j, applied to all ROWS
// rows of C's sums. Every vector of B loaded serves ROWS rows of C; `a_bcast` holds the group's
// elements of A, broadcast once for all steps of the group. MASKED: the step reaches the right
// edge of C, so B, C and the sums are read and written under `mask` (the columns that exist);
// every other step uses plain loads and stores (simd.hpp: a masked store is slow on AMD).
template <class V, int ROWS, int NV, int R, bool MASKED, class T = typename V::Elem>
[[gnu::always_inline]] inline void stream_step(const Tile<T>& t, std::int64_t p, std::int64_t j,
                                               const typename V::Mask* mask,
                                               const typename V::Reg (&a_bcast)[ROWS][R]) {
  constexpr int L = V::lanes;
  typename V::Reg b_vec[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      b_vec[r][v] = simd::load<V, MASKED>(mask[v], t.b + (p + r) * t.ldb + j + v * L);
  const typename V::Reg alpha_v = V::broadcast(t.alpha);
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) {
    typename V::Reg acc[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[v] = V::zero();
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[v] = V::fma(a_bcast[i][r], b_vec[r][v], acc[v]);
    const T* c_row = t.c + i * t.ldc + j;
    T* sums_row = t.sums + i * t.sums_ld + j;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      typename V::Reg result;
      if (p > 0)  // later rows of B add to the sums
        result = V::fma(alpha_v, acc[v], simd::load<V, MASKED>(mask[v], sums_row + v * L));
      else if (t.beta != T(0))
        result = V::fma(alpha_v, acc[v],
                        V::mul(V::broadcast(t.beta), simd::load<V, MASKED>(mask[v], c_row + v * L)));
      else result = V::mul(alpha_v, acc[v]);  // C is not read: it may hold anything
      simd::store<V, MASKED>(mask[v], sums_row + v * L, result);
    }
  }
}

// Row form, one group: R rows of B from row p across all the block's columns. The group's
// elements of A are broadcast before its steps: broadcast in every step, they took one load
// each beside the step's loads of B, and every load waiting on memory holds a slot of the load
// buffer that a further line of B could have had (a standalone copy at 1 x 11008 x 4096, one
// thread, 8 rows of B per group: 9.7 -> 10.7 GFLOP/s).
template <class V, int ROWS, int NV, int R, class T = typename V::Elem>
[[gnu::always_inline]] inline void stream_group(
    const Tile<T>& t, std::int64_t p, std::int64_t full_end, const typename V::Mask* all,
    const typename V::Mask* edge) {
  constexpr int L = V::lanes;
  typename V::Reg a_bcast[ROWS][R];
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) a_bcast[i][r] = V::broadcast(t.a[i * t.a_row + (p + r) * t.a_col]);
  for (std::int64_t j = 0; j < full_end; j += NV * L)
    stream_step<V, ROWS, NV, R, false>(t, p, j, all, a_bcast);
  if (full_end < t.cols) stream_step<V, ROWS, NV, R, true>(t, p, full_end, edge, a_bcast);
}

// Row form: C[0:ROWS][0:cols] = alpha * A_rows * B + beta * C over the whole depth (kb), C's
// rows summed in `sums`, which stays in L2 (the caller keeps ROWS x cols within half of it). B is
// read in groups of RB rows, each row one contiguous run: few long streams, which the hardware
// prefetcher follows at full speed. Where C's rows would fall into the same sets of L1 (the
// caller decides), the sums are a copy whose rows do not, copied to C at the end.
template <class V, int ROWS, int NV, class T = typename V::Elem>
void stream_rows(const Tile<T> t) {
  constexpr int L = V::lanes;
  constexpr int RB = V::registers / 2 / NV;  // rows of B per group: RB * NV vectors of B, half the registers
  typename V::Mask all[NV], edge[NV];
  for (int v = 0; v < NV; ++v) all[v] = V::first(L);
  const std::int64_t full_end = t.cols / (NV * L) * (NV * L);
  for (int v = 0; v < NV; ++v)
    edge[v] = V::first(static_cast<int>(std::max<std::int64_t>(0, t.cols - full_end - v * L)));
  std::int64_t p = 0;
  for (; p + RB <= t.kb; p += RB) stream_group<V, ROWS, NV, RB>(t, p, full_end, all, edge);
  for (; p < t.kb; ++p) stream_group<V, ROWS, NV, 1>(t, p, full_end, all, edge);  // the last rows of B
  if (t.sums == t.c) return;
  for (int i = 0; i < ROWS; ++i) {
    const T* sums_row = t.sums + i * t.sums_ld;
    T* c_row = t.c + i * t.ldc;
    for (std::int64_t j = 0; j < full_end; j += L) V::store(c_row + j, V::load(sums_row + j));
    for (std::int64_t j = full_end; j < t.cols; j += L) {
      const auto mask = V::first(static_cast<int>(t.cols - j));
      V::store(mask, c_row + j, V::load(mask, sums_row + j));
    }
  }
}

// Dot form: C[r][v] = alpha * dot(A_row r, B_row v) over the block + beta * C[r][v], for ROWS
// rows of A and up to NV rows of B (columns of C).
template <class V, int ROWS, int NV, class T = typename V::Elem>
void dot_tile(const Tile<T> t) {
  constexpr int L = V::lanes;
  // A tile narrower than NV reads its last row of B again in the missing places (memory that
  // exists); those sums are never stored.
  const T* b_row[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) b_row[v] = t.b + std::min(v, t.cols - 1) * t.ldb;
  typename V::Reg acc[ROWS][NV];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = V::zero();

  // One step of L values of k at p, its vectors read by `load`: whole ones plainly, the k tail
  // under a mask. (Every step masked, AVX2's vmaskmov on an AMD EPYC core: 1 x 4096 x 4096 with B
  // transposed, one thread, 8.7-9.6 GFLOP/s; plain loads 11.7-13.0.)
  const auto step = [&](std::int64_t p, auto load) {
    typename V::Reg b_vec[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b_vec[v] = load(b_row[v] + p);
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      const typename V::Reg a_vec = load(t.a + r * t.a_row + p);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fma(a_vec, b_vec[v], acc[r][v]);
    }
  };
  const std::int64_t whole = t.kb / L * L;
  for (std::int64_t p = 0; p < whole; p += L) step(p, [](const T* x) { return V::load(x); });
  if (whole < t.kb) {
    const auto mask = V::first(static_cast<int>(t.kb - whole));
    step(whole, [&](const T* x) { return V::load(mask, x); });
  }

#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (v >= t.cols) break;
      T& c = t.c[r * t.ldc + v];
      const T product = t.alpha * V::sum(acc[r][v]);
      c = t.beta == T(0) ? product : product + t.beta * c;
    }
}

template <class V, int ROWS, int NV, class T = typename V::Elem>
constexpr TileFn<T> tile(Form form) {
  if constexpr (ROWS == 0)
    return nullptr;
  else if (form == Form::rows)
    return &stream_rows<V, ROWS, NV>;
  else if constexpr (fits_registers<V>(ROWS, NV))
    return form == Form::dot ? &dot_tile<V, ROWS, NV> : &axpy_tile<V, ROWS, NV>;
  else return nullptr;
}
// The tile functions of instruction set V for 1..max_mr rows (index: rows) of one NV.
template <class V, int NV, int... Rows>
Tiles<typename V::Elem> tiles_for_rows(Form form, std::integer_sequence<int, Rows...>) {
  return {tile<V, Rows, NV>(form)...};
}
template <class V>
Tiles<typename V::Elem> tiles(int nv, Form form) {
  constexpr auto rows = std::make_integer_sequence<int, max_mr + 1>{};
  switch (nv) {
    case 1: return tiles_for_rows<V, 1>(form, rows);
    case 2: return tiles_for_rows<V, 2>(form, rows);
    case 3: return tiles_for_rows<V, 3>(form, rows);
    default: return tiles_for_rows<V, 4>(form, rows);
  }
}

}  // namespace
}  // namespace gemmlab::cpu::small_m
