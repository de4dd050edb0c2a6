// Deliberately faulty test kernels (fp64, on the cpu backend): configurations that cannot be
// built, compute a wrong result, are very slow, crash, hang, abort or exhaust memory. The unit
// tests use them in-process; the test worker (test_worker_main.cpp) registers them so that the
// sandboxed evaluation can be tested with real crashes and hangs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gemmlab/registry.hpp"

namespace gemmlab::testing {

// What every test kernel shares: a cpu-backend kernel of one precision that any device runs, with
// one parameter taking `values` and a fixed source hash; a configuration is built by `builder`
// from the problem and the parameter's value.
class TestKernel : public Kernel {
 public:
  using Builder = std::function<std::unique_ptr<Executable>(const Problem&, ParamValue)>;
  TestKernel(std::string name, std::string summary, Precision precision, std::string parameter,
             std::vector<ParamValue> values, Builder builder = {});
  Support supported(const DeviceInfo&) const override { return {}; }
  SearchSpace space(const DeviceInfo&, Precision) const override;

 protected:
  Config preferred_config(const DeviceInfo&, Precision) const override { return {{parameter_, values_.front()}}; }
  std::unique_ptr<Executable> build(Device&, const Problem& p, const Config& c) const override {
    return builder_(p, c.at(parameter_));
  }

 private:
  std::string parameter_;
  std::vector<ParamValue> values_;
  Builder builder_;
};

// X in {1, 2, 3, 4}: 1 and 2 are correct, 3 cannot be built, 4 computes a wrong result.
class FaultyKernel final : public TestKernel {
 public:
  FaultyKernel();
};

// X in {1, 2}: X = 2 computes the same correct result but repeats the work 300 times.
class SlowKernel final : public TestKernel {
 public:
  SlowKernel();
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
  CrashingKernel();
};

// Adds the three kernels above to `registry` (whose cpu backend must be registered).
void register_faulty_kernels(Registry& registry);

}  // namespace gemmlab::testing
