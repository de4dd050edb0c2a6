#include "gemmlab/tuned.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <tuple>

namespace gemmlab {

std::string TunedConfig::source() const {
  if (exact) return "tuned " + recorded_at;
  return "tuned " + recorded_at + " for " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

void to_json(nlohmann::json& j, const IgnoredConfig& ignored) {
  j = {{"params", ignored.config}, {"m", ignored.m}, {"n", ignored.n}, {"k", ignored.k}, {"reason", ignored.reason}};
}

double shape_distance(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t m2, std::int64_t n2, std::int64_t k2) {
  auto ratio = [](std::int64_t a, std::int64_t b) {
    return std::abs(std::log2(static_cast<double>(std::max<std::int64_t>(a, 1)) /
                              static_cast<double>(std::max<std::int64_t>(b, 1))));
  };
  return ratio(m, m2) + ratio(n, n2) + ratio(k, k2);
}

TunedLookup find_tuned(const ResultsCache& cache, const CacheKey& key, const SearchSpace& space) {
  // Each tuned problem's fastest ok result (the earlier stored wins a tie), and when it last
  // had a result stored.
  struct Tuned {
    CacheKey key;
    ConfigResult best;
    std::string latest;
    bool exact = false;
    double distance = 0;
  };
  std::vector<Tuned> problems;
  for (ResultsCache::Filed& filed : cache.load_all_shapes(key)) {
    if (filed.result.status != Status::ok) continue;
    auto same = std::find_if(problems.begin(), problems.end(), [&](const Tuned& t) { return t.key == filed.key; });
    if (same == problems.end()) {
      const bool exact = filed.key == key;
      const double distance = shape_distance(key.m, key.n, key.k, filed.key.m, filed.key.n, filed.key.k);
      problems.push_back({.key = filed.key, .best = filed.result, .latest = filed.result.recorded_at, .exact = exact,
                          .distance = distance});
      continue;
    }
    same->latest = std::max(same->latest, filed.result.recorded_at);  // ISO-8601 text sorts as time
    if (filed.result.gflops > same->best.gflops) same->best = std::move(filed.result);
  }
  std::sort(problems.begin(), problems.end(), [](const Tuned& a, const Tuned& b) {
    if (a.exact != b.exact) return a.exact;
    if (a.distance != b.distance) return a.distance < b.distance;
    if (a.latest != b.latest) return a.latest > b.latest;
    return std::tie(a.key.m, a.key.n, a.key.k, a.key.layout) < std::tie(b.key.m, b.key.n, b.key.k, b.key.layout);
  });

  TunedLookup lookup;
  for (const Tuned& t : problems) {
    try {
      space.check(t.best.config);
    } catch (const ConfigError& e) {
      lookup.ignored.push_back({.config = t.best.config, .m = t.key.m, .n = t.key.n, .k = t.key.k,
                                .reason = std::string("not valid in today's space: ") + e.what()});
      continue;
    }
    lookup.found = TunedConfig{.config = t.best.config, .recorded_at = t.best.recorded_at, .m = t.key.m, .n = t.key.n,
                               .k = t.key.k, .exact = t.exact, .gflops = t.best.gflops};
    break;
  }
  return lookup;
}

ChosenConfig choose_config(const SearchSpace& space, const Config& given, const Config& defaults,
                           const ResultsCache* cache, const CacheKey& key) {
  ChosenConfig chosen;
  if (cache != nullptr) {
    TunedLookup lookup = find_tuned(*cache, key, space);
    chosen.ignored = std::move(lookup.ignored);
    if (lookup.found) {
      try {
        chosen.config = space.complete(given, lookup.found->config);
        chosen.source = lookup.found->source();
        chosen.tuned = std::move(lookup.found);
        return chosen;
      } catch (const ConfigError& e) {
        // The given parameters do not fit the tuned ones (a constraint between them): the
        // defaults fill in instead, and a given parameter that fits nothing is reported below.
        chosen.ignored.push_back({.config = lookup.found->config, .m = lookup.found->m, .n = lookup.found->n,
                                  .k = lookup.found->k, .reason = std::string("with the given parameters: ") + e.what()});
      }
    }
  }
  chosen.config = space.complete(given, defaults);
  return chosen;
}

std::optional<ResultsCache> open_cache_for_lookup(const std::string& path) {
  std::string file = path;
  if (file.empty()) {
    try {
      file = ResultsCache::default_path();
    } catch (const CacheError&) {
      return std::nullopt;  // no default location (neither XDG_CACHE_HOME nor HOME): nothing tuned
    }
  }
  std::error_code error;
  if (!std::filesystem::exists(file, error)) {
    if (path.empty()) return std::nullopt;
    throw CacheError("no results cache at " + path + " (gemmlab tune writes one there with --cache " + path + ")");
  }
  return std::optional<ResultsCache>(std::in_place, file);
}

}  // namespace gemmlab
