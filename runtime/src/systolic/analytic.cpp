// The analytic engine: the same counts as the cycle engine, from formulas.
//
// Tiles run one after another in loop order. While tile i computes, the DMA brings in tile i+1's
// new operands and writes back tile i-1's finished (or partial) C; tile i's window lasts
// max(compute_i, transfer_i). Before the first window the first tile is loaded, after the last
// one its C is written.
//
// A sum over all tiles would take time proportional to their number. It does not need to: what
// a tile costs depends only on whether each of its indices is the first, the last, or one in
// between (edge tiles are short; reuse depends on which index changed; partial sums exist after
// the first K tile) and on the same of its neighbours. All indices from 2 to count-3 of a
// dimension therefore give the same windows, so index 2 stands for all of them with a weight:
// at most 5 x 5 x 5 evaluations answer any size.
#include <vector>

#include "gemmlab/systolic.hpp"
#include "systolic/tiling.hpp"

namespace gemmlab::systolic {

using namespace detail;

namespace {

using Index = std::array<std::int64_t, 3>;  // tile index by dimension (m, n, k)

struct Representative {
  std::int64_t index, weight;
};
std::vector<Representative> representatives(std::int64_t count) {
  if (count <= 5) {
    std::vector<Representative> all;
    for (std::int64_t i = 0; i < count; ++i) all.push_back({i, 1});
    return all;
  }
  return {{0, 1}, {1, 1}, {2, count - 4}, {count - 2, 1}, {count - 1, 1}};
}

// The neighbour of `at` in loop order (the innermost dimension moves fastest); false at the ends.
bool step_by(const Grid& g, Index& at, int direction) {
  for (int level = 2; level >= 0; --level) {
    const int d = g.order[static_cast<std::size_t>(level)];
    const std::int64_t next = at[static_cast<std::size_t>(d)] + direction;
    if (next >= 0 && next < g.count[static_cast<std::size_t>(d)]) {
      at[static_cast<std::size_t>(d)] = next;
      return true;
    }
    at[static_cast<std::size_t>(d)] = direction > 0 ? 0 : g.count[static_cast<std::size_t>(d)] - 1;
  }
  return false;
}

struct Model {
  const Grid& grid;
  std::int64_t R, C;
  Dataflow dataflow;
  std::int64_t in_bytes;
  bool beta_nonzero;
  std::int64_t bandwidth;  // millibytes per cycle

  std::int64_t extent(int d, const Index& at) const { return grid.extent(d, at[static_cast<std::size_t>(d)]); }

  // Counts of the tile at `at` alone (compute, folds, on-chip traffic).
  void add_tile(const Index& at, std::int64_t weight, Counts& c) const {
    const std::int64_t tm = extent(dim_m, at), tn = extent(dim_n, at), tk = extent(dim_k, at);
    const FoldShape s = fold_shape(dataflow, tm, tn, tk);
    const std::int64_t row_folds = ceil_div(s.row_extent, R), col_folds = ceil_div(s.col_extent, C);
    const std::int64_t folds = row_folds * col_folds;
    c.folds += weight * folds;
    c.compute_cycles += weight * folds * fold_cycles(R, C, s.stream);
    c.mapped_cells += weight * s.row_extent * s.col_extent;
    // ws/is: the stationary operand is read once, the streamed one once per column fold, and
    // every row fold writes its partial sums; os: A once per column fold, B once per row fold.
    const std::int64_t stationary = s.row_extent * s.col_extent;
    const std::int64_t streamed = s.stream * s.row_extent * col_folds;
    const std::int64_t outputs = s.stream * s.col_extent * row_folds;
    switch (dataflow) {
      case Dataflow::ws:
        c.ifmap_sram_reads += weight * streamed;
        c.filter_sram_reads += weight * stationary;
        c.ofmap_sram_writes += weight * outputs;
        break;
      case Dataflow::is:
        c.ifmap_sram_reads += weight * stationary;
        c.filter_sram_reads += weight * streamed;
        c.ofmap_sram_writes += weight * outputs;
        break;
      case Dataflow::os:
        c.ifmap_sram_reads += weight * tm * tk * col_folds;
        c.filter_sram_reads += weight * tk * tn * row_folds;
        c.ofmap_sram_writes += weight * tm * tn;
        break;
    }
  }

  // Off-chip words the tile at `at` brings in, given the tile before it (null: none).
  struct Inputs {
    std::int64_t a = 0, b = 0, c = 0;  // words
    std::int64_t bytes = 0;
  };
  Inputs inputs(const Index& at, const Index* before) const {
    Inputs in;
    auto same = [&](int d1, int d2) {
      return before != nullptr && (*before)[static_cast<std::size_t>(d1)] == at[static_cast<std::size_t>(d1)] &&
             (*before)[static_cast<std::size_t>(d2)] == at[static_cast<std::size_t>(d2)];
    };
    const std::int64_t tm = extent(dim_m, at), tn = extent(dim_n, at), tk = extent(dim_k, at);
    if (!same(dim_m, dim_k)) in.a = tm * tk;
    if (!same(dim_k, dim_n)) in.b = tk * tn;
    // A new visit of a C tile reads back its partial sums, or C itself on the first when beta != 0.
    if (!same(dim_m, dim_n) && (at[dim_k] > 0 || beta_nonzero)) in.c = tm * tn;
    in.bytes = (in.a + in.b) * in_bytes + in.c * accumulator_bytes;
    return in;
  }
  // Words of C the tile at `at` writes back when its visit ends (the next tile, or none, is
  // another C tile).
  std::int64_t outputs(const Index& at, const Index* after) const {
    const bool ends = after == nullptr || (*after)[dim_m] != at[dim_m] || (*after)[dim_n] != at[dim_n];
    return ends ? extent(dim_m, at) * extent(dim_n, at) : 0;
  }
  std::int64_t compute(const Index& at) const {
    Counts c;
    add_tile(at, 1, c);
    return c.compute_cycles;
  }
  std::int64_t last_fold(const Index& at) const {
    const FoldShape s = fold_shape(dataflow, extent(dim_m, at), extent(dim_n, at), extent(dim_k, at));
    return fold_cycles(R, C, s.stream);
  }
};

}  // namespace

Counts simulate_analytic(const ArraySpec& array, const Mapping& mapping, std::int64_t m, std::int64_t n, std::int64_t k,
                         Precision precision, bool beta_nonzero) {
  check(array, mapping, m, n, k, precision);
  const Grid grid(mapping, m, n, k);
  Counts counts;
  counts.macs = m * n * k;
  if (grid.steps() == 0) return counts;
  const Model model{grid, array.rows, array.cols, mapping.dataflow, input_bytes(precision), beta_nonzero,
                    millibytes_per_cycle(array)};

  const auto reps_m = representatives(grid.count[dim_m]), reps_n = representatives(grid.count[dim_n]),
             reps_k = representatives(grid.count[dim_k]);
  std::int64_t windows = 0;
  for (const auto& im : reps_m)
    for (const auto& in : reps_n)
      for (const auto& ik : reps_k) {
        const std::int64_t weight = im.weight * in.weight * ik.weight;
        const Index at{im.index, in.index, ik.index};
        Index before = at, after = at;
        const bool has_before = step_by(grid, before, -1), has_after = step_by(grid, after, +1);
        model.add_tile(at, weight, counts);
        const auto own = model.inputs(at, has_before ? &before : nullptr);
        counts.ifmap_dram_reads += weight * own.a;
        counts.filter_dram_reads += weight * own.b;
        counts.ofmap_dram_reads += weight * own.c;
        const std::int64_t written = model.outputs(at, has_after ? &after : nullptr);
        counts.ofmap_dram_writes += weight * written;
        // This tile's window: its compute beside the next tile's loads and the previous tile's
        // write-back.
        std::int64_t traffic = 0;
        if (has_after) traffic += model.inputs(after, &at).bytes;
        if (has_before) traffic += model.outputs(before, &at) * accumulator_bytes;
        windows += weight * std::max(model.compute(at), transfer_cycles(traffic, model.bandwidth));
      }

  const Index first{0, 0, 0};
  const Index last{grid.count[0] - 1, grid.count[1] - 1, grid.count[2] - 1};
  Index before_last = last;
  const bool has_before_last = step_by(grid, before_last, -1);
  const std::int64_t preload = transfer_cycles(model.inputs(first, nullptr).bytes, model.bandwidth);
  const std::int64_t final_write = transfer_cycles(model.outputs(last, nullptr) * accumulator_bytes, model.bandwidth);
  counts.total_cycles = preload + windows + final_write;
  counts.stall_cycles = counts.total_cycles - counts.compute_cycles;
  counts.cell_updates = counts.compute_cycles * array.rows * array.cols;
  counts.first_fold_start = preload;
  // The last window starts its tile at once; its traffic is the previous tile's write-back.
  const std::int64_t last_traffic = has_before_last ? model.outputs(before_last, &last) * accumulator_bytes : 0;
  const std::int64_t last_window = std::max(model.compute(last), transfer_cycles(last_traffic, model.bandwidth));
  counts.last_fold_start = counts.total_cycles - final_write - last_window + model.compute(last) - model.last_fold(last);
  return counts;
}

}  // namespace gemmlab::systolic
