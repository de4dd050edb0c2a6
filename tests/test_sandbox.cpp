// Sandboxed evaluation: real crashes, hangs, aborts and memory exhaustion in a worker process
// (the test worker knows the deliberately faulty kernels of faulty_kernels.hpp). Each is recorded
// as failed with its reason, the worker is restarted, and tuning goes on.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "faulty_kernels.hpp"
#include "gemmlab/worker.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::contains;
using testing::cpu_device;

const std::vector<std::string> test_worker{GEMMLAB_TEST_WORKER};
const MeasureOptions quick_measure{.warmup = 0, .min_repetitions = 1, .max_repetitions = 3, .max_seconds = 0.01};

WorkerSetup setup_for(const std::string& kernel, std::uint64_t memory_limit_bytes = 0) {
  return {.backend = "cpu", .device = 0, .kernel = kernel, .problem = Problem::packed(9, 7, 5, Precision::fp64),
          .seed = 3, .reference = "openblas", .reference_threads = 1, .measure = quick_measure,
          .memory_limit_bytes = memory_limit_bytes};
}

TuneOptions exhaustive(std::size_t budget) {
  return {.strategy = "exhaustive", .budget = {.evaluations = budget}, .seed = 3, .measure = quick_measure,
          .early_abort_factor = 0, .timeout_factor = 10, .timeout_floor_s = 1.0};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(Sandbox, CrashesHangsAndAbortsAreFailedWithTheirReasonAndTuningGoesOn) {
  const testing::CrashingKernel kernel;
  const Problem p = setup_for("crashing").problem;
  WorkerRunner runner(test_worker, setup_for("crashing"));
  const auto start = std::chrono::steady_clock::now();
  // Modes in order: correct, segfault, hang, abort, correct again (memory exhaustion not reached).
  const TuneResult r = tune(kernel.space(cpu_device().info(), p.precision), p, runner, exhaustive(5));
  EXPECT_LT(seconds_since(start), 30.0) << "the hang was not cut off by the 1 s timeout";

  ASSERT_EQ(r.history.size(), 5u);
  EXPECT_EQ(r.history[0].status, Status::ok) << r.history[0].reason;
  EXPECT_EQ(r.history[1].status, Status::failed);
  // Plain builds die of the signal; under AddressSanitizer its SEGV handler reports and exits.
  EXPECT_TRUE(contains(r.history[1].reason, "signal 11") || contains(r.history[1].reason, "SEGV"))
      << r.history[1].reason;
  EXPECT_EQ(r.history[2].status, Status::failed);
  EXPECT_TRUE(contains(r.history[2].reason, "timed out")) << r.history[2].reason;
  EXPECT_EQ(r.history[3].status, Status::failed);
  EXPECT_TRUE(contains(r.history[3].reason, "signal 6")) << r.history[3].reason;
  EXPECT_EQ(r.history[4].status, Status::ok) << "tuning did not go on after the faults: " << r.history[4].reason;
  EXPECT_EQ(r.failed, 3u);
  EXPECT_EQ(r.worker_restarts, 3u);
  ASSERT_TRUE(r.best.has_value());
  EXPECT_TRUE(r.best->config.at("MODE") == testing::correct || r.best->config.at("MODE") == testing::correct_again);
  EXPECT_GT(r.reference_gflops, 0) << "the reference is timed in the worker";
  EXPECT_TRUE(r.reference_beside_best);
}

TEST(Sandbox, CachedFailuresAreReusedExceptTimeouts) {
  const testing::CrashingKernel kernel;
  const Problem p = setup_for("crashing").problem;
  const testing::Scratch scratch;  // outlives the cache, whose files (with SQLite's -wal and -shm) go with it
  ResultsCache results(scratch.file("results.sqlite"));
  const TuneCache cache{.cache = &results, .key = cache_key(cpu_device().info(), kernel, p)};
  WorkerRunner runner(test_worker, setup_for("crashing"));
  const SearchSpace space = kernel.space(cpu_device().info(), p.precision);
  const TuneResult first = tune(space, p, runner, exhaustive(5), {}, cache);
  EXPECT_EQ(first.reused_from_cache, 0u);
  const TuneResult again = tune(space, p, runner, exhaustive(5), {}, cache);
  EXPECT_EQ(again.reused_from_cache, 4u) << "all but the timed-out configuration";
  ASSERT_EQ(again.history.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(again.history[i].status, first.history[i].status) << i;
    EXPECT_EQ(again.history[i].from_cache, i != 2) << i;
  }
  EXPECT_EQ(again.history[1].reason, first.history[1].reason) << "a cached crash keeps its reason";
}

TEST(Sandbox, TheTimeoutIsAMultipleOfTheBestEvaluationWithAFloor) {
  WorkerRunner runner(test_worker, setup_for("crashing"));
  const auto start = std::chrono::steady_clock::now();
  const ConfigResult hung = runner.run({{"MODE", testing::hang}}, 0, 0.5);
  const double waited = seconds_since(start);
  EXPECT_EQ(hung.status, Status::failed);
  EXPECT_TRUE(contains(hung.reason, "0.5 s")) << hung.reason;
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 10.0);
  EXPECT_EQ(runner.run({{"MODE", testing::correct}}, 0, 10).status, Status::ok);
  EXPECT_EQ(runner.restarts(), 1u);
}

TEST(Sandbox, MemoryExhaustionIsFailedAndTheWorkerSurvivesIt) {
  if (!worker_memory_limit_supported())
    GTEST_SKIP() << "AddressSanitizer build: the worker's address-space limit is not applied (ASan's shadow "
                    "memory needs terabytes of address space), so exhausting memory would hit the whole machine";
  // 1 GiB plus 128 MiB a core, at most 6 GiB (the kernel stops at 8): the fp64 reference (OpenBLAS)
  // starts a thread per core when loaded, each reserving address space (its stack, glibc's arena,
  // OpenBLAS's buffer); on 16 cores a flat 1 GiB stopped the worker before the kernel ran.
  const std::uint64_t limit = std::min<std::uint64_t>(
      (std::uint64_t{1} << 30) + std::uint64_t{std::thread::hardware_concurrency()} * (std::uint64_t{128} << 20),
      std::uint64_t{6} << 30);
  WorkerRunner runner(test_worker, setup_for("crashing", limit));
  const ConfigResult o = runner.run({{"MODE", testing::exhaust_memory}}, 0, 60);
  EXPECT_EQ(o.status, Status::failed);
  EXPECT_TRUE(contains(o.reason, "out of memory")) << o.reason;
  EXPECT_EQ(runner.run({{"MODE", testing::correct}}, 0, 60).status, Status::ok);
  EXPECT_EQ(runner.restarts(), 0u) << "an allocation failure is caught in the worker";
}

TEST(Sandbox, WrongAndUnbuildableConfigurationsAndEarlyAbortComeBackFromTheWorker) {
  const testing::FaultyKernel faulty;
  const Problem p = setup_for("faulty").problem;
  WorkerRunner runner(test_worker, setup_for("faulty"));
  const TuneResult r = tune(faulty.space(cpu_device().info(), p.precision), p, runner, exhaustive(4));
  ASSERT_EQ(r.history.size(), 4u);
  EXPECT_EQ(r.history[2].status, Status::failed);
  EXPECT_TRUE(contains(r.history[2].reason, "X=3 cannot be built")) << r.history[2].reason;
  EXPECT_EQ(r.history[3].status, Status::invalid);
  EXPECT_EQ(r.worker_restarts, 0u);

  const testing::SlowKernel slow;
  WorkerRunner slow_runner(test_worker, setup_for("slow"));
  TuneOptions options = exhaustive(2);
  options.early_abort_factor = 3;
  const TuneResult s = tune(slow.space(cpu_device().info(), p.precision), p, slow_runner, options);
  ASSERT_EQ(s.history.size(), 2u);
  EXPECT_EQ(s.history[1].status, Status::aborted) << s.history[1].reason;
}

TEST(Sandbox, AWorkerThatCannotStartOrBeSetUpIsAClearError) {
  auto unknown_kernel = [] { WorkerRunner runner(test_worker, setup_for("no_such_kernel")); };
  EXPECT_THROW_MENTIONING(unknown_kernel(), std::runtime_error, {"no_such_kernel"});
  auto missing_program = [] { WorkerRunner runner({"/nonexistent/gemmlab-worker"}, setup_for("crashing")); };
  EXPECT_THROW_CONTAINING(missing_program(), std::runtime_error, {"/nonexistent/gemmlab-worker"});
}

}  // namespace
}  // namespace gemmlab
