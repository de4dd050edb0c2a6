// Tuned configurations used, not only stored: which configuration of a kernel a command runs on a
// problem — the best one the results cache holds for that problem, else for the nearest shape
// tuned, else the kernel's default — and where it came from.
//
// The rule. Results are looked up under the problem's cache key (device fingerprint, backend,
// kernel, kernel source hash, precision); each problem tuned under it (shape and layout) stands
// for its fastest `ok` result. The problem itself comes first; then the other tuned problems by
// the distance of their shape, |log2(M/M')| + |log2(N/N')| + |log2(K/K')| (so 512 is as far from
// 1024 as 2048 is), ties going to the problem tuned most recently, then to the smaller shape. A
// fastest configuration that today's space rejects (the space changed) is ignored, said so, and
// the next problem in that order is tried.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gemmlab/results_cache.hpp"
#include "gemmlab/space.hpp"

namespace gemmlab {

struct TunedConfig {
  Config config;
  std::string recorded_at;            // UTC ISO-8601, when it was measured
  std::int64_t m = 0, n = 0, k = 0;   // the shape it was tuned for
  bool exact = false;                 // tuned for this very problem (shape and layout)
  double gflops = 0;                  // as measured then
  // "tuned <recorded_at>", or "tuned <recorded_at> for MxNxK" when tuned for another problem.
  std::string source() const;
};

// A cached configuration that was not used, and why.
struct IgnoredConfig {
  Config config;
  std::int64_t m = 0, n = 0, k = 0;  // the shape it was tuned for
  std::string reason;
};

// {"params", "m", "n", "k", "reason"}
void to_json(nlohmann::json& j, const IgnoredConfig& ignored);

struct TunedLookup {
  std::optional<TunedConfig> found;
  std::vector<IgnoredConfig> ignored;  // fastest configurations of nearer problems that today's space rejects
};

// The distance between two shapes the nearest tuned shape is chosen by (dimensions below 1 count
// as 1).
double shape_distance(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t m2, std::int64_t n2, std::int64_t k2);

// The best configuration `cache` holds for the problem of `key`, valid in `space`, by the rule above.
TunedLookup find_tuned(const ResultsCache& cache, const CacheKey& key, const SearchSpace& space);

// The configuration a command runs and where its parameters come from.
struct ChosenConfig {
  Config config;
  // Where the parameters not given come from: "default", or TunedConfig::source().
  std::string source = "default";
  std::optional<TunedConfig> tuned;
  std::vector<IgnoredConfig> ignored;
};

// `given` parameters win; the others come from the tuned configuration (find_tuned, when `cache`
// is not null) if `given` fits it within `space`, else from `defaults`. Throws ConfigError for
// given parameters that fit neither.
ChosenConfig choose_config(const SearchSpace& space, const Config& given, const Config& defaults,
                           const ResultsCache* cache, const CacheKey& key);

// The results cache a command reads tuned configurations from: `path`, or the default one when
// `path` is empty. A default file that does not exist (or no default location) holds nothing
// tuned: nullopt, and nothing is created. Throws CacheError for a named file that does not exist
// and for a file that is not a usable gemmlab cache (which is left as it is).
std::optional<ResultsCache> open_cache_for_lookup(const std::string& path);

}  // namespace gemmlab
