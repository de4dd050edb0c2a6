// 02_buffer_tiled — tiles as large as the buffers allow, visited in the order that reuses them.
//
// Idea over 01: an operand tile that stays on chip is fetched once instead of once per use. With
// TM x TK of A, TK x TN of B and TM x TN accumulators on chip, each fold streams TM (ws), TN (is)
// or TK (os) elements instead of R past the same fill and drain, and the loop order decides which
// tile survives from one step to the next: with k innermost (mnk, nmk) the accumulators stay until
// C is finished; with k outer, partial sums leave the chip and come back. When off-chip bandwidth
// is short, the array stalls until a tile's operands arrive, and larger, better-ordered tiles
// stall less. The default is the heuristic baseline (runtime: heuristic_mapping): weight-
// stationary, order m-n-k, array-sized tiles doubled until the buffers are full.
// Hardware: the ifmap, filter and ofmap buffers (double-buffered), off-chip bandwidth, the array.
// Parameters: TM, TN, TK (tile extents; 1 to 64 times the array's size in powers of two), LOOP
// (loop order over tiles), DATAFLOW.
// Constraints: the A and B tiles (in the input precision) and the C tile (4-byte accumulators)
// each fit in half of their buffer. The exact expressions: require_buffers (systolic_kernel.cpp),
// as `gemmlab kernels --backend systolic` prints them for a precision.
#include "systolic_kernel.hpp"

namespace gemmlab::systolic {
namespace {

class BufferTiled final : public SystolicKernel {
 public:
  BufferTiled()
      : SystolicKernel("02_buffer_tiled", "tiles filling the buffers, loop order and dataflow chosen for reuse") {}

  SearchSpace space(const DeviceInfo& device, Precision precision) const override {
    const ArraySpec& a = array_for(device);
    SearchSpace s;
    s.add("TM", pow2_range(a.rows, 64 * a.rows), "rows of A and C per tile")
        .add("TN", pow2_range(a.cols, 64 * a.cols), "columns of B and C per tile")
        .add("TK", pow2_range(a.rows, 64 * a.rows), "depth (columns of A, rows of B) per tile")
        .add("LOOP", int_range(0, static_cast<ParamValue>(loop_orders.size()) - 1), loop_order_help())
        .add("DATAFLOW", {0, 1, 2}, dataflow_help());
    s.derive("tile_m", "TM", "rows of C a tile covers")
        .derive("tile_n", "TN", "columns of C a tile covers");
    require_buffers(s, a, precision);
    return s;
  }
  // The heuristic baseline, so that tuning starts from it and never ends worse.
  Config preferred_config(const DeviceInfo& device, Precision precision) const override {
    const ArraySpec& a = array_for(device);
    const Mapping h = heuristic_mapping(a, precision);
    // Unbounded buffers: the largest tiles of the space stand for "the whole GEMM".
    auto or_largest = [](std::int64_t tile, std::int64_t step) { return tile > 0 ? tile : 64 * step; };
    return {{"TM", or_largest(h.tile_m, a.rows)}, {"TN", or_largest(h.tile_n, a.cols)},
            {"TK", or_largest(h.tile_k, a.rows)}, {"LOOP", loop_order_value(h.loop_order)},
            {"DATAFLOW", dataflow_value(h.dataflow)}};
  }
  Mapping mapping(const ArraySpec&, const Config& c) const override {
    return {.dataflow = dataflows[static_cast<std::size_t>(c.at("DATAFLOW"))], .tile_m = c.at("TM"),
            .tile_n = c.at("TN"), .tile_k = c.at("TK"),
            .loop_order = loop_orders[static_cast<std::size_t>(c.at("LOOP"))]};
  }
};

}  // namespace

std::unique_ptr<Kernel> make_buffer_tiled() { return std::make_unique<BufferTiled>(); }

}  // namespace gemmlab::systolic
