// Deliberately faulty test kernels (fp64, on the cpu backend): configurations that cannot be
// built, compute a wrong result, are very slow, crash, hang, abort or exhaust memory. The unit
// tests use them in-process; the test worker (test_worker_main.cpp) registers them so that the
// sandboxed evaluation can be tested with real crashes and hangs.
#pragma once

#include <string>

#include "gemmlab/registry.hpp"

namespace gemmlab::testing {

// What every test kernel shares: a cpu-backend kernel of one precision that any device runs,
// with one parameter and a fixed source hash.
class TestKernel : public Kernel {
 public:
  TestKernel(std::string name, std::string summary, Precision precision, std::string parameter)
      : name_(std::move(name)), summary_(std::move(summary)), precision_(precision), parameter_(std::move(parameter)) {}
  std::string_view name() const override { return name_; }
  std::string_view backend() const override { return "cpu"; }
  std::string_view summary() const override { return summary_; }
  std::vector<Precision> precisions() const override { return {precision_}; }
  Support supported(const DeviceInfo&) const override { return {}; }
  Config default_config(const DeviceInfo& device, Precision p) const override {
    return {{parameter_, space(device, p).parameters().front().values.front()}};
  }
  std::string source_hash() const override { return "test"; }

 private:
  std::string name_, summary_;
  Precision precision_;
  std::string parameter_;
};

// X in {1, 2, 3, 4}: 1 and 2 are correct, 3 cannot be built, 4 computes a wrong result.
class FaultyKernel final : public TestKernel {
 public:
  FaultyKernel() : TestKernel("faulty", "test kernel with broken configurations", Precision::fp64, "X") {}
  SearchSpace space(const DeviceInfo&, Precision) const override;
  std::unique_ptr<Executable> prepare(Device&, const Problem& p, const Config& c) const override;
};

// X in {1, 2}: X = 2 computes the same correct result but repeats the work 300 times.
class SlowKernel final : public TestKernel {
 public:
  SlowKernel() : TestKernel("slow", "test kernel with one very slow configuration", Precision::fp64, "X") {}
  SearchSpace space(const DeviceInfo&, Precision) const override;
  std::unique_ptr<Executable> prepare(Device&, const Problem& p, const Config& c) const override;
};

// What a configuration of CrashingKernel does when it runs.
enum CrashMode : std::int64_t {
  correct = 0,
  segfault = 1,         // SIGSEGV
  hang = 2,             // never returns
  abort_process = 3,    // std::abort, as a failed assertion does
  correct_again = 4,    // correct, to see tuning go on after the faults above
  exhaust_memory = 5,   // allocates and touches memory until an allocation fails (at most 8 GiB)
};

// MODE in CrashMode: the faults only a sandboxed evaluation survives.
class CrashingKernel final : public TestKernel {
 public:
  CrashingKernel() : TestKernel("crashing", "test kernel whose configurations crash, hang or exhaust memory", Precision::fp64, "MODE") {}
  SearchSpace space(const DeviceInfo&, Precision) const override;
  std::unique_ptr<Executable> prepare(Device&, const Problem& p, const Config& c) const override;
};

// Adds the three kernels above to `registry` (whose cpu backend must be registered).
void register_faulty_kernels(Registry& registry);

}  // namespace gemmlab::testing
