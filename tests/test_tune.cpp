// Tuning live kernels: budget, no repetition, validity, and the failed / invalid outcomes of
// deliberately faulty test kernels.
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
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
  setenv("GEMMLAB_CPU_DISABLE", "avx512f", 1);
  auto device = registry().backend("cpu").open(0);
  unsetenv("GEMMLAB_CPU_DISABLE");
  EXPECT_THROW(tune(*device, registry().kernel("cpu", "05_packed_avx512"), Problem::packed(8, 8, 8), &openblas(),
                    nullptr, quick),
               Unsupported);
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

// X in 1..8: prepare() "compiles" (sleeps 30 ms) unless prepare_ahead() did it already.
class CompiledAtRunTimeKernel final : public testing::TestKernel {
 public:
  CompiledAtRunTimeKernel()
      : TestKernel("compiled_at_run_time", "test kernel with a slow build step", Precision::fp32, "X") {}
  SearchSpace space(const DeviceInfo&, Precision) const override {
    SearchSpace s;
    s.add("X", int_range(1, 8), "");
    return s;
  }
  void prepare_ahead(const DeviceInfo&, Precision, const Config& c) const override { build(c); }
  std::unique_ptr<Executable> prepare(Device& device, const Problem& p, const Config& c) const override {
    {
      std::lock_guard lock(mutex_);
      if (!built_.count(c)) ++built_in_prepare;
    }
    build(c);
    return registry().kernel("cpu", "02_loop_order").prepare(device, p, {});
  }
  mutable int built_in_prepare = 0;

 private:
  void build(const Config& c) const {
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

}  // namespace
}  // namespace gemmlab
