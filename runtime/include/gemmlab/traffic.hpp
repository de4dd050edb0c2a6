// The memory-traffic model the sweeps and the report explain numbers with: the tile of C a
// configuration stages, the bytes a GEMM tiled that way moves, and what stops each parameter of a
// configuration from growing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gemmlab/problem.hpp"
#include "gemmlab/space.hpp"

namespace gemmlab {

// The block of C whose operands a kernel stages once per block (shared memory, LDS, cache, or a
// systolic array's buffers).
struct StagedTile {
  std::int64_t m = 0, n = 0;  // rows and columns of C
};

// The tile a configuration of `space` stages: the derived values `tile_m` and `tile_n` its kernel
// declares; none for kernels without one (the naive steps, register-only blocking).
std::optional<StagedTile> staged_tile(const SearchSpace& space, const Config& config);

struct Traffic {
  StagedTile tile;
  double bytes_moved = 0;
  double arithmetic_intensity = 0;  // flops per byte moved
  std::int64_t tiles = 0;           // tiles of C: the blocks that can be computed in parallel
};

// A GEMM tiled by `tile` reads A once per column of tiles and B once per row of tiles, and writes
// C once (and reads it first when beta != 0).
Traffic tiled_traffic(const Problem& problem, StagedTile tile);

// A parameter of a configuration that cannot simply grow: either `value` is its largest allowed
// one (no `next`), or the next larger value breaks `constraints`.
struct GrowthLimit {
  std::string parameter;
  ParamValue value = 0;
  std::optional<ParamValue> next;
  std::vector<Constraint> constraints;  // each with its expression and why
};

// For each parameter of `config` in `space` (declaration order), what stops it from taking its
// next larger value; parameters free to grow are left out.
std::vector<GrowthLimit> growth_limits(const SearchSpace& space, const Config& config);

}  // namespace gemmlab
