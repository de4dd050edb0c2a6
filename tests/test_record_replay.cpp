// Recorded search spaces (Kernel Tuner cache files) and the replay of strategies on them.
#include <cmath>
#include <filesystem>
#include <fstream>

#include "gemmlab/record.hpp"
#include "gemmlab/replay.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::Scratch;

const std::string fixture = std::string(GEMMLAB_TEST_DATA) + "/small_record.json";

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(RecordLoad, ReadsParametersEntriesAndMarksNonFiniteTimesAsFailed) {
  const Record r = load_record(fixture);
  EXPECT_EQ(r.device_name, "Fixture GPU");
  ASSERT_EQ(r.parameters.size(), 2u);
  EXPECT_EQ(r.parameters[0].name, "MWG");
  EXPECT_EQ(r.parameters[0].values, (std::vector<ParamValue>{16, 32, 64}));
  ASSERT_EQ(r.entries.size(), 6u);
  int ok = 0;
  for (const auto& e : r.entries) ok += e.ok;
  EXPECT_EQ(ok, 4) << "a string time and an out-of-range number are failures, not times";
  EXPECT_EQ(r.best().config, (Config{{"MWG", 64}, {"VWM", 1}}));
  EXPECT_DOUBLE_EQ(r.best().time_ms, 2.0);
}

TEST(RecordLoad, ReadsTheSharedRecordsWhenPresent) {
  const std::string path = std::string(GEMMLAB_SHARED_DATA) + "/kernel_tuner_gemm/RTX_3090.json.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not present (shared data lives beside the repository)";
  const Record r = load_record(path);
  EXPECT_EQ(r.entries.size(), 17956u);
  EXPECT_EQ(r.parameters.size(), 15u);
  for (const auto& e : r.entries) ASSERT_TRUE(e.ok) << "every time in this file is finite";
}

TEST(RecordLoad, SavedRecordsReadBackIdenticallyPlainAndGzip) {
  const Record r = load_record(fixture);
  const Scratch scratch;
  for (const std::string name : {"copy.json", "copy.json.gz"}) {
    const std::string path = scratch.file(name);
    save_record(r, path);
    const Record back = load_record(path);
    ASSERT_EQ(back.entries.size(), r.entries.size()) << name;
    EXPECT_EQ(back.parameters[1].values, r.parameters[1].values) << name;
    for (std::size_t i = 0; i < r.entries.size(); ++i) {
      EXPECT_EQ(back.entries[i].config, r.entries[i].config) << name;
      EXPECT_EQ(back.entries[i].ok, r.entries[i].ok) << name;
      if (r.entries[i].ok) {
        EXPECT_DOUBLE_EQ(back.entries[i].time_ms, r.entries[i].time_ms) << name;
      }
    }
    std::ifstream in(path, std::ios::binary);
    const int first = in.get();
    EXPECT_EQ(first == 0x1f, name.ends_with(".gz")) << name << ": gzip exactly when the name says so";
  }
}

TEST(RecordLoad, BadFilesAreClearErrorsNamingTheFile) {
  const Scratch scratch;
  EXPECT_THROW_CONTAINING(load_record(scratch.file("missing.json")), std::runtime_error, {"missing.json"});
  const std::string not_json = scratch.file("not.json");
  write_text(not_json, "{ this is not json");
  EXPECT_THROW_CONTAINING(load_record(not_json), std::runtime_error, {"not.json", "JSON"});
  const std::string huge_number = scratch.file("huge.json");
  write_text(huge_number, R"({"tune_params_keys": [], "tune_params": {}, "cache": {}, "x": 1e400})");
  EXPECT_THROW_CONTAINING(load_record(huge_number), std::runtime_error, {"huge.json"});
  const std::string no_cache = scratch.file("nocache.json");
  write_text(no_cache, R"({"tune_params_keys": ["A"], "tune_params": {"A": [1]}})");
  EXPECT_THROW_CONTAINING(load_record(no_cache), std::runtime_error, {"nocache.json", "cache"});
  const std::string text_value = scratch.file("text.json");
  write_text(text_value, R"({"tune_params_keys": ["A"], "tune_params": {"A": ["x"]}, "cache": {}})");
  EXPECT_THROW_CONTAINING(load_record(text_value), std::runtime_error, {"text.json", "A", "integer"});
  const std::string too_large = scratch.file("large.json");
  write_text(too_large, R"({"tune_params_keys": ["A"], "tune_params": {"A": [1.5e128]}, "cache": {}})");
  EXPECT_THROW_CONTAINING(load_record(too_large), std::runtime_error, {"large.json", "A"});
  write_text(too_large, R"({"tune_params_keys": ["A"], "tune_params": {"A": [18446744073709551615]}, "cache": {}})");
  EXPECT_THROW_CONTAINING(load_record(too_large), std::runtime_error, {"large.json", "A"});
  const std::string wrong_key = scratch.file("key.json");
  write_text(wrong_key, R"({"tune_params_keys": ["A"], "tune_params": {"A": [1, 2]},
                           "cache": {"1": {"A": 2, "time": 1.0}}})");
  EXPECT_THROW_CONTAINING(load_record(wrong_key), std::runtime_error, {"key.json", "\"1\""});
  // Found by fuzz_record: a negative time made a negative optimum.
  const std::string negative = scratch.file("negative.json");
  write_text(negative, R"({"tune_params_keys": ["A"], "tune_params": {"A": [1, 2]},
                          "cache": {"1": {"A": 1, "time": 2.0}, "2": {"A": 2, "time": -2.5}}})");
  EXPECT_THROW_CONTAINING(load_record(negative), std::runtime_error, {"negative.json", "\"2\"", "-2.5"});
}

TEST(Replay, ExhaustiveWithTheWholeSpaceReachesTheOptimum) {
  const RecordedSpace space(load_record(fixture));
  EXPECT_DOUBLE_EQ(space.optimum_s(), 2.0e-3);
  const ReplaySummary s = replay(space, "exhaustive", {.budget = 6, .runs = 3, .seed = 1});
  ASSERT_TRUE(s.mean_fraction.count(6));
  EXPECT_DOUBLE_EQ(s.mean_fraction.at(6), 1.0);
  EXPECT_EQ(s.runs_within_5pct, 3);
  EXPECT_DOUBLE_EQ(s.mean_evals_to_within_5pct, 5.0) << "the optimum is the fifth entry in order";
}

TEST(Replay, FractionsAreBetweenZeroAndOneAndGrowWithTheBudget) {
  const RecordedSpace space(load_record(fixture));
  for (const auto& name : strategy_names()) {
    const ReplaySummary s = replay(space, name, {.budget = 4, .runs = 20, .seed = 5});
    ASSERT_EQ(s.mean_fraction.size(), 1u) << "only the budget itself is below 25 evaluations";
    const double f = s.mean_fraction.begin()->second;
    EXPECT_GT(f, 0.0) << name;
    EXPECT_LE(f, 1.0) << name;
    const ReplaySummary more = replay(space, name, {.budget = 6, .runs = 20, .seed = 5});
    EXPECT_DOUBLE_EQ(more.mean_fraction.at(6), 1.0) << name << ": the whole space holds the optimum";
  }
}

TEST(Replay, InParallelOneSlotIsTheSequentialReplayAndMoreStillFindTheOptimum) {
  const RecordedSpace space(load_record(fixture));
  for (const auto& name : strategy_names()) {
    const ReplaySummary one = replay(space, name, {.budget = 4, .runs = 10, .seed = 3});
    const ReplaySummary one_slot = replay(space, name, {.budget = 4, .runs = 10, .seed = 3, .parallel = 1});
    EXPECT_EQ(one.mean_fraction, one_slot.mean_fraction) << name;
    const ReplaySummary wide = replay(space, name, {.budget = 6, .runs = 10, .seed = 3, .parallel = 4});
    EXPECT_DOUBLE_EQ(wide.mean_fraction.at(6), 1.0) << name << ": the whole space holds the optimum";
  }
}

TEST(Replay, IsReproducibleForASeed) {
  const RecordedSpace space(load_record(fixture));
  const ReplaySummary a = replay(space, "random", {.budget = 3, .runs = 10, .seed = 9});
  const ReplaySummary b = replay(space, "random", {.budget = 3, .runs = 10, .seed = 9});
  EXPECT_EQ(a.mean_fraction, b.mean_fraction);
  EXPECT_EQ(a.runs_within_5pct, b.runs_within_5pct);
}

}  // namespace
}  // namespace gemmlab
