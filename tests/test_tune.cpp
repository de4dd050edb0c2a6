// Tuning live kernels: budget, no repetition, validity, and the failed / invalid outcomes of
// deliberately faulty test kernels.
#include <chrono>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/result.hpp"
#include "gemmlab/tune.hpp"
#include "faulty_kernels.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::cpu_device;
using testing::openblas;
using testing::FaultyKernel;
using testing::SlowKernel;

// Short measurements, and no early abort (timing noise on tiny problems could abort a
// configuration; the test of early abort turns it on itself).
const TuneOptions quick{.strategy = "random", .budget = {.evaluations = 8}, .seed = 3,
                        .measure = {.warmup = 0, .min_repetitions = 1, .max_repetitions = 3, .max_seconds = 0.01},
                        .early_abort_factor = 0};

TEST(Tune, SpendsTheBudgetOnDistinctValidConfigurationsAndReportsTheBest) {
  const Kernel& kernel = registry().kernel("cpu", "03_cache_blocked");
  const Problem p = Problem::packed(37, 29, 41);
  const TuneResult r = tune(cpu_device(), kernel, p, &openblas(), &openblas(), quick);
  const SearchSpace space = kernel.space(cpu_device().info(), p.precision);
  ASSERT_EQ(r.history.size(), 8u);
  EXPECT_EQ(r.space_size, space.valid_size());
  std::set<Config> seen;
  for (const auto& e : r.history) {
    EXPECT_TRUE(seen.insert(e.config).second) << "evaluated twice: " << to_string(e.config);
    EXPECT_TRUE(space.is_valid(e.config)) << to_string(e.config);
    EXPECT_EQ(e.status, Status::ok) << e.reason;
  }
  ASSERT_TRUE(r.best.has_value());
  for (const auto& e : r.history) EXPECT_LE(e.gflops, r.best->gflops);
  EXPECT_EQ(r.top(3).size(), 3u);
  EXPECT_EQ(r.top(3).front().gflops, r.best->gflops);
  EXPECT_EQ(r.reference_name, "openblas");
  EXPECT_GT(r.reference_gflops, 0);
  EXPECT_GT(r.best->ratio_to_reference, 0);
  EXPECT_TRUE(r.reference_beside_best) << "the final reference figure is timed in alternation with the best";
  for (const auto& e : r.history) EXPECT_DOUBLE_EQ(e.ratio_to_reference, e.gflops / r.reference_gflops);
}

TEST(Tune, RecordsFailedAndInvalidConfigurationsAndNeverPicksThem) {
  const FaultyKernel kernel;
  TuneOptions options = quick;
  options.strategy = "exhaustive";
  const TuneResult r = tune(cpu_device(), kernel, Problem::packed(5, 6, 7, Precision::fp64), &openblas(), nullptr, options);
  ASSERT_EQ(r.history.size(), 4u);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.invalid, 1u);
  EXPECT_EQ(r.history[2].status, Status::failed);
  EXPECT_NE(r.history[2].reason.find("X=3"), std::string::npos) << r.history[2].reason;
  EXPECT_EQ(r.history[3].status, Status::invalid);
  ASSERT_TRUE(r.best.has_value());
  EXPECT_LE(r.best->config.at("X"), 2) << "a failed or wrong configuration became the best";
  EXPECT_EQ(r.top(10).size(), 2u);
}

TEST(Tune, AnUnsupportedKernelIsReportedNotRun) {
  setenv("GEMMLAB_CPU_DISABLE", "avx512f,avx2", 1);  // 05 runs with either
  auto device = registry().backend("cpu").open(0);
  unsetenv("GEMMLAB_CPU_DISABLE");
  EXPECT_THROW(tune(*device, registry().kernel("cpu", "05_packed_avx512"), Problem::packed(8, 8, 8), &openblas(),
                    nullptr, quick),
               Unsupported);
}

// A time limit reached before the search began (here: at once) still lets the starting points
// run — while the evaluation budget lasts — and stops everything after them.
TEST(Tune, TheTimeLimitCutsTheSearchButNotItsStartingPoints) {
  const Kernel& kernel = registry().kernel("cpu", "03_cache_blocked");
  const Problem p = Problem::packed(37, 29, 41);
  const SearchSpace space = kernel.space(cpu_device().info(), p.precision);
  const std::vector<Config> starts = space.enumerate(4);
  ASSERT_EQ(starts.size(), 4u);
  TuneOptions options = quick;
  options.budget = {.evaluations = 8, .seconds = 1e-9};
  options.start_with = starts;
  const TuneResult r = tune(cpu_device(), kernel, p, &openblas(), nullptr, options);
  ASSERT_EQ(r.history.size(), starts.size()) << "each starting point once, then nothing";
  for (std::size_t i = 0; i < starts.size(); ++i) EXPECT_EQ(r.history[i].config, starts[i]);

  options.budget = {.evaluations = 2, .seconds = 1e-9};  // the evaluation budget still counts
  EXPECT_EQ(tune(cpu_device(), kernel, p, &openblas(), nullptr, options).history.size(), 2u);
}

TEST(Tune, AConfigurationFarSlowerThanTheBestIsAbortedAfterOneRun) {
  const SlowKernel kernel;
  TuneOptions options = quick;
  options.strategy = "exhaustive";
  options.early_abort_factor = 3.0;
  const TuneResult r = tune(cpu_device(), kernel, Problem::packed(24, 24, 24, Precision::fp64), &openblas(), nullptr, options);
  ASSERT_EQ(r.history.size(), 2u);
  EXPECT_EQ(r.history[0].status, Status::ok);
  EXPECT_EQ(r.history[1].status, Status::aborted) << r.history[1].reason;
  EXPECT_EQ(r.aborted, 1u);
  EXPECT_LT(r.history[1].gflops, r.history[0].gflops / 3);
  ASSERT_TRUE(r.best.has_value());
  EXPECT_EQ(r.best->config.at("X"), 1);
  EXPECT_EQ(r.top(5).size(), 1u) << "an aborted configuration is not ranked";

  options.early_abort_factor = 0;  // off: both are measured
  const TuneResult all = tune(cpu_device(), kernel, Problem::packed(24, 24, 24, Precision::fp64), &openblas(), nullptr, options);
  EXPECT_EQ(all.aborted, 0u);
  EXPECT_EQ(all.history[1].status, Status::ok);
}

// X in 1..8: building "compiles" (sleeps 30 ms) unless prepare_ahead() did it already.
class CompiledAtRunTimeKernel final : public testing::TestKernel {
 public:
  CompiledAtRunTimeKernel()
      : TestKernel("compiled_at_run_time", "test kernel with a slow build step", Precision::fp32, "X", int_range(1, 8)) {}
  Compilation compilation() const override { return Compilation::at_run_time; }
  void prepare_ahead(const DeviceInfo&, Precision, const Config& c) const override { compile(c); }
  mutable int built_in_prepare = 0;

 protected:
  std::unique_ptr<Executable> build(Device& device, const Problem& p, const Config& c) const override {
    {
      std::lock_guard lock(mutex_);
      if (!built_.count(c)) ++built_in_prepare;
    }
    compile(c);
    return registry().kernel("cpu", "02_loop_order").prepare(device, p, {});
  }

 private:
  void compile(const Config& c) const {
    {
      std::lock_guard lock(mutex_);
      if (built_.count(c)) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::lock_guard lock(mutex_);
    built_.insert(c);
  }
  mutable std::mutex mutex_;
  mutable std::set<Config> built_;
};

TEST(Tune, CompileThreadsPrepareTheNextConfigurationsWhileOneIsTimed) {
  TuneOptions options = quick;
  options.strategy = "exhaustive";
  const Problem p = Problem::packed(16, 16, 16);
  const CompiledAtRunTimeKernel serial;
  const TuneResult without = tune(cpu_device(), serial, p, &openblas(), nullptr, options);
  EXPECT_EQ(serial.built_in_prepare, 8) << "without compile threads every build is on the critical path";

  options.compile_threads = 2;
  const CompiledAtRunTimeKernel overlapped;
  const TuneResult with = tune(cpu_device(), overlapped, p, &openblas(), nullptr, options);
  EXPECT_LT(overlapped.built_in_prepare, 6) << "the look-ahead did not build ahead";
  ASSERT_EQ(with.history.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(with.history[i].config, without.history[i].config) << "the overlap changed the search";
    EXPECT_EQ(with.history[i].status, Status::ok) << with.history[i].reason;
  }
  EXPECT_GT(with.evaluations_per_second(), 0);
}

// The CPU device, reporting a fixed power draw as a GPU with NVML would.
class PoweredDevice final : public Device {
 public:
  const DeviceInfo& info() const override { return cpu_device().info(); }
  std::unique_ptr<DeviceBuffer> allocate(std::size_t bytes) override { return cpu_device().allocate(bytes); }
  void upload(DeviceBuffer& dst, const void* src, std::size_t bytes) override { cpu_device().upload(dst, src, bytes); }
  void download(void* dst, DeviceBuffer& src, std::size_t bytes) override { cpu_device().download(dst, src, bytes); }
  void synchronize() override {}
  double time_once(const std::function<void()>& launch) override { return cpu_device().time_once(launch); }
  void measure_ceilings() override {}
  std::optional<PowerReading> read_power() override {
    ++readings;
    return PowerReading{.watts = 250.0, .temperature_c = 61.0};
  }
  int readings = 0;
};

TEST(Evaluator, SamplesPowerWhereTheDeviceReportsItAndGivesGflopsPerWatt) {
  const Kernel& kernel = registry().kernel("cpu", "02_loop_order");
  const Problem p = Problem::packed(40, 40, 40);
  PoweredDevice powered;
  Evaluator evaluator(powered, p, &openblas(), 1);
  const Evaluation e = evaluator.run(kernel, {}, &openblas(), {});
  ASSERT_TRUE(e.kernel && e.reference);
  EXPECT_GT(powered.readings, 0);
  ASSERT_TRUE(e.kernel->watts.has_value());
  EXPECT_EQ(*e.kernel->watts, 250.0);
  EXPECT_EQ(e.kernel->temperature_c, 61.0);
  EXPECT_DOUBLE_EQ(*e.kernel->gflops_per_watt(), e.kernel->gflops / 250.0);
  EXPECT_TRUE(e.reference->watts.has_value());

  Evaluator plain(cpu_device(), p, &openblas(), 1);
  const Evaluation none = plain.run(kernel, {}, nullptr, {});
  EXPECT_FALSE(none.kernel->watts.has_value()) << "the CPU device reports no power";
  EXPECT_FALSE(none.kernel->gflops_per_watt().has_value());
}

TEST(Evaluator, AbortsAfterOneTimedRunAboveTheThreshold) {
  const Kernel& kernel = registry().kernel("cpu", "02_loop_order");
  const Problem p = Problem::packed(30, 30, 30);
  Evaluator evaluator(cpu_device(), p, &openblas(), 1);
  EvaluationOptions options;
  options.abort_above_s = 1e-12;  // any real run is slower
  const Evaluation e = evaluator.run(kernel, {}, nullptr, options);
  EXPECT_TRUE(e.validation.valid) << "validation comes before the abort";
  EXPECT_TRUE(e.aborted);
  ASSERT_TRUE(e.kernel.has_value());
  EXPECT_EQ(e.kernel->measurement.repetitions, 1);
  options.abort_above_s = 1e3;
  const Evaluation kept = evaluator.run(kernel, {}, nullptr, options);
  EXPECT_FALSE(kept.aborted);
  EXPECT_GT(kept.kernel->measurement.repetitions, 1);
}

// Several configurations timed together: one timing each, in the order given.
TEST(Evaluator, TimesSeveralConfigurationsTogetherInTheOrderGiven) {
  const Kernel& naive = registry().kernel("cpu", "01_naive");
  const Kernel& loops = registry().kernel("cpu", "02_loop_order");
  Evaluator evaluator(cpu_device(), Problem::packed(40, 40, 40), &openblas(), 1);
  MeasureOptions brief{.warmup = 1, .min_repetitions = 3, .max_repetitions = 20, .max_seconds = 0.02,
                       .block_seconds = 0.002, .settle_seconds = 0.001};
  const std::vector<Timing> t = evaluator.time_together({{&naive, {}}, {&loops, {}}, {&naive, {}}}, brief);
  ASSERT_EQ(t.size(), 3u);
  for (const Timing& one : t) {
    EXPECT_GT(one.gflops, 0);
    EXPECT_GE(one.measurement.repetitions, 3);
  }
  EXPECT_THROW(evaluator.time_together({{&naive, {{"nope", 1}}}}, brief), std::exception)
      << "a configuration the kernel rejects is an error, as in run()";
}

// One record from the evaluation to the command line, and its one JSON form (the worker answers in
// it too): times in milliseconds, every key present.
TEST(ConfigResult, ComesFromAnEvaluationAndRoundTripsThroughItsJson) {
  const Kernel& kernel = registry().kernel("cpu", "02_loop_order");
  Evaluator evaluator(cpu_device(), Problem::packed(20, 20, 20), &openblas(), 1);
  EvaluationOptions brief;
  brief.measure.max_seconds = 0.02;
  ConfigResult r = result_of({}, evaluator.run(kernel, {}, nullptr, brief));
  ASSERT_EQ(r.status, Status::ok);
  EXPECT_GT(r.time_s, 0);
  EXPECT_GT(r.gflops, 0);
  r.ratio_to_reference = 1.25;
  r.recorded_at = "2026-01-01T00:00:00Z";
  const nlohmann::json j = r;
  for (const char* key : {"params", "status", "time_ms", "gflops", "ratio_to_reference", "max_rel_error", "reason",
                          "watts", "gflops_per_watt", "from_cache", "recorded_at"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_FALSE(j.contains("time_s"));
  EXPECT_DOUBLE_EQ(j["time_ms"].get<double>(), r.time_s * 1e3);
  EXPECT_TRUE(j["watts"].is_null()) << "the CPU reports no power";
  const ConfigResult back = j.get<ConfigResult>();
  EXPECT_EQ(back.config, r.config);
  EXPECT_EQ(back.status, r.status);
  EXPECT_DOUBLE_EQ(back.time_s, r.time_s);
  EXPECT_EQ(back.gflops, r.gflops);
  EXPECT_EQ(back.max_rel_error, r.max_rel_error);
  EXPECT_EQ(back.ratio_to_reference, 1.25);
  EXPECT_EQ(back.recorded_at, r.recorded_at);
  EXPECT_FALSE(back.watts);

  // Untimed and unbounded values are null, and read back as what they stood for.
  const ConfigResult invalid{.config = {{"X", 1}}, .status = Status::invalid, .time_s = 0, .gflops = 0,
                             .max_rel_error = std::numeric_limits<double>::infinity(), .reason = "NaN at (0, 0)"};
  const nlohmann::json ij = invalid;
  EXPECT_TRUE(ij["time_ms"].is_null());
  EXPECT_TRUE(ij["ratio_to_reference"].is_null());
  EXPECT_TRUE(ij["max_rel_error"].is_null());
  EXPECT_TRUE(ij["recorded_at"].is_null());
  EXPECT_EQ(ij.get<ConfigResult>().max_rel_error, std::numeric_limits<double>::infinity());
  const ConfigResult failed{.config = {}, .status = Status::failed, .reason = "crashed"};
  EXPECT_EQ(nlohmann::json(failed).get<ConfigResult>().max_rel_error, 0.0);
  EXPECT_THROW(nlohmann::json({{"params", nlohmann::json::object()}, {"status", "great"}}).get<ConfigResult>(),
               std::invalid_argument);
}

TEST(EvaluationJson, RunAndSweepShareOneShapeWithTimesInMilliseconds) {
  const Kernel& kernel = registry().kernel("cpu", "02_loop_order");
  const Problem p = Problem::packed(20, 20, 20);
  EvaluationOptions brief;
  brief.measure.max_seconds = 0.02;
  const Evaluation e = evaluate(cpu_device(), kernel, {}, p, &openblas(), &openblas(), brief);
  const nlohmann::json j = e;
  for (const char* key : {"valid", "max_rel_error", "tolerance", "reason", "time_ms", "gflops", "timing", "reference",
                          "ratio_to_reference", "power"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_DOUBLE_EQ(j["time_ms"].get<double>(), e.kernel->measurement.median_s * 1e3);
  EXPECT_DOUBLE_EQ(j["timing"]["median_ms"].get<double>(), e.kernel->measurement.median_s * 1e3);
  EXPECT_FALSE(j["timing"].contains("median_s"));
  EXPECT_EQ(j["reference"]["name"], "openblas");
  EXPECT_DOUBLE_EQ(j["reference"]["time_ms"].get<double>(), e.reference->measurement.median_s * 1e3);
  EXPECT_TRUE(j["power"].is_null());
  EvaluationOptions validate_only;
  validate_only.time = false;
  const nlohmann::json untimed = evaluate(cpu_device(), kernel, {}, p, &openblas(), nullptr, validate_only);
  EXPECT_TRUE(untimed["time_ms"].is_null() && untimed["gflops"].is_null() && untimed["reference"].is_null());
}

}  // namespace
}  // namespace gemmlab
