// What both engines share about a mapping: the tile grid, the loop order over it, and the shape
// of a fold (the array's geometry). The engines differ in how they count: the cycle engine by
// moving operands and tracking buffer contents, the analytic engine by formulas.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "gemmlab/systolic.hpp"

namespace gemmlab::systolic::detail {

enum Dim { dim_m = 0, dim_n = 1, dim_k = 2 };

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct Grid {
  std::array<std::int64_t, 3> size{};   // M, N, K
  std::array<std::int64_t, 3> tile{};   // tile extents (full tiles)
  std::array<std::int64_t, 3> count{};  // tiles per dimension
  std::array<int, 3> order{};           // dimensions, outermost loop first

  Grid(const Mapping& mapping, std::int64_t m, std::int64_t n, std::int64_t k);
  // Extent of tile `index` along `dim` (the last one may be short).
  std::int64_t extent(int dim, std::int64_t index) const {
    return std::min(tile[dim], size[dim] - index * tile[dim]);
  }
  std::int64_t steps() const { return count[0] * count[1] * count[2]; }
};

// The loop order "mnk" as dimension indices; throws SimulationError for anything else than a
// permutation of m, n and k.
std::array<int, 3> parse_loop_order(const std::string& text);

// Array rows, columns and stream length of one tile's folds, by dataflow:
//   ws: rows <- K, columns <- N, stream M;  is: rows <- K, columns <- M, stream N;
//   os: rows <- M, columns <- N, stream K.
struct FoldShape {
  std::int64_t row_extent, col_extent, stream;
};
inline FoldShape fold_shape(Dataflow d, std::int64_t tm, std::int64_t tn, std::int64_t tk) {
  switch (d) {
    case Dataflow::ws: return {tk, tn, tm};
    case Dataflow::is: return {tk, tm, tn};
    case Dataflow::os: return {tm, tn, tk};
  }
  return {0, 0, 0};
}

// Physical cycles of one fold: ws/is load the stationary operand (R cycles), stream (stream + R +
// C - 2 cycles until the last partial sum leaves the array); os streams (stream + R + C - 2 cycles
// until the last cell's last multiply-accumulate), then drains C out of the bottom (R cycles).
inline std::int64_t fold_cycles(std::int64_t rows, std::int64_t cols, std::int64_t stream) {
  return 2 * rows + cols + stream - 2;
}

// Off-chip transfer time: `bytes` at `millibytes_per_cycle` / 1000 bytes per cycle (0: no time).
inline std::int64_t transfer_cycles(std::int64_t bytes, std::int64_t millibytes_per_cycle) {
  return millibytes_per_cycle == 0 || bytes == 0 ? 0 : ceil_div(bytes * 1000, millibytes_per_cycle);
}
std::int64_t millibytes_per_cycle(const ArraySpec& array);  // 0: unlimited

// Bytes of one element of A/B, and of C on chip and off chip (4: fp32 or int32 accumulators).
inline std::int64_t input_bytes(Precision p) { return static_cast<std::int64_t>(element_size(p)); }
inline constexpr std::int64_t accumulator_bytes = 4;

}  // namespace gemmlab::systolic::detail
