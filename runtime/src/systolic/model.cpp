// The systolic model's inputs (arrays, mappings) and outputs (reports in both conventions).
#include <charconv>
#include <cmath>

#include "gemmlab/systolic.hpp"
#include "systolic/tiling.hpp"

namespace gemmlab::systolic {

using detail::ceil_div;

std::string_view to_string(Dataflow d) {
  switch (d) {
    case Dataflow::ws: return "ws";
    case Dataflow::os: return "os";
    case Dataflow::is: return "is";
  }
  return "?";
}

Dataflow parse_dataflow(std::string_view text) {
  try {
    return parse_name(text, {Dataflow::ws, Dataflow::os, Dataflow::is}, "dataflow");
  } catch (const std::invalid_argument& e) {
    throw SimulationError(e.what());
  }
}

double ArraySpec::peak_gflops() const {
  return 2.0 * static_cast<double>(rows) * static_cast<double>(cols) * clock_ghz;
}

void ArraySpec::check() const {
  if (rows <= 0 || cols <= 0)
    throw SimulationError("the array must have at least one row and one column (got " + std::to_string(rows) + "x" +
                          std::to_string(cols) + ")");
  if (!(clock_ghz > 0) || !std::isfinite(clock_ghz)) throw SimulationError("the array's clock must be > 0 GHz");
  if (ifmap_buffer_bytes < 0 || filter_buffer_bytes < 0 || ofmap_buffer_bytes < 0)
    throw SimulationError("buffer sizes must be >= 0 bytes (0: unbounded)");
  if (!(bandwidth_bytes_per_cycle >= 0) || !std::isfinite(bandwidth_bytes_per_cycle))
    throw SimulationError("the bandwidth must be >= 0 bytes per cycle (0: unlimited)");
  if (bandwidth_bytes_per_cycle > 0 && bandwidth_bytes_per_cycle < 0.001)
    throw SimulationError("the bandwidth must be at least 0.001 bytes per cycle");
}

ArraySpec parse_array(std::string_view text) {
  const auto x = text.find('x');
  auto number = [&](std::string_view part) {
    std::int64_t value = -1;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (error != std::errc() || end != part.data() + part.size() || part.empty())
      throw SimulationError("malformed array size '" + std::string(text) + "'; expected ROWSxCOLS, e.g. 32x32");
    return value;
  };
  if (x == std::string_view::npos)
    throw SimulationError("malformed array size '" + std::string(text) + "'; expected ROWSxCOLS, e.g. 32x32");
  ArraySpec a;
  a.name = std::string(text);
  a.rows = number(text.substr(0, x));
  a.cols = number(text.substr(x + 1));
  a.precision = Precision::fp32;
  a.source = "user-defined array: unbounded buffers, unlimited bandwidth unless given";
  a.check();
  if (a.rows > 4096 || a.cols > 4096) throw SimulationError("arrays larger than 4096x4096 are not supported");
  return a;
}

namespace detail {

std::array<int, 3> parse_loop_order(const std::string& text) {
  std::array<int, 3> order{};
  bool seen[3] = {false, false, false};
  bool ok = text.size() == 3;
  for (std::size_t i = 0; ok && i < 3; ++i) {
    const int d = text[i] == 'm' ? dim_m : text[i] == 'n' ? dim_n : text[i] == 'k' ? dim_k : -1;
    ok = d >= 0 && !seen[d];
    if (ok) {
      seen[d] = true;
      order[i] = d;
    }
  }
  if (!ok) throw SimulationError("loop order '" + text + "' must be a permutation of m, n and k (e.g. mnk)");
  return order;
}

Grid::Grid(const Mapping& mapping, std::int64_t m, std::int64_t n, std::int64_t k) {
  size = {m, n, k};
  const std::int64_t tiles[3] = {mapping.tile_m, mapping.tile_n, mapping.tile_k};
  for (int d = 0; d < 3; ++d) {
    tile[d] = tiles[d] == 0 || tiles[d] > size[d] ? std::max<std::int64_t>(size[d], 1) : tiles[d];
    count[d] = ceil_div(size[d], tile[d]);
  }
  order = parse_loop_order(mapping.loop_order);
}

std::int64_t millibytes_per_cycle(const ArraySpec& array) {
  return static_cast<std::int64_t>(std::llround(array.bandwidth_bytes_per_cycle * 1000.0));
}

}  // namespace detail

std::int64_t tile_bytes_a(const Mapping& mapping, Precision p) {
  return mapping.tile_m * mapping.tile_k * detail::input_bytes(p);
}
std::int64_t tile_bytes_b(const Mapping& mapping, Precision p) {
  return mapping.tile_k * mapping.tile_n * detail::input_bytes(p);
}
std::int64_t tile_bytes_c(const Mapping& mapping) {
  return mapping.tile_m * mapping.tile_n * detail::accumulator_bytes;
}

void check(const ArraySpec& array, const Mapping& mapping, std::int64_t m, std::int64_t n, std::int64_t k,
           Precision precision) {
  array.check();
  if (precision != Precision::fp32 && precision != Precision::bf16 && precision != Precision::int8)
    throw SimulationError("the systolic array computes bf16, int8 or fp32, not " + std::string(to_string(precision)));
  if (m < 0 || n < 0 || k < 0) throw SimulationError("M, N and K must be >= 0");
  if (mapping.tile_m < 0 || mapping.tile_n < 0 || mapping.tile_k < 0)
    throw SimulationError("tile sizes must be >= 0 (0: the whole dimension)");
  const detail::Grid grid(mapping, m, n, k);  // checks the loop order
  Mapping tiles = mapping;
  tiles.tile_m = grid.tile[detail::dim_m];
  tiles.tile_n = grid.tile[detail::dim_n];
  tiles.tile_k = grid.tile[detail::dim_k];
  auto fits = [](const char* what, std::int64_t bytes, std::int64_t buffer, const char* buffer_name,
                 const std::string& shape) {
    if (buffer > 0 && bytes > buffer / 2)
      throw SimulationError(std::string("the ") + what + " tile (" + shape + ", " + std::to_string(bytes) +
                            " bytes) does not fit in half the " + buffer_name + " buffer (" + std::to_string(buffer) +
                            " bytes, double-buffered); choose smaller tiles");
  };
  const auto shape = [](std::int64_t r, std::int64_t c) { return std::to_string(r) + "x" + std::to_string(c); };
  // Every count must fit in 64 bits: bound the cell updates (no fold is longer than a full tile's,
  // 2R + C + stream - 2 cycles) and the bytes of one tile step (the DMA counts thousandths of a byte).
  using Big = long double;
  const Big limit = 0x1p62L;
  const Big R = static_cast<Big>(array.rows), C = static_cast<Big>(array.cols);
  const Big steps = static_cast<Big>(grid.count[0]) * static_cast<Big>(grid.count[1]) * static_cast<Big>(grid.count[2]);
  const auto f = detail::fold_shape(mapping.dataflow, tiles.tile_m, tiles.tile_n, tiles.tile_k);
  const Big folds = steps * std::ceil(static_cast<Big>(f.row_extent) / R) * std::ceil(static_cast<Big>(f.col_extent) / C);
  const Big step_bytes = static_cast<Big>(tiles.tile_m) * static_cast<Big>(tiles.tile_k) * 8 +
                         static_cast<Big>(tiles.tile_k) * static_cast<Big>(tiles.tile_n) * 8 +
                         static_cast<Big>(tiles.tile_m) * static_cast<Big>(tiles.tile_n) * 16;
  if (folds * (2 * R + C + static_cast<Big>(f.stream)) * R * C > limit || step_bytes * 1000 > limit)
    throw SimulationError("this simulation's counts would not fit in 64 bits (M x N x K = " + std::to_string(m) + "x" +
                          std::to_string(n) + "x" + std::to_string(k) + " with these tiles); choose smaller sizes or tiles");
  fits("A", tile_bytes_a(tiles, precision), array.ifmap_buffer_bytes, "ifmap", shape(tiles.tile_m, tiles.tile_k));
  fits("B", tile_bytes_b(tiles, precision), array.filter_buffer_bytes, "filter", shape(tiles.tile_k, tiles.tile_n));
  fits("C", tile_bytes_c(tiles), array.ofmap_buffer_bytes, "ofmap", shape(tiles.tile_m, tiles.tile_n));
}

Mapping heuristic_mapping(const ArraySpec& array, Precision precision) {
  Mapping h{.dataflow = Dataflow::ws, .tile_m = 0, .tile_n = 0, .tile_k = 0, .loop_order = "mnk"};
  if (array.ifmap_buffer_bytes == 0 && array.filter_buffer_bytes == 0 && array.ofmap_buffer_bytes == 0)
    return h;  // unbounded buffers: the whole GEMM is one tile
  h.tile_m = array.rows;
  h.tile_n = array.cols;
  h.tile_k = array.rows;
  auto fits = [&] {
    return (array.ifmap_buffer_bytes == 0 || tile_bytes_a(h, precision) <= array.ifmap_buffer_bytes / 2) &&
           (array.filter_buffer_bytes == 0 || tile_bytes_b(h, precision) <= array.filter_buffer_bytes / 2) &&
           (array.ofmap_buffer_bytes == 0 || tile_bytes_c(h) <= array.ofmap_buffer_bytes / 2);
  };
  // Double K, N and M in turn while the buffers still hold the tiles (at most 64 array steps).
  std::int64_t* tiles[3] = {&h.tile_k, &h.tile_n, &h.tile_m};
  const std::int64_t limit[3] = {64 * array.rows, 64 * array.cols, 64 * array.rows};
  for (bool grew = true; grew;) {
    grew = false;
    for (int d = 0; d < 3; ++d) {
      if (*tiles[d] >= limit[d]) continue;
      *tiles[d] *= 2;
      if (fits()) {
        grew = true;
      } else {
        *tiles[d] /= 2;
      }
    }
  }
  return h;
}

namespace {
double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }
}  // namespace

Report make_report(const ArraySpec& array, const Mapping& mapping, std::int64_t m, std::int64_t n, std::int64_t k,
                   Precision precision, const Counts& counts, Convention convention, std::string engine) {
  Report r{.array = array, .mapping = mapping, .m = m, .n = n, .k = k, .precision = precision,
           .convention = convention, .engine = std::move(engine), .counts = counts};
  const double cells = static_cast<double>(array.rows * array.cols);
  const double macs = static_cast<double>(counts.macs);
  r.mapping_efficiency = percent(static_cast<double>(counts.mapped_cells), static_cast<double>(counts.folds) * cells);
  std::int64_t ofmap_sram_writes = counts.ofmap_sram_writes, ofmap_dram_writes = counts.ofmap_dram_writes;
  if (convention == Convention::physical) {
    r.total_cycles = counts.total_cycles;
    r.stall_cycles = counts.stall_cycles;
    r.compute_util = percent(macs, static_cast<double>(counts.compute_cycles) * cells);
  } else {
    // SCALE-Sim v2 runs the whole GEMM as one "layer" with unlimited (CALC) bandwidth.
    const detail::Grid grid(mapping, m, n, k);
    if (grid.steps() > 1)
      throw SimulationError("--scalesim-compatible simulates the whole GEMM as one tile, as SCALE-Sim does; "
                            "leave the tile sizes at 0 and the buffers unbounded (--array)");
    if (detail::millibytes_per_cycle(array) != 0)
      throw SimulationError("--scalesim-compatible reproduces SCALE-Sim's unlimited-bandwidth (CALC) mode; drop --bandwidth");
    const auto shape = detail::fold_shape(mapping.dataflow, m, n, k);
    const std::int64_t R = array.rows, C = array.cols, T = shape.stream;
    // Its output-stationary fold leaves out the drain (R cycles); its total is the index of the
    // last cycle, one less than the count.
    const std::int64_t fold = mapping.dataflow == Dataflow::os ? R + C + T - 2 : 2 * R + C + T - 2;
    r.total_cycles = counts.folds > 0 ? counts.folds * fold - 1 : 0;
    r.stall_cycles = 0;
    // Its compute utilisation divides each fold's work by a fold length of its own (the fold's
    // stationary-operand matrix length plus its width minus one), and it averages per-fold
    // figures in fold order (column folds outer): summed the same way, to the last bit.
    const std::int64_t util_cycles = mapping.dataflow == Dataflow::os ? R + C + T - 2 : 2 * R + 2 * C + T - 3;
    double mapping_sum = 0, compute_sum = 0;
    for (std::int64_t c0 = 0; c0 < shape.col_extent; c0 += C)
      for (std::int64_t r0 = 0; r0 < shape.row_extent; r0 += R) {
        const std::int64_t used = std::min(R, shape.row_extent - r0) * std::min(C, shape.col_extent - c0);
        mapping_sum += static_cast<double>(used) / static_cast<double>(R * C);
        compute_sum += static_cast<double>(used * T) / static_cast<double>(R * C * util_cycles);
      }
    const double folds = static_cast<double>(std::max<std::int64_t>(counts.folds, 1));
    r.mapping_efficiency = mapping_sum / folds * 100;
    r.compute_util = compute_sum / folds * 100;
    // Its output-stationary SRAM write count adds R + C per fold (its create_ofmap_demand_mat adds
    // the padded fold's height and width to the count); every partial sum goes to DRAM.
    if (mapping.dataflow == Dataflow::os) ofmap_sram_writes += counts.folds * (R + C);
    ofmap_dram_writes = counts.ofmap_sram_writes;
  }
  r.overall_util = percent(macs, static_cast<double>(r.total_cycles) * cells);
  r.seconds = static_cast<double>(r.total_cycles) / (array.clock_ghz * 1e9);
  r.gflops_at_clock = r.seconds > 0 ? 2.0 * macs / r.seconds * 1e-9 : 0.0;
  const double total = static_cast<double>(std::max<std::int64_t>(r.total_cycles, 1));
  r.ifmap_sram_bw = static_cast<double>(counts.ifmap_sram_reads) / total;
  r.filter_sram_bw = static_cast<double>(counts.filter_sram_reads) / total;
  r.ofmap_sram_bw = static_cast<double>(ofmap_sram_writes) / total;
  r.ifmap_dram_bw = static_cast<double>(counts.ifmap_dram_reads) / total;
  r.filter_dram_bw = static_cast<double>(counts.filter_dram_reads) / total;
  r.ofmap_dram_bw = static_cast<double>(ofmap_dram_writes) / total;
  r.reported_ofmap_sram_writes = ofmap_sram_writes;
  r.reported_ofmap_dram_writes = ofmap_dram_writes;
  return r;
}

namespace {
// As Python prints a float (SCALE-Sim's reports): the shortest text that reads back the same
// value, with ".0" on whole numbers.
std::string number(double x) {
  char text[64];
  const auto end = std::to_chars(text, text + sizeof text, x).ptr;
  std::string s(text, end);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// The cycles (in the report's convention) at which each SRAM stream starts and stops: first
// access in the first fold, last access in the last fold. SCALE-Sim's reads are serviced one
// cycle after they are issued.
struct Window {
  std::int64_t start = 0, stop = 0;
};
struct Windows {
  Window ifmap, filter, ofmap;
};
Windows sram_windows(const Report& r) {
  Windows w;
  if (r.counts.folds == 0) return w;
  const std::int64_t R = r.array.rows, C = r.array.cols;
  const detail::Grid grid(r.mapping, r.m, r.n, r.k);
  // The last tile is the one with every index at its last value; its last fold is its last
  // column fold's last row fold.
  const std::int64_t tm = grid.extent(detail::dim_m, grid.count[0] - 1), tn = grid.extent(detail::dim_n, grid.count[1] - 1),
                     tk = grid.extent(detail::dim_k, grid.count[2] - 1);
  const auto shape = detail::fold_shape(r.mapping.dataflow, tm, tn, tk);
  const std::int64_t rows_last = shape.row_extent - (ceil_div(shape.row_extent, R) - 1) * R;
  const std::int64_t cols_last = shape.col_extent - (ceil_div(shape.col_extent, C) - 1) * C;
  const std::int64_t L = shape.stream;
  const bool scalesim = r.convention == Convention::scalesim;
  const std::int64_t first = scalesim ? 0 : r.counts.first_fold_start;
  const std::int64_t last = scalesim ? r.total_cycles + 1 - (r.mapping.dataflow == Dataflow::os ? R + C + L - 2 : 2 * R + C + L - 2)
                                     : r.counts.last_fold_start;
  const std::int64_t read_latency = scalesim ? 1 : 0;
  // Rows of the array the first fold uses (its row block starts at 0).
  const auto first_shape = detail::fold_shape(r.mapping.dataflow, grid.extent(detail::dim_m, 0),
                                              grid.extent(detail::dim_n, 0), grid.extent(detail::dim_k, 0));
  const std::int64_t rows_first = std::min(R, first_shape.row_extent);
  if (r.mapping.dataflow == Dataflow::os) {
    w.ifmap = {first + read_latency, last + (L - 1) + (rows_last - 1) + read_latency};
    w.filter = {first + read_latency, last + (L - 1) + (cols_last - 1) + read_latency};
    // Physical: the outputs leave after the stream (L + R + C - 2 cycles), bottom row first.
    auto drain = [&](std::int64_t stream) { return scalesim ? stream - 1 : stream + R + C - 2; };
    w.ofmap = {first + drain(first_shape.stream) + (R - rows_first),
               last + drain(L) + (R - 1) + (scalesim ? cols_last - 1 : 0)};
  } else {
    // The stationary operand shifts in during the fold's first R cycles, its last row first (so
    // a fold using fewer rows starts later); the streamed one enters after.
    const Window stationary{first + (R - rows_first) + read_latency, last + R - 1 + read_latency};
    const Window streamed{first + R + read_latency, last + R + (L - 1) + (rows_last - 1) + read_latency};
    w.ifmap = r.mapping.dataflow == Dataflow::ws ? streamed : stationary;
    w.filter = r.mapping.dataflow == Dataflow::ws ? stationary : streamed;
    w.ofmap = {first + 2 * R - 1, last + R + (L - 1) + (R - 1) + (cols_last - 1)};
  }
  return w;
}
}  // namespace

std::string compute_report_csv(const Report& r) {
  return "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,\n0, " +
         std::to_string(r.total_cycles) + ", " + std::to_string(r.stall_cycles) + ", " + number(r.overall_util) +
         ", " + number(r.mapping_efficiency) + ", " + number(r.compute_util) + ",\n";
}

std::string bandwidth_report_csv(const Report& r) {
  return "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, Avg IFMAP DRAM BW, Avg FILTER DRAM BW, "
         "Avg OFMAP DRAM BW,\n0, " +
         number(r.ifmap_sram_bw) + ", " + number(r.filter_sram_bw) + ", " + number(r.ofmap_sram_bw) + ", " +
         number(r.ifmap_dram_bw) + ", " + number(r.filter_dram_bw) + ", " + number(r.ofmap_dram_bw) + ",\n";
}

std::string detailed_access_report_csv(const Report& r) {
  const Windows w = sram_windows(r);
  const std::int64_t last = std::max<std::int64_t>(r.total_cycles - 1, 0);
  auto cycle = [](std::int64_t c) { return std::to_string(c) + ".0"; };
  auto entry = [&](Window window, std::int64_t count) {
    return cycle(window.start) + ", " + cycle(window.stop) + ", " + std::to_string(count);
  };
  // Off-chip traffic is reported over the whole run (SCALE-Sim reports each operand's own
  // prefetch window, which starts before cycle 0).
  const Window run{0, last};
  return "LayerID, SRAM IFMAP Start Cycle, SRAM IFMAP Stop Cycle, SRAM IFMAP Reads, SRAM Filter Start Cycle, "
         "SRAM Filter Stop Cycle, SRAM Filter Reads, SRAM OFMAP Start Cycle, SRAM OFMAP Stop Cycle, SRAM OFMAP Writes, "
         "DRAM IFMAP Start Cycle, DRAM IFMAP Stop Cycle, DRAM IFMAP Reads, DRAM Filter Start Cycle, DRAM Filter Stop "
         "Cycle, DRAM Filter Reads, DRAM OFMAP Start Cycle, DRAM OFMAP Stop Cycle, DRAM OFMAP Writes,\n0, " +
         entry(w.ifmap, r.counts.ifmap_sram_reads) + ", " + entry(w.filter, r.counts.filter_sram_reads) + ", " +
         entry(w.ofmap, r.reported_ofmap_sram_writes) + ", " + entry(run, r.counts.ifmap_dram_reads) + ", " +
         entry(run, r.counts.filter_dram_reads) + ", " + entry(run, r.reported_ofmap_dram_writes) + ",\n";
}

}  // namespace gemmlab::systolic
