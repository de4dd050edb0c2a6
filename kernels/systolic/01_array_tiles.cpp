// 01_array_tiles — the GEMM streamed through the array one array-sized block at a time.
//
// Idea: a systolic array computes an R x C block of work per fold: in weight-stationary order it
// holds an R x C block of B (K rows by N columns), rows of A flow through it from the left and
// partial sums flow down its columns into the accumulators. The simplest mapping keeps exactly
// one such block of each operand on chip: tiles of R x R (A), R x C (B) and R x C (C), visited in
// the order m, n, k. Every tile is fetched from off-chip memory when it is needed, and each fold
// streams only R rows of A past weights that took R cycles to load.
// Hardware: the R x C multiply-accumulate array, its fill and drain (2R + C - 2 cycles per fold
// beside the R streamed rows), off-chip bandwidth.
// Parameters: DATAFLOW (ws, os or is: which operand stays in the cells); TM, TN, TK are fixed at
// the array's R, C and R.
// Constraints: each array-sized tile fits in half of its buffer (double-buffered); with wide
// elements a small buffer may hold none, and the precision has no valid configuration. The exact
// expressions: require_buffers (systolic_kernel.cpp), as `gemmlab kernels --backend systolic`
// prints them for a precision.
#include "systolic_kernel.hpp"

namespace gemmlab::systolic {
namespace {

class ArrayTiles final : public SystolicKernel {
 public:
  ArrayTiles() : SystolicKernel("01_array_tiles", "one array-sized tile of each operand on chip at a time") {}

  SearchSpace space(const DeviceInfo& device, Precision precision) const override {
    const ArraySpec& a = array_for(device);
    SearchSpace s;
    s.add("DATAFLOW", {0, 1, 2}, dataflow_help())
        .add("TM", {a.rows}, "rows of A and C per tile: the array's rows")
        .add("TN", {a.cols}, "columns of B and C per tile: the array's columns")
        .add("TK", {a.rows}, "depth per tile: the array's rows");
    s.derive("tile_m", "TM", "rows of C a tile covers")
        .derive("tile_n", "TN", "columns of C a tile covers");
    require_buffers(s, a, precision);
    return s;
  }
  Config preferred_config(const DeviceInfo& device, Precision) const override {
    const ArraySpec& a = array_for(device);
    return {{"DATAFLOW", 0}, {"TM", a.rows}, {"TN", a.cols}, {"TK", a.rows}};
  }
  Mapping mapping(const ArraySpec&, const Config& c) const override {
    return {.dataflow = dataflows[static_cast<std::size_t>(c.at("DATAFLOW"))],
            .tile_m = c.at("TM"), .tile_n = c.at("TN"), .tile_k = c.at("TK"), .loop_order = "mnk"};
  }
};

}  // namespace

std::unique_ptr<Kernel> make_array_tiles() { return std::make_unique<ArrayTiles>(); }

}  // namespace gemmlab::systolic
