#include "gemmlab/traffic.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gemmlab {

std::optional<StagedTile> staged_tile(const SearchSpace& space, const Config& config) {
  const auto m = space.value_of("tile_m", config), n = space.value_of("tile_n", config);
  if (m && n) return StagedTile{.m = *m, .n = *n};
  return std::nullopt;
}

Traffic tiled_traffic(const Problem& p, StagedTile tile) {
  const auto element = static_cast<double>(element_size(p.precision));
  const double tiles_m = std::ceil(static_cast<double>(p.m) / static_cast<double>(std::max<std::int64_t>(1, tile.m)));
  const double tiles_n = std::ceil(static_cast<double>(p.n) / static_cast<double>(std::max<std::int64_t>(1, tile.n)));
  const double c_bytes = static_cast<double>(p.m * p.n) * static_cast<double>(output_element_size(p.precision));
  Traffic t;
  t.tile = tile;
  t.bytes_moved = element * static_cast<double>(p.m * p.k) * tiles_n + element * static_cast<double>(p.k * p.n) * tiles_m +
                  c_bytes * (p.beta != 0 ? 2 : 1);
  t.arithmetic_intensity = t.bytes_moved > 0 ? p.flops() / t.bytes_moved : 0.0;
  t.tiles = static_cast<std::int64_t>(tiles_m * tiles_n);
  return t;
}

std::vector<GrowthLimit> growth_limits(const SearchSpace& space, const Config& config) {
  std::vector<GrowthLimit> limits;
  for (const Parameter& p : space.parameters()) {
    const auto here = config.find(p.name);
    if (here == config.end()) continue;
    const auto next = std::upper_bound(p.values.begin(), p.values.end(), here->second);
    if (next == p.values.end()) {
      limits.push_back({.parameter = p.name, .value = here->second, .next = std::nullopt, .constraints = {}});
      continue;
    }
    Config grown = config;
    grown[p.name] = *next;
    // A constraint that cannot be evaluated there (dividing by zero) counts as broken.
    std::vector<Constraint> broken;
    for (const Constraint& c : space.constraints()) {
      bool holds = false;
      try {
        holds = c.holds(grown);
      } catch (const ConfigError&) {
      }
      if (!holds) broken.push_back(c);
    }
    if (!broken.empty()) limits.push_back({.parameter = p.name, .value = here->second, .next = *next, .constraints = broken});
  }
  return limits;
}

}  // namespace gemmlab
