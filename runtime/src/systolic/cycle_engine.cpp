// The cycle-level engine: every cycle, every cell of the array takes its operands from its
// neighbours and multiply-accumulates; the DMA moves bandwidth bytes; the buffers remember which
// tiles they hold. It computes the real C and counts what it does. Also the functional model:
// the same arithmetic in the same order, without the cells.
//
// Arithmetic, as the hardware does it: a cell's multiply-accumulate is fused (fp32 products of
// bf16 inputs are exact, so for bf16 it equals multiply-then-add); partial sums and the
// accumulators are fp32 (int32 for int8, wrapping like the hardware's adders); C = alpha * acc +
// beta * C is applied once, when the result leaves the accumulators.
//
// Speed: the cell state is three R x C arrays (stationary/vertical operand, horizontal operand,
// partial sums) updated row by row, bottom row first, so every row's update is a vector
// operation over its C cells; no allocation happens per cycle.
#include <cmath>
#include <cstring>
#include <vector>

#include "gemmlab/systolic.hpp"
#include "gemmlab/validate.hpp"
#include "systolic/tiling.hpp"

namespace gemmlab::systolic {

using namespace detail;

namespace {

// --- Row operations, compiled for the widest vector unit present --------------------------------

// p[i] = a[i] * w[i] + above[i] for one row of cells (above may be p itself).
using MacRowF = void (*)(float*, const float*, const float*, const float*, std::int64_t);
// p[i] = a * b[i] + p[i] (functional model).
using AxpyF = void (*)(float*, float, const float*, std::int64_t);

template <class T>
inline T mac(T a, T w, T p) {
  if constexpr (std::is_same_v<T, float>) {
    return std::fma(a, w, p);
  } else {  // int32, wrapping as the hardware's adders do
    return static_cast<T>(static_cast<std::uint32_t>(p) + static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(w));
  }
}
template <class T>
inline T add(T x, T y) {
  if constexpr (std::is_same_v<T, float>) {
    return x + y;
  } else {
    return static_cast<T>(static_cast<std::uint32_t>(x) + static_cast<std::uint32_t>(y));
  }
}

// The same loops compiled three times; the widest the CPU has is chosen once, at first use.
[[gnu::target("avx512f,avx512vl,fma")]] void mac_row_avx512(float* p, const float* above, const float* a,
                                                             const float* w, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = std::fma(a[i], w[i], above[i]);
}
[[gnu::target("avx512f,avx512vl,fma")]] void axpy_avx512(float* p, float a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = std::fma(a, b[i], p[i]);
}
[[gnu::target("avx2,fma")]] void mac_row_avx2(float* p, const float* above, const float* a, const float* w,
                                              std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = std::fma(a[i], w[i], above[i]);
}
[[gnu::target("avx2,fma")]] void axpy_avx2(float* p, float a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = std::fma(a, b[i], p[i]);
}
void mac_row_generic(float* p, const float* above, const float* a, const float* w, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = std::fma(a[i], w[i], above[i]);
}
void axpy_generic(float* p, float a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = std::fma(a, b[i], p[i]);
}

struct RowOps {
  MacRowF mac_row;
  AxpyF axpy;
};
const RowOps& row_ops() {
  static const RowOps ops = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return RowOps{mac_row_avx512, axpy_avx512};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return RowOps{mac_row_avx2, axpy_avx2};
    return RowOps{mac_row_generic, axpy_generic};
  }();
  return ops;
}

template <class T>
void mac_row(T* p, const T* above, const T* a, const T* w, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    row_ops().mac_row(p, above, a, w, n);
  } else {
    for (std::int64_t i = 0; i < n; ++i) p[i] = mac(a[i], w[i], above[i]);
  }
}
template <class T>
void axpy(T* p, T a, const T* b, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    row_ops().axpy(p, a, b, n);
  } else {
    for (std::int64_t i = 0; i < n; ++i) p[i] = mac(a, b[i], p[i]);
  }
}

// --- Operands in the array's arithmetic ---------------------------------------------------------

template <class T>
struct Matrices {
  std::int64_t m, n, k;
  std::vector<T> a, b;  // m x k, k x n, packed
  std::vector<T> acc;   // m x n accumulators (the on-chip C tiles and the partial sums spilled off chip)
};

template <class T>
Matrices<T> load(std::int64_t m, std::int64_t n, std::int64_t k, Precision p, const GemmData& d) {
  Matrices<T> x{m, n, k, std::vector<T>(static_cast<std::size_t>(m * k)), std::vector<T>(static_cast<std::size_t>(k * n)),
                std::vector<T>(static_cast<std::size_t>(m * n), T{})};
  auto element = [p](const void* base, std::int64_t index) -> T {
    switch (p) {
      case Precision::int8: return static_cast<T>(static_cast<const std::int8_t*>(base)[index]);
      case Precision::bf16: return static_cast<T>(from_bf16(static_cast<const std::uint16_t*>(base)[index]));
      default: return static_cast<T>(static_cast<const float*>(base)[index]);
    }
  };
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) x.a[static_cast<std::size_t>(i * k + j)] = element(d.a, i * d.lda + j);
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < n; ++j) x.b[static_cast<std::size_t>(i * n + j)] = element(d.b, i * d.ldb + j);
  return x;
}

// C = alpha * acc + beta * C, as the results leave the accumulators (beta == 0: C is not read).
template <class T>
void finish(const Matrices<T>& x, const GemmData& d) {
  if (d.c == nullptr) return;
  for (std::int64_t i = 0; i < x.m; ++i)
    for (std::int64_t j = 0; j < x.n; ++j) {
      const T acc = x.acc[static_cast<std::size_t>(i * x.n + j)];
      if constexpr (std::is_same_v<T, float>) {
        float& c = static_cast<float*>(d.c)[i * d.ldc + j];
        const float scaled = static_cast<float>(d.alpha) * acc;
        c = d.beta == 0 ? scaled : scaled + static_cast<float>(d.beta) * c;
      } else {
        std::int32_t& c = static_cast<std::int32_t*>(d.c)[i * d.ldc + j];
        const auto alpha = static_cast<std::uint32_t>(static_cast<std::int64_t>(d.alpha));
        const auto beta = static_cast<std::uint32_t>(static_cast<std::int64_t>(d.beta));
        std::uint32_t value = alpha * static_cast<std::uint32_t>(acc);
        if (d.beta != 0) value += beta * static_cast<std::uint32_t>(c);
        c = static_cast<std::int32_t>(value);
      }
    }
}

// --- The array -----------------------------------------------------------------------------------

// Off-chip transfers: what is outstanding, drained by the bandwidth every cycle.
struct Dma {
  std::int64_t bandwidth = 0;  // millibytes per cycle; 0: unlimited
  std::int64_t pending = 0;    // millibytes
  void start(std::int64_t bytes) { pending = bandwidth == 0 ? 0 : bytes * 1000; }
  void tick() { pending = std::max<std::int64_t>(0, pending - bandwidth); }
  bool busy() const { return pending > 0; }
};

template <class T>
class Array {
 public:
  Array(std::int64_t rows, std::int64_t cols, Dma& dma, Counts& counts)
      : R(rows), C(cols), dma_(dma), counts_(counts),
        held_(static_cast<std::size_t>(rows * cols)), moving_(held_.size()), sums_(held_.size()),
        zeros_(static_cast<std::size_t>(cols)) {}

  std::int64_t cycle = 0;

  // One weight-/input-stationary fold: the stationary block (rows_used x cols_used, stationary(r,
  // c)) shifts in from the top, one row per cycle; then stream element s of row r enters at the
  // left edge at cycle s + r, moves one cell right per cycle, and meets partial sums moving one
  // cell down per cycle; column c's sum for stream element s leaves the bottom at cycle s + R - 1 + c.
  template <class Stationary, class Streamed, class Output>
  void stationary_fold(std::int64_t rows_used, std::int64_t cols_used, std::int64_t L, Stationary stationary,
                       Streamed streamed, Output output) {
    for (std::int64_t t = 0; t < R; ++t) {
      for (std::int64_t r = R - 1; r > 0; --r) std::memcpy(row(held_, r), row(held_, r - 1), sizeof(T) * static_cast<std::size_t>(C));
      const std::int64_t source = R - 1 - t;  // so that row r holds stationary row r after R cycles
      T* top = row(held_, 0);
      for (std::int64_t c = 0; c < C; ++c) {
        const bool valid = source < rows_used && c < cols_used;
        top[c] = valid ? stationary(source, c) : T{};
      }
      clock();
    }
    std::fill(moving_.begin(), moving_.end(), T{});
    std::fill(sums_.begin(), sums_.end(), T{});
    for (std::int64_t t = 0; t < L + R + C - 2; ++t) {
      for (std::int64_t r = R - 1; r >= 0; --r) {
        const T* a = enter_left(r, t, rows_used, L, streamed);
        mac_row(row(sums_, r), r > 0 ? row(sums_, r - 1) : zeros_.data(), a, row(held_, r), C);
      }
      const T* bottom = row(sums_, R - 1);
      for (std::int64_t c = 0; c < cols_used; ++c) {
        const std::int64_t s = t - (R - 1) - c;
        if (s >= 0 && s < L) output(s, c, bottom[c]);
      }
      clock();
    }
  }

  // One output-stationary fold: A's row r enters the left edge skewed by r, B's column c the top
  // edge skewed by c; cell (r, c) accumulates A(r, s) * B(s, c) at cycle s + r + c; then the sums
  // shift out of the bottom, one row per cycle.
  template <class Left, class Top, class Output>
  void output_stationary_fold(std::int64_t rows_used, std::int64_t cols_used, std::int64_t L, Left left, Top top,
                              Output output) {
    std::fill(moving_.begin(), moving_.end(), T{});
    std::fill(held_.begin(), held_.end(), T{});  // the vertical operand here
    std::fill(sums_.begin(), sums_.end(), T{});
    for (std::int64_t t = 0; t < L + R + C - 2; ++t) {
      for (std::int64_t r = R - 1; r >= 0; --r) {
        const T* a = enter_left(r, t, rows_used, L, left);
        T* b = row(held_, r);
        if (r > 0) {
          std::memcpy(b, row(held_, r - 1), sizeof(T) * static_cast<std::size_t>(C));
        } else {
          for (std::int64_t c = 0; c < C; ++c) {
            const std::int64_t sc = t - c;
            const bool in = c < cols_used && sc >= 0 && sc < L;
            b[c] = in ? top(sc, c) : T{};
          }
        }
        mac_row(row(sums_, r), row(sums_, r), a, b, C);
      }
      clock();
    }
    for (std::int64_t t = 0; t < R; ++t) {
      const std::int64_t r_out = R - 1 - t;  // the row now at the bottom edge
      const T* bottom = row(sums_, R - 1);
      if (r_out < rows_used)
        for (std::int64_t c = 0; c < cols_used; ++c) output(r_out, c, bottom[c]);
      for (std::int64_t r = R - 1; r > 0; --r) std::memcpy(row(sums_, r), row(sums_, r - 1), sizeof(T) * static_cast<std::size_t>(C));
      std::fill(row(sums_, 0), row(sums_, 0) + C, T{});
      clock();
    }
  }

 private:
  T* row(std::vector<T>& v, std::int64_t r) { return v.data() + r * C; }
  // Row r of the horizontally moving operand shifts one cell right; at the left edge enters
  // element s = t - r of the row's stream (value(s, r)) while it lasts, zero otherwise.
  template <class Value>
  const T* enter_left(std::int64_t r, std::int64_t t, std::int64_t rows_used, std::int64_t L, Value& value) {
    T* a = row(moving_, r);
    std::memmove(a + 1, a, sizeof(T) * static_cast<std::size_t>(C - 1));
    const std::int64_t s = t - r;
    a[0] = r < rows_used && s >= 0 && s < L ? value(s, r) : T{};
    return a;
  }
  void clock() {
    ++cycle;
    ++counts_.compute_cycles;
    counts_.cell_updates += R * C;
    dma_.tick();
  }

  std::int64_t R, C;
  Dma& dma_;
  Counts& counts_;
  std::vector<T> held_, moving_, sums_, zeros_;
};

// One on-chip tile (extents tm x tn x tk at m0, n0, k0) through the array, fold by fold: column
// folds outer, row folds inner (as SCALE-Sim orders them). Every element read from a buffer or
// written to the accumulators is counted (and traced) where it crosses the array's edge.
template <class T>
void run_tile(Array<T>& array, Matrices<T>& x, Dataflow dataflow, std::int64_t R, std::int64_t C, std::int64_t m0,
              std::int64_t n0, std::int64_t k0, std::int64_t tm, std::int64_t tn, std::int64_t tk, Counts& counts,
              const std::function<void(const TraceEvent&)>& trace) {
  using Kind = TraceEvent::Kind;
  const FoldShape s = fold_shape(dataflow, tm, tn, tk);
  const std::int64_t N = x.n, K = x.k;
  const T* a = x.a.data();
  const T* b = x.b.data();
  T* acc = x.acc.data();
  auto read_a = [&](std::int64_t i, std::int64_t p) {
    ++counts.ifmap_sram_reads;
    if (trace) trace({.cycle = array.cycle, .kind = Kind::ifmap_read, .row = i, .col = p});
    return a[i * K + p];
  };
  auto read_b = [&](std::int64_t p, std::int64_t j) {
    ++counts.filter_sram_reads;
    if (trace) trace({.cycle = array.cycle, .kind = Kind::filter_read, .row = p, .col = j});
    return b[p * N + j];
  };
  auto write_c = [&](std::int64_t i, std::int64_t j, T v) {
    ++counts.ofmap_sram_writes;
    if (trace) trace({.cycle = array.cycle, .kind = Kind::ofmap_write, .row = i, .col = j});
    T& out = acc[i * N + j];
    out = add(out, v);
  };
  for (std::int64_t c0 = 0; c0 < s.col_extent; c0 += C)
    for (std::int64_t r0 = 0; r0 < s.row_extent; r0 += R) {
      const std::int64_t rows = std::min(R, s.row_extent - r0), cols = std::min(C, s.col_extent - c0);
      counts.last_fold_start = array.cycle;
      ++counts.folds;
      counts.mapped_cells += rows * cols;
      switch (dataflow) {
        case Dataflow::ws:  // B block held; rows of A stream; sums of C's rows leave per column
          array.stationary_fold(
              rows, cols, s.stream, [&](std::int64_t r, std::int64_t c) { return read_b(k0 + r0 + r, n0 + c0 + c); },
              [&](std::int64_t i, std::int64_t r) { return read_a(m0 + i, k0 + r0 + r); },
              [&](std::int64_t i, std::int64_t c, T v) { write_c(m0 + i, n0 + c0 + c, v); });
          break;
        case Dataflow::is:  // A block held (K down, M across); columns of B stream
          array.stationary_fold(
              rows, cols, s.stream, [&](std::int64_t r, std::int64_t c) { return read_a(m0 + c0 + c, k0 + r0 + r); },
              [&](std::int64_t j, std::int64_t r) { return read_b(k0 + r0 + r, n0 + j); },
              [&](std::int64_t j, std::int64_t c, T v) { write_c(m0 + c0 + c, n0 + j, v); });
          break;
        case Dataflow::os:  // C block accumulates in place over the tile's K
          array.output_stationary_fold(
              rows, cols, s.stream, [&](std::int64_t p, std::int64_t r) { return read_a(m0 + r0 + r, k0 + p); },
              [&](std::int64_t p, std::int64_t c) { return read_b(k0 + p, n0 + c0 + c); },
              [&](std::int64_t r, std::int64_t c, T v) { write_c(m0 + r0 + r, n0 + c0 + c, v); });
          break;
      }
    }
}

template <class T>
Counts run_cycles(const ArraySpec& spec, const Mapping& mapping, std::int64_t m, std::int64_t n, std::int64_t k,
                  Precision precision, const GemmData& data) {
  const Grid grid(mapping, m, n, k);
  Counts counts;
  counts.macs = m * n * k;
  Matrices<T> x = load<T>(m, n, k, precision, data);
  Dma dma{.bandwidth = millibytes_per_cycle(spec)};
  Array<T> array(spec.rows, spec.cols, dma, counts);
  const std::int64_t in_bytes = input_bytes(precision);
  const std::int64_t steps = grid.steps();

  // The tiles in loop order.
  std::vector<std::array<std::int64_t, 3>> order;
  order.reserve(static_cast<std::size_t>(steps));
  std::array<std::int64_t, 3> at{};
  const auto [d0, d1, d2] = grid.order;
  for (at[d0] = 0; at[d0] < grid.count[d0]; ++at[d0])
    for (at[d1] = 0; at[d1] < grid.count[d1]; ++at[d1])
      for (at[d2] = 0; at[d2] < grid.count[d2]; ++at[d2]) order.push_back(at);

  // What the buffers hold: the A and B tiles in use, whether each C tile has partial sums off chip.
  struct Held {
    std::int64_t a = -1, b = -1, c = -1;
  } held;
  std::vector<bool> started(static_cast<std::size_t>(grid.count[dim_m] * grid.count[dim_n]), false);
  auto a_id = [&](const auto& t) { return t[dim_m] * grid.count[dim_k] + t[dim_k]; };
  auto b_id = [&](const auto& t) { return t[dim_k] * grid.count[dim_n] + t[dim_n]; };
  auto c_id = [&](const auto& t) { return t[dim_m] * grid.count[dim_n] + t[dim_n]; };
  auto ext = [&](const auto& t, int d) { return grid.extent(d, t[static_cast<std::size_t>(d)]); };
  // Bytes to bring in for tile t given what is held, updating the holdings (the other half of
  // each double buffer receives them).
  auto fetch = [&](const std::array<std::int64_t, 3>& t) {
    std::int64_t bytes = 0;
    if (a_id(t) != held.a) {
      counts.ifmap_dram_reads += ext(t, dim_m) * ext(t, dim_k);
      bytes += ext(t, dim_m) * ext(t, dim_k) * in_bytes;
      held.a = a_id(t);
    }
    if (b_id(t) != held.b) {
      counts.filter_dram_reads += ext(t, dim_k) * ext(t, dim_n);
      bytes += ext(t, dim_k) * ext(t, dim_n) * in_bytes;
      held.b = b_id(t);
    }
    if (c_id(t) != held.c) {
      const auto id = static_cast<std::size_t>(c_id(t));
      if (started[id] || data.beta != 0) {
        counts.ofmap_dram_reads += ext(t, dim_m) * ext(t, dim_n);
        bytes += ext(t, dim_m) * ext(t, dim_n) * accumulator_bytes;
      }
      started[id] = true;
      held.c = c_id(t);
    }
    return bytes;
  };
  auto write_back = [&](const std::array<std::int64_t, 3>& t) {
    counts.ofmap_dram_writes += ext(t, dim_m) * ext(t, dim_n);
    return ext(t, dim_m) * ext(t, dim_n) * accumulator_bytes;
  };
  auto wait_for_dma = [&] {
    while (dma.busy()) {
      dma.tick();
      ++array.cycle;
    }
  };

  if (steps > 0) {
    dma.start(fetch(order[0]));
    wait_for_dma();
    counts.first_fold_start = array.cycle;
  }
  std::int64_t finished_c = 0;  // bytes of the C tile whose visit ended with the previous tile
  for (std::int64_t i = 0; i < steps; ++i) {
    const auto& t = order[static_cast<std::size_t>(i)];
    // Remember this tile's holdings: fetch() for the next tile replaces them.
    const Held current = held;
    std::int64_t traffic = finished_c;
    if (i + 1 < steps) traffic += fetch(order[static_cast<std::size_t>(i + 1)]);
    dma.start(traffic);
    run_tile(array, x, mapping.dataflow, spec.rows, spec.cols, t[dim_m] * grid.tile[dim_m], t[dim_n] * grid.tile[dim_n],
             t[dim_k] * grid.tile[dim_k], ext(t, dim_m), ext(t, dim_n), ext(t, dim_k), counts, data.trace);
    wait_for_dma();
    finished_c = (i + 1 == steps || c_id(order[static_cast<std::size_t>(i + 1)]) != current.c) ? write_back(t) : 0;
  }
  dma.start(finished_c);
  wait_for_dma();
  counts.total_cycles = array.cycle;
  counts.stall_cycles = counts.total_cycles - counts.compute_cycles;
  finish(x, data);
  return counts;
}

// The functional model: for each element, the same fused multiply-adds in the same order as the
// array (partial sums over each fold's K range from zero, then added to the accumulator in K order).
template <class T>
void run_functional(const Mapping& mapping, std::int64_t R, std::int64_t m, std::int64_t n, std::int64_t k,
                    Precision precision, const GemmData& data) {
  const Grid grid(mapping, m, n, k);
  Matrices<T> x = load<T>(m, n, k, precision, data);
  const std::int64_t chunk = mapping.dataflow == Dataflow::os ? grid.tile[dim_k] : std::min(R, grid.tile[dim_k]);
  std::vector<T> partial(static_cast<std::size_t>(n));
  for (std::int64_t tile_k0 = 0; tile_k0 < k; tile_k0 += grid.tile[dim_k]) {
    const std::int64_t tile_end = std::min(k, tile_k0 + grid.tile[dim_k]);
    for (std::int64_t k0 = tile_k0; k0 < tile_end; k0 += chunk) {
      const std::int64_t k1 = std::min(tile_end, k0 + chunk);
      for (std::int64_t i = 0; i < m; ++i) {
        std::fill(partial.begin(), partial.end(), T{});
        for (std::int64_t p = k0; p < k1; ++p)
          axpy(partial.data(), x.a[static_cast<std::size_t>(i * k + p)], x.b.data() + p * n, n);
        T* acc = x.acc.data() + i * n;
        for (std::int64_t j = 0; j < n; ++j) acc[j] = add(acc[j], partial[static_cast<std::size_t>(j)]);
      }
    }
  }
  finish(x, data);
}

void check_data(const GemmData& d, std::int64_t m, std::int64_t n, std::int64_t k) {
  if (m > 0 && k > 0 && (d.a == nullptr || d.lda < k)) throw SimulationError("A is missing or lda < K");
  if (k > 0 && n > 0 && (d.b == nullptr || d.ldb < n)) throw SimulationError("B is missing or ldb < N");
  if (d.c != nullptr && d.ldc < n) throw SimulationError("ldc < N");
}

}  // namespace

Counts simulate_cycles(const ArraySpec& array, const Mapping& mapping, std::int64_t m, std::int64_t n, std::int64_t k,
                       Precision precision, const GemmData& data) {
  check(array, mapping, m, n, k, precision);
  check_data(data, m, n, k);
  return precision == Precision::int8 ? run_cycles<std::int32_t>(array, mapping, m, n, k, precision, data)
                                      : run_cycles<float>(array, mapping, m, n, k, precision, data);
}

void compute_functional(const ArraySpec& array, const Mapping& mapping, std::int64_t m, std::int64_t n, std::int64_t k,
                        Precision precision, const GemmData& data) {
  check(array, mapping, m, n, k, precision);
  check_data(data, m, n, k);
  if (precision == Precision::int8) {
    run_functional<std::int32_t>(mapping, array.rows, m, n, k, precision, data);
  } else {
    run_functional<float>(mapping, array.rows, m, n, k, precision, data);
  }
}

}  // namespace gemmlab::systolic
