// The systolic backend: a simulated matrix unit (an R x C array of multiply-accumulate cells, as
// in a TPU), on-chip buffers and off-chip memory of a given bandwidth. A GEMM is cut into tiles
// held on chip (the mapping: tile sizes, loop order, dataflow), and each tile into folds of the
// array's size that stream through it. Two engines give the same counts:
//   - simulate_cycles moves every operand through every cell, cycle by cycle, and computes C;
//   - simulate_analytic gives cycle, stall and traffic counts in closed form, for any size.
// See docs/architecture.md ("The systolic simulator") for the model, cycle by cycle.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gemmlab/kernel.hpp"
#include "gemmlab/problem.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab::systolic {

// Which operand stays in the cells while the others stream through:
//   ws  weight-stationary: a K x N block of B is held, rows of A stream in from the left,
//       partial sums flow down (array rows <-> K, columns <-> N, stream length M);
//   is  input-stationary: a K x M block of A (transposed) is held, columns of B stream,
//       partial sums flow down (rows <-> K, columns <-> M, stream length N);
//   os  output-stationary: an M x N block of C accumulates in place, A streams from the left and
//       B from the top (rows <-> M, columns <-> N, stream length K), then C drains out.
enum class Dataflow { ws, os, is };
std::string_view to_string(Dataflow d);
Dataflow parse_dataflow(std::string_view text);  // throws std::invalid_argument

// Error in a simulation's input (array, buffers, mapping, shape), with a message that names it.
class SimulationError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct ArraySpec {
  std::string name;                 // preset name, or "RxC" for --array
  std::int64_t rows = 0, cols = 0;  // R x C cells
  Precision precision = Precision::bf16;  // the arithmetic the hardware natively does
  double clock_ghz = 1.0;
  int arrays_per_chip = 1;          // matrix units on the chip (the simulation runs one of them)
  // On-chip buffers (bytes) for A, B and C tiles; each is double-buffered, so one tile may use
  // half. C tiles are kept as 4-byte accumulators (fp32 or int32).
  std::int64_t ifmap_buffer_bytes = 0, filter_buffer_bytes = 0, ofmap_buffer_bytes = 0;
  // Off-chip memory bandwidth available to this array, bytes per cycle (0: unlimited).
  double bandwidth_bytes_per_cycle = 0;
  std::string source;  // where the figures come from

  // 2 * R * C * clock, in GFLOP/s (GOP/s for int8), for one array and for the chip.
  double peak_gflops() const;
  double chip_peak_gflops() const { return peak_gflops() * arrays_per_chip; }
  // Throws SimulationError naming the first bad field.
  void check() const;
};

// The presets: tpu-v1 ... tpu-v5e and gemmini (figures and their sources in presets.cpp).
const std::vector<ArraySpec>& presets();
const ArraySpec& preset(std::string_view name);  // throws SimulationError listing the names
// "32x32" -> an array with unbounded buffers and bandwidth (fp32 unless changed), for
// SCALE-Sim-style experiments; throws SimulationError on a malformed or zero size.
ArraySpec parse_array(std::string_view text);

// How a GEMM is tiled on chip and streamed through the array.
struct Mapping {
  Dataflow dataflow = Dataflow::ws;
  // Tile extents held on chip; the last tile of each dimension may be smaller. 0: the whole
  // dimension.
  std::int64_t tile_m = 0, tile_n = 0, tile_k = 0;
  // Loop order over tiles, outermost first ("mnk": for each M tile, each N tile, each K tile).
  std::string loop_order = "mnk";
};

// Counts in words (elements), as SCALE-Sim reports them, plus cycles.
struct Counts {
  std::int64_t total_cycles = 0;    // first operand fetched to last result written back
  std::int64_t compute_cycles = 0;  // cycles the array is busy (weight load, stream, drain)
  std::int64_t stall_cycles = 0;    // total - compute: waiting for off-chip memory
  std::int64_t folds = 0;           // array-sized passes
  std::int64_t ifmap_sram_reads = 0, filter_sram_reads = 0, ofmap_sram_writes = 0;
  std::int64_t ifmap_dram_reads = 0, filter_dram_reads = 0;
  std::int64_t ofmap_dram_reads = 0;   // partial sums (and C when beta != 0) read back
  std::int64_t ofmap_dram_writes = 0;  // results and spilled partial sums
  std::int64_t cell_updates = 0;       // cycles x R x C the array was clocked
  std::int64_t macs = 0;               // useful multiply-accumulates: M * N * K
  std::int64_t mapped_cells = 0;       // sum over folds of the cells holding real data (ws/is:
                                       // stationary operand; os: outputs)
  std::int64_t first_fold_start = 0;   // cycle the array starts its first fold
  std::int64_t last_fold_start = 0;    // cycle it starts its last fold
  bool operator==(const Counts&) const = default;
};

// Which convention the reported figures follow.
enum class Convention {
  physical,  // the model above, cycle for cycle
  scalesim,  // SCALE-Sim v2's reports (see docs/architecture.md for where they differ)
};

struct Report {
  ArraySpec array;
  Mapping mapping;
  std::int64_t m = 0, n = 0, k = 0;
  Precision precision = Precision::fp32;
  Convention convention = Convention::physical;
  std::string engine;  // "cycle" or "analytic"
  Counts counts;       // physical counts
  // The reported figures (utilisations in percent).
  std::int64_t total_cycles = 0;
  std::int64_t stall_cycles = 0;
  double overall_util = 0, mapping_efficiency = 0, compute_util = 0;
  double seconds = 0;          // total_cycles / clock
  double gflops_at_clock = 0;  // 2MNK / seconds
  // Average words per cycle over the run (SCALE-Sim's bandwidth report).
  double ifmap_sram_bw = 0, filter_sram_bw = 0, ofmap_sram_bw = 0;
  double ifmap_dram_bw = 0, filter_dram_bw = 0, ofmap_dram_bw = 0;
  // Output counts as the convention reports them (SCALE-Sim: see make_report).
  std::int64_t reported_ofmap_sram_writes = 0, reported_ofmap_dram_writes = 0;
  std::optional<bool> valid = {};  // cycle engine: C matched the reference
  std::optional<double> max_rel_error = {};
};

// Checks the array, the problem dimensions and the mapping (tile sizes, loop order, buffers
// large enough for one tile); throws SimulationError naming what is wrong.
void check(const ArraySpec& array, const Mapping& mapping, std::int64_t m, std::int64_t n, std::int64_t k,
           Precision precision);
// The bytes one tile of each operand occupies on chip, for buffer constraints.
std::int64_t tile_bytes_a(const Mapping& mapping, Precision precision);
std::int64_t tile_bytes_b(const Mapping& mapping, Precision precision);
std::int64_t tile_bytes_c(const Mapping& mapping);

// Closed-form counts: no per-cell work, answers any size at once.
Counts simulate_analytic(const ArraySpec& array, const Mapping& mapping, std::int64_t m, std::int64_t n,
                         std::int64_t k, Precision precision, bool beta_nonzero = false);

// One on-chip access of the cycle engine, for following a simulation cycle by cycle: an element
// of A (ifmap) or B (filter) entering the array from its buffer, or a sum of C leaving it.
struct TraceEvent {
  enum class Kind { ifmap_read, filter_read, ofmap_write };
  std::int64_t cycle = 0;
  Kind kind = Kind::ifmap_read;
  std::int64_t row = 0, col = 0;  // the element's indices in A, B or C
  bool operator==(const TraceEvent&) const = default;
};

// The operands of a simulated GEMM as the array reads them: A (m x k) and B (k x n) row-major
// in the problem's precision (int8, bf16 as uint16 bits, fp32), C (m x n, ldc) in its output
// precision (int32 or fp32), C = alpha * A*B + beta * C.
struct GemmData {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  double alpha = 1.0, beta = 0.0;
  std::function<void(const TraceEvent&)> trace = {};  // cycle engine: called for every access
};

// Cycle-level simulation: every operand moves through every cell each cycle, the off-chip
// transfers advance by the bandwidth each cycle, the buffers track which tiles they hold; writes
// the real C into data.c (when non-null).
Counts simulate_cycles(const ArraySpec& array, const Mapping& mapping, std::int64_t m, std::int64_t n,
                       std::int64_t k, Precision precision, const GemmData& data);

// The same C as simulate_cycles, bit for bit (the same operations in the same order), computed
// tile by tile without moving operands through cells: what the backend uses for problems too
// large to simulate cycle by cycle.
void compute_functional(const ArraySpec& array, const Mapping& mapping, std::int64_t m, std::int64_t n,
                        std::int64_t k, Precision precision, const GemmData& data);

// Figures from counts in the given convention.
Report make_report(const ArraySpec& array, const Mapping& mapping, std::int64_t m, std::int64_t n, std::int64_t k,
                   Precision precision, const Counts& counts, Convention convention, std::string engine);

// SCALE-Sim's three CSV reports (its column layout) and one JSON document.
std::string compute_report_csv(const Report& report);
std::string bandwidth_report_csv(const Report& report);
std::string detailed_access_report_csv(const Report& report);

// The backend: one device per preset; kernels are mappings (kernels/systolic/); the reference
// is the heuristic mapping (heuristic_mapping) simulated on the same array.
std::unique_ptr<Backend> make_backend();

// The baseline mapping: weight-stationary, loop order m-n-k, tiles of the array's size doubled
// (K, N, M in turn, up to 64 times the array) while the buffers hold them; whatever the problem
// (a tile larger than the problem is cut to it). Unbounded buffers: the whole GEMM in one tile.
Mapping heuristic_mapping(const ArraySpec& array, Precision precision);

// A simulated device's array.
const ArraySpec& array_of(const Device& device);  // throws std::invalid_argument for other devices
// Runs `problem` through a simulated device's array with `mapping` (operands in host memory, as
// the device allocates them) and records its simulated time for Device::time_once. Inside
// time_once only the time is needed, and only the (identical) analytic counts are computed.
void run_mapping(Device& device, const Mapping& mapping, const Problem& problem, const Operands& operands);
// Problems up to this many cell updates run on the cycle engine in the backend; larger ones on
// compute_functional + simulate_analytic (identical C and counts, as the tests check).
inline constexpr std::int64_t cycle_engine_cell_update_limit = std::int64_t{1} << 28;

}  // namespace gemmlab::systolic
