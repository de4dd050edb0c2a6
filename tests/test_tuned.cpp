// Tuned configurations used: the lookup of the best cached configuration for a problem (its own
// shape first, else the nearest tuned shape), how given parameters combine with it, and `gemmlab
// run` using it (run as a child process).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "cli_support.hpp"
#include "gemmlab/tune.hpp"
#include "gemmlab/tuned.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::contains;
using testing::parse_json;
using testing::run_cli;

using testing::Scratch;

// A space of two parameters with one constraint, standing for a kernel's.
SearchSpace small_space() {
  SearchSpace s;
  s.add("A", {1, 2, 4, 8}, "").add("B", {1, 2, 4, 8}, "");
  s.require("A * B <= 16");
  return s;
}

CacheKey key_for(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& precision = "fp32") {
  return {.device = "cpu:Test CPU 0123456789abcdef", .backend = "cpu", .kernel = "03_cache_blocked",
          .kernel_hash = "h1", .m = m, .n = n, .k = k, .precision = precision,
          .layout = "row-major lda=" + std::to_string(k) + " ldb=" + std::to_string(n) + " ldc=" + std::to_string(n) +
                    " alpha=1 beta=0"};
}

void store(ResultsCache& cache, const CacheKey& key, const Config& config, double gflops, const std::string& when,
           Status status = Status::ok) {
  cache.store(key, {.config = config, .status = status, .time_s = 1.0 / gflops, .gflops = gflops,
                    .max_rel_error = 0, .reason = "", .reference_name = "openblas", .reference_gflops = 1,
                    .recorded_at = when});
}

TEST(TunedLookup, TheProblemsOwnFastestConfigurationComesFirst) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const CacheKey key = key_for(256, 256, 256);
  store(cache, key, {{"A", 2}, {"B", 2}}, 10, "2026-01-01T00:00:00Z");
  store(cache, key, {{"A", 4}, {"B", 4}}, 30, "2026-01-02T00:00:00Z");
  store(cache, key, {{"A", 8}, {"B", 1}}, 50, "2026-01-03T00:00:00Z", Status::invalid);  // never chosen
  store(cache, key_for(256, 256, 128), {{"A", 1}, {"B", 1}}, 99, "2026-02-01T00:00:00Z");  // faster, but another shape
  const TunedLookup lookup = find_tuned(cache, key, small_space());
  ASSERT_TRUE(lookup.found);
  EXPECT_EQ(lookup.found->config, (Config{{"A", 4}, {"B", 4}}));
  EXPECT_TRUE(lookup.found->exact);
  EXPECT_EQ(lookup.found->recorded_at, "2026-01-02T00:00:00Z");
  EXPECT_EQ(lookup.found->source(), "tuned 2026-01-02T00:00:00Z");
  EXPECT_TRUE(lookup.ignored.empty());
}

TEST(TunedLookup, OtherwiseTheNearestShapeBySumOfLog2Ratios) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  // From 512^3: 1024x512x512 is 1 away, 256x256x512 is 2 away, 512x512x8192 is 4 away.
  store(cache, key_for(256, 256, 512), {{"A", 2}, {"B", 2}}, 10, "2026-03-01T00:00:00Z");
  store(cache, key_for(1024, 512, 512), {{"A", 4}, {"B", 1}}, 5, "2026-01-01T00:00:00Z");
  store(cache, key_for(512, 512, 8192), {{"A", 8}, {"B", 2}}, 50, "2026-04-01T00:00:00Z");
  const TunedLookup lookup = find_tuned(cache, key_for(512, 512, 512), small_space());
  ASSERT_TRUE(lookup.found);
  EXPECT_EQ(lookup.found->config, (Config{{"A", 4}, {"B", 1}}));
  EXPECT_FALSE(lookup.found->exact);
  EXPECT_EQ(lookup.found->m, 1024);
  EXPECT_EQ(lookup.found->source(), "tuned 2026-01-01T00:00:00Z for 1024x512x512");
  EXPECT_DOUBLE_EQ(shape_distance(512, 512, 512, 1024, 512, 512), 1.0);
  EXPECT_DOUBLE_EQ(shape_distance(512, 512, 512, 256, 256, 512), 2.0);
  EXPECT_DOUBLE_EQ(shape_distance(512, 512, 512, 512, 512, 8192), 4.0);
  EXPECT_DOUBLE_EQ(shape_distance(0, 1, 1, 1, 1, 1), 0.0) << "zero dimensions count as 1";
}

TEST(TunedLookup, EquallyNearShapesGoToTheMostRecentlyTuned) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  store(cache, key_for(256, 512, 512), {{"A", 2}, {"B", 2}}, 10, "2026-01-01T00:00:00Z");
  store(cache, key_for(1024, 512, 512), {{"A", 4}, {"B", 4}}, 10, "2026-05-01T00:00:00Z");
  store(cache, key_for(512, 256, 512), {{"A", 1}, {"B", 8}}, 10, "2026-03-01T00:00:00Z");
  const TunedLookup lookup = find_tuned(cache, key_for(512, 512, 512), small_space());
  ASSERT_TRUE(lookup.found);
  EXPECT_EQ(lookup.found->m, 1024);
  EXPECT_EQ(lookup.found->config, (Config{{"A", 4}, {"B", 4}}));
}

TEST(TunedLookup, AConfigurationTodaysSpaceRejectsIsIgnoredAndSaidSo) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const CacheKey key = key_for(64, 64, 64);
  store(cache, key, {{"A", 8}, {"B", 8}}, 90, "2026-01-01T00:00:00Z");  // breaks A * B <= 16
  store(cache, key, {{"A", 2}, {"B", 2}}, 10, "2026-01-01T00:00:00Z");
  store(cache, key_for(128, 64, 64), {{"A", 4}, {"B", 2}}, 20, "2026-01-01T00:00:00Z");
  const TunedLookup lookup = find_tuned(cache, key, small_space());
  ASSERT_EQ(lookup.ignored.size(), 1u);
  EXPECT_EQ(lookup.ignored[0].config, (Config{{"A", 8}, {"B", 8}}));
  EXPECT_EQ(lookup.ignored[0].m, 64);
  EXPECT_TRUE(contains(lookup.ignored[0].reason, "A * B <= 16")) << lookup.ignored[0].reason;
  ASSERT_TRUE(lookup.found) << "the next shape in order is used";
  EXPECT_EQ(lookup.found->config, (Config{{"A", 4}, {"B", 2}}));
  EXPECT_EQ(lookup.found->m, 128);
}

TEST(TunedLookup, OnlyTheSameKernelHashDeviceAndPrecisionCount) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const CacheKey key = key_for(64, 64, 64);
  CacheKey edited = key, other_device = key;
  edited.kernel_hash = "h2";
  other_device.device = "cpu:Another CPU fedcba9876543210";
  store(cache, edited, {{"A", 2}, {"B", 2}}, 10, "2026-01-01T00:00:00Z");
  store(cache, other_device, {{"A", 2}, {"B", 2}}, 10, "2026-01-01T00:00:00Z");
  store(cache, key_for(64, 64, 64, "fp64"), {{"A", 2}, {"B", 2}}, 10, "2026-01-01T00:00:00Z");
  const TunedLookup lookup = find_tuned(cache, key, small_space());
  EXPECT_FALSE(lookup.found);
  EXPECT_TRUE(lookup.ignored.empty());
}

TEST(ChooseConfig, GivenParametersWinAndTheOthersComeFromTheTunedOne) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const CacheKey key = key_for(64, 64, 64);
  store(cache, key, {{"A", 4}, {"B", 4}}, 10, "2026-01-01T00:00:00Z");
  const Config defaults = {{"A", 1}, {"B", 1}};
  const ChosenConfig tuned = choose_config(small_space(), {}, defaults, &cache, key);
  EXPECT_EQ(tuned.config, (Config{{"A", 4}, {"B", 4}}));
  EXPECT_EQ(tuned.source, "tuned 2026-01-01T00:00:00Z");
  const ChosenConfig overridden = choose_config(small_space(), {{"A", 2}}, defaults, &cache, key);
  EXPECT_EQ(overridden.config, (Config{{"A", 2}, {"B", 4}}));
  EXPECT_EQ(overridden.source, "tuned 2026-01-01T00:00:00Z");
  // A given value the tuned one does not fit (A * B > 16): the defaults fill in, and it is said.
  const ChosenConfig conflicting = choose_config(small_space(), {{"A", 8}}, defaults, &cache, key);
  EXPECT_EQ(conflicting.config, (Config{{"A", 8}, {"B", 1}}));
  EXPECT_EQ(conflicting.source, "default");
  ASSERT_EQ(conflicting.ignored.size(), 1u);
  EXPECT_TRUE(contains(conflicting.ignored[0].reason, "given")) << conflicting.ignored[0].reason;
  // Without a cache: the defaults.
  EXPECT_EQ(choose_config(small_space(), {}, defaults, nullptr, key).config, defaults);
  // A given value allowed nowhere is the user's error.
  EXPECT_THROW(choose_config(small_space(), {{"A", 3}}, defaults, &cache, key), ConfigError);
}

TEST(OpenCacheForLookup, AMissingDefaultFileIsNoCacheAndIsNotCreated) {
  Scratch scratch;
  const std::string home = scratch.file("home");
  const std::string before = std::getenv("XDG_CACHE_HOME") != nullptr ? std::getenv("XDG_CACHE_HOME") : "";
  ::setenv("XDG_CACHE_HOME", home.c_str(), 1);
  const auto cache = open_cache_for_lookup("");
  if (before.empty()) ::unsetenv("XDG_CACHE_HOME");
  else ::setenv("XDG_CACHE_HOME", before.c_str(), 1);
  EXPECT_FALSE(cache);
  EXPECT_FALSE(fs::exists(home)) << "nothing is created for a lookup";
  EXPECT_THROW_MENTIONING(open_cache_for_lookup(scratch.file("nope.sqlite")), CacheError, {"nope.sqlite"}, false);
  EXPECT_FALSE(fs::exists(scratch.file("nope.sqlite")));
}

// --- gemmlab run with a tuned configuration ---------------------------------------------------

// The fastest configuration of a tuned problem and two others of 03_cache_blocked, all valid.
struct Tuned03 {
  Config fastest, slower, other;
};

Tuned03 configurations_of_03() {
  const Kernel& kernel = registry().kernel("cpu", "03_cache_blocked");
  const DeviceInfo& info = testing::cpu_device().info();
  const Config defaults = kernel.default_config(info, Precision::fp32);
  std::vector<Config> differing;
  for (const Config& c : kernel.space(info, Precision::fp32).enumerate(2000))
    if (c.at("MC") != defaults.at("MC") && c.at("KC") != defaults.at("KC") && c.at("NC") != defaults.at("NC"))
      differing.push_back(c);
  EXPECT_GE(differing.size(), 3u);
  return {differing.at(0), differing.at(1), differing.back()};
}

// Stores results of 03_cache_blocked for `problem` on this CPU, as `gemmlab tune` files them.
void store_tuned_03(const std::string& path, const Problem& problem, const Config& fastest, const Config& slower,
                    const std::string& when) {
  ResultsCache cache(path);
  const CacheKey key = cache_key(testing::cpu_device().info(), registry().kernel("cpu", "03_cache_blocked"), problem);
  store(cache, key, slower, 5, when);
  store(cache, key, fastest, 7, when);
}

const char* run_03 = "run --kernel 03_cache_blocked --threads 1 --max-seconds 0.01 --json";

TEST(CliRunTuned, UsesTheTunedConfigurationOfTheShapeAndSaysWhere) {
  Scratch scratch;
  const Tuned03 c = configurations_of_03();
  const std::string cache = scratch.file("results.sqlite");
  store_tuned_03(cache, Problem::packed(40, 36, 28), c.fastest, c.slower, "2026-06-01T10:00:00Z");
  const auto r = run_cli(std::string(run_03) + " --m 40 --n 36 --k 28 --cache '" + cache + "'");
  ASSERT_EQ(r.status, 0) << r;
  const json j = parse_json(r);
  EXPECT_EQ(j["params"], json(c.fastest));
  EXPECT_EQ(j["config_source"], "tuned 2026-06-01T10:00:00Z");
  EXPECT_EQ(j["cache"], cache);
  EXPECT_TRUE(j["ignored_tuned_configs"].empty());

  const auto text = run_cli("run --kernel 03_cache_blocked --threads 1 --max-seconds 0.01 --m 40 --n 36 --k 28 --cache '" +
                            cache + "'");
  ASSERT_EQ(text.status, 0) << text;
  EXPECT_TRUE(contains(text.out, "configuration: tuned 2026-06-01T10:00:00Z")) << text;
}

TEST(CliRunTuned, UsesTheNearestTunedShapeWhenItsOwnIsNotTuned) {
  Scratch scratch;
  const Tuned03 c = configurations_of_03();
  const std::string cache = scratch.file("results.sqlite");
  store_tuned_03(cache, Problem::packed(64, 64, 64), c.fastest, c.slower, "2026-06-01T10:00:00Z");
  store_tuned_03(cache, Problem::packed(16, 16, 16), c.other, c.slower, "2026-06-02T10:00:00Z");
  const auto r = run_cli(std::string(run_03) + " --m 48 --n 64 --k 64 --cache '" + cache + "'");
  ASSERT_EQ(r.status, 0) << r;
  const json j = parse_json(r);
  EXPECT_EQ(j["params"], json(c.fastest));
  EXPECT_EQ(j["config_source"], "tuned 2026-06-01T10:00:00Z for 64x64x64");
}

TEST(CliRunTuned, GivenParametersWinAndNoCacheIgnoresIt) {
  Scratch scratch;
  const Tuned03 c = configurations_of_03();
  const std::string cache = scratch.file("results.sqlite");
  store_tuned_03(cache, Problem::packed(40, 36, 28), c.fastest, c.slower, "2026-06-01T10:00:00Z");
  const ParamValue mc = c.other.at("MC");
  const auto r = run_cli(std::string(run_03) + " --m 40 --n 36 --k 28 --param MC=" + std::to_string(mc) + " --cache '" +
                         cache + "'");
  ASSERT_EQ(r.status, 0) << r;
  const json j = parse_json(r);
  EXPECT_EQ(j["params"]["MC"], mc);
  EXPECT_EQ(j["params"]["KC"], c.fastest.at("KC")) << "the parameters not given come from the tuned configuration";
  EXPECT_EQ(j["params"]["NC"], c.fastest.at("NC"));
  EXPECT_EQ(j["config_source"], "tuned 2026-06-01T10:00:00Z");

  const auto off = run_cli(std::string(run_03) + " --m 40 --n 36 --k 28 --no-cache");
  ASSERT_EQ(off.status, 0) << off;
  const json d = parse_json(off);
  EXPECT_EQ(d["config_source"], "default");
  EXPECT_TRUE(d["cache"].is_null());
  const Config defaults = registry().kernel("cpu", "03_cache_blocked").default_config(testing::cpu_device().info(),
                                                                                      Precision::fp32);
  EXPECT_EQ(d["params"], json(defaults));
  EXPECT_EQ(run_cli(std::string(run_03) + " --m 4 --n 4 --k 4 --no-cache --cache '" + cache + "'").status, 2)
      << "--cache and --no-cache exclude each other";
}

TEST(CliRunTuned, AnUnusableCacheFileIsAClearErrorAndIsLeftAlone) {
  Scratch scratch;
  const std::string notes = scratch.file("notes.sqlite");
  std::ofstream(notes) << "not a database, someone's notes\n";
  const auto r = run_cli(std::string(run_03) + " --m 8 --n 8 --k 8 --cache '" + notes + "'");
  EXPECT_EQ(r.status, 2) << r;
  EXPECT_TRUE(contains(r.err, notes)) << r;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line\n" << r;
  EXPECT_EQ(testing::read_file(notes), "not a database, someone's notes\n") << "the file was modified";

  const std::string missing = scratch.file("missing.sqlite");
  const auto m = run_cli(std::string(run_03) + " --m 8 --n 8 --k 8 --cache '" + missing + "'");
  EXPECT_EQ(m.status, 2) << m;
  EXPECT_TRUE(contains(m.err, missing)) << m;
  EXPECT_FALSE(fs::exists(missing)) << "a lookup creates no cache";
}

}  // namespace
}  // namespace gemmlab
