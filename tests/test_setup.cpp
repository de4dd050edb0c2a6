// The one evaluation setup (device, timed reference, fp64 truth), what a device says about itself
// (native precision, host memory), and the memory-traffic model of the sweeps.
#include <algorithm>

#include "gemmlab/evaluate.hpp"
#include "gemmlab/setup.hpp"
#include "gemmlab/systolic.hpp"
#include "gemmlab/traffic.hpp"
#include "gemmlab/worker.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

TEST(EvaluationSetup, OpensTheDeviceTheBackendsFirstReferenceAndTheTruth) {
  const EvaluationSetup setup = open_evaluation(registry().backend("cpu"));
  ASSERT_TRUE(setup.device && setup.reference && setup.truth);
  EXPECT_EQ(setup.info().backend, "cpu");
  EXPECT_EQ(setup.reference_name, registry().backend("cpu").reference_names().front());
  EXPECT_EQ(setup.reference->name(), setup.reference_name);
  EXPECT_EQ(setup.threads, setup.info().cores) << "no thread count given: all the device's cores";

  // The setup evaluates: a kernel validated against the truth and timed beside the reference.
  const Problem p = Problem::packed(9, 7, 5);
  EvaluationOptions quick;
  quick.measure.max_seconds = 0.01;
  const Kernel& kernel = registry().kernel("cpu", "02_loop_order");
  const Evaluation e = evaluate(*setup.device, kernel, default_config(kernel, setup.info(), p.precision, 1), p,
                                setup.truth.get(), setup.reference.get(), quick);
  EXPECT_TRUE(e.validation.valid) << e.validation.reason;
  EXPECT_EQ(e.reference_name, setup.reference_name);
}

TEST(EvaluationSetup, NamedReferenceThreadsAndNoReference) {
  const EvaluationSetup blis = open_evaluation(registry().backend("cpu"), {.reference = "blis", .threads = 1});
  EXPECT_EQ(blis.reference_name, "blis");
  EXPECT_EQ(blis.threads, 1);
  const EvaluationSetup none = open_evaluation(registry().backend("cpu"), {.timed_reference = false});
  EXPECT_EQ(none.reference, nullptr);
  EXPECT_EQ(none.reference_name, "");
  EXPECT_NE(none.truth, nullptr) << "validation needs the truth with or without a timed reference";
}

TEST(EvaluationSetup, UnknownReferenceOrDeviceIsAnErrorNamingWhatExists) {
  EXPECT_THROW_MENTIONING(open_evaluation(registry().backend("cpu"), {.reference = "nope"}), std::invalid_argument,
                          {"nope", "openblas"});
  EXPECT_THROW_MENTIONING(open_evaluation(registry().backend("systolic"), {.device = 99}), std::invalid_argument,
                          {"99", "tpu-v1"});
}

TEST(DeviceDescription, SaysWhetherItsMemoryIsHostMemoryAndItsNativePrecision) {
  const DeviceInfo cpu = registry().backend("cpu").devices().front();
  EXPECT_TRUE(cpu.host_memory);
  EXPECT_EQ(cpu.native_precision, Precision::fp32);
  const auto arrays = registry().backend("systolic").devices();
  ASSERT_EQ(arrays.size(), 6u);
  for (const DeviceInfo& a : arrays) {
    EXPECT_TRUE(a.host_memory) << a.name;
    EXPECT_EQ(a.native_precision, systolic::preset(a.name).precision) << a.name;
  }
  EXPECT_EQ(arrays[0].native_precision, Precision::int8) << "tpu-v1";
  EXPECT_EQ(arrays[1].native_precision, Precision::bf16) << "tpu-v2";
}

TEST(DeviceDescription, TheFingerprintDoesNotDependOnTheNewFields) {
  // Results cached before the fields existed keep their key.
  DeviceInfo d = registry().backend("cpu").devices().front();
  const std::string before = fingerprint(d);
  d.host_memory = !d.host_memory;
  d.native_precision = Precision::bf16;
  EXPECT_EQ(fingerprint(d), before);
}

TEST(WorkerMemory, HostMemoryDevicesGetThePhysicalMemoryOthersNoLimit) {
  DeviceInfo d = registry().backend("cpu").devices().front();
  EXPECT_GT(default_worker_memory_limit(d), std::uint64_t{1} << 26);
  d.host_memory = false;  // as a GPU describes itself
  EXPECT_EQ(default_worker_memory_limit(d), 0u);
}

TEST(KernelChoices, DefaultPrecisionIsTheDevicesNativeOneWhenTheKernelHasIt) {
  const auto arrays = registry().backend("systolic").devices();
  const Kernel& tiled = registry().kernel("systolic", "02_buffer_tiled");
  EXPECT_EQ(default_precision(tiled, arrays[0]), Precision::int8);
  EXPECT_EQ(default_precision(tiled, arrays[4]), Precision::bf16);
  const Kernel& naive = registry().kernel("cpu", "01_naive");
  EXPECT_EQ(default_precision(naive, testing::cpu_device().info()), Precision::fp32);
  // A kernel without the native precision takes its own first one.
  DeviceInfo int8_device = testing::cpu_device().info();
  int8_device.native_precision = Precision::int8;
  EXPECT_EQ(default_precision(naive, int8_device), naive.precisions().front());
}

TEST(KernelChoices, NoValidConfigurationSaysWhichPrecisionsWork) {
  const DeviceInfo v1 = registry().backend("systolic").devices().front();
  const Kernel& tiled = registry().kernel("systolic", "02_buffer_tiled");
  const auto workable = precisions_with_valid_configurations(tiled, v1);
  EXPECT_EQ(std::count(workable.begin(), workable.end(), Precision::fp32), 0) << "tpu-v1 holds no fp32 tile";
  EXPECT_EQ(std::count(workable.begin(), workable.end(), Precision::int8), 1);
  const std::string message = no_valid_configuration_message(tiled, v1, Precision::fp32);
  for (const char* word : {"02_buffer_tiled", "fp32", "tpu-v1", "int8", "bf16"})
    EXPECT_TRUE(testing::contains(message, word)) << word << " in: " << message;
}

TEST(KernelChoices, RequireRunsNamesThePrecisionsAKernelHas) {
  const Kernel& naive = registry().kernel("cpu", "01_naive");
  EXPECT_THROW_MENTIONING(require_runs(naive, testing::cpu_device().info(), Precision::fp16), std::invalid_argument,
                          {"fp16", "fp32", "fp64"});
  EXPECT_THROW(require_runs(registry().kernel("systolic", "01_array_tiles"), testing::cpu_device().info(), Precision::int8),
               Unsupported);
}

TEST(Traffic, TheStagedTileComesFromTheSpacesTileParameters) {
  const DeviceInfo& cpu = testing::cpu_device().info();
  const Kernel& blocked = registry().kernel("cpu", "03_cache_blocked");
  const SearchSpace space = blocked.space(cpu, Precision::fp32);
  Config config = blocked.default_config(cpu, Precision::fp32);
  const auto tile = staged_tile(space, config);
  ASSERT_TRUE(tile);
  EXPECT_EQ(tile->m, config.at("MC"));
  EXPECT_EQ(tile->n, config.at("NC"));
  const Kernel& naive = registry().kernel("cpu", "01_naive");
  EXPECT_FALSE(staged_tile(naive.space(cpu, Precision::fp32), {})) << "no tile parameters, no tile";
  // Names the space does not declare are not a tile, whatever the configuration holds.
  EXPECT_FALSE(staged_tile(naive.space(cpu, Precision::fp32), {{"MC", 8}, {"NC", 8}}));
}

TEST(Traffic, ATiledGemmReadsAOncePerColumnOfTilesAndBOncePerRowOfTiles) {
  // 64 x 48 x 32 fp32 in 16 x 24 tiles: 4 rows and 2 columns of tiles.
  const Problem p = Problem::packed(64, 48, 32);
  const Traffic t = tiled_traffic(p, {.m = 16, .n = 24});
  const double a = 64 * 32 * 4, b = 32 * 48 * 4, c = 64 * 48 * 4;
  EXPECT_DOUBLE_EQ(t.bytes_moved, a * 2 + b * 4 + c);
  EXPECT_DOUBLE_EQ(t.arithmetic_intensity, p.flops() / t.bytes_moved);
  EXPECT_EQ(t.tiles, 8);
  const Problem with_c = Problem::packed(64, 48, 32, Precision::fp32, 1.0, 0.5);
  EXPECT_DOUBLE_EQ(tiled_traffic(with_c, {.m = 16, .n = 24}).bytes_moved, a * 2 + b * 4 + 2 * c) << "C read too";
  // A partial edge tile counts as a tile.
  EXPECT_EQ(tiled_traffic(Problem::packed(65, 48, 32), {.m = 16, .n = 24}).tiles, 10);
}

TEST(Traffic, GrowthLimitsNameTheConstraintsTheNextValueBreaks) {
  SearchSpace s;
  s.add("A", {1, 2, 4}, "").add("B", {1, 2, 4}, "").add("C", {1, 2}, "");
  s.require("A * B <= 4", "the product's budget");
  const auto limits = growth_limits(s, {{"A", 2}, {"B", 2}, {"C", 2}});
  ASSERT_EQ(limits.size(), 3u);
  EXPECT_EQ(limits[0].parameter, "A");
  EXPECT_EQ(limits[0].next, 4);
  ASSERT_EQ(limits[0].constraints.size(), 1u);
  EXPECT_EQ(limits[0].constraints[0].describe(), "A * B <= 4 (the product's budget)");
  EXPECT_EQ(limits[1].parameter, "B");
  EXPECT_EQ(limits[2].parameter, "C");
  EXPECT_FALSE(limits[2].next) << "C is at its largest value";
  EXPECT_TRUE(growth_limits(s, {{"A", 1}, {"B", 1}, {"C", 1}}).empty()) << "every parameter can grow";
}

}  // namespace
}  // namespace gemmlab
