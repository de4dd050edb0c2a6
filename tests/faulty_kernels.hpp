// Deliberately faulty test kernels (fp64, on the cpu backend): configurations that cannot be
// built, compute a wrong result, are very slow, crash, hang, abort or exhaust memory. The unit
// tests use them in-process; the test worker (test_worker_main.cpp) registers them so that the
// sandboxed evaluation can be tested with real crashes and hangs.
#pragma once

#include "gemmlab/registry.hpp"

namespace gemmlab::testing {

// X in {1, 2, 3, 4}: 1 and 2 are correct, 3 cannot be built, 4 computes a wrong result.
class FaultyKernel final : public Kernel {
 public:
  std::string_view name() const override { return "faulty"; }
  std::string_view backend() const override { return "cpu"; }
  std::string_view summary() const override { return "test kernel with broken configurations"; }
  std::vector<Precision> precisions() const override { return {Precision::fp64}; }
  Support supported(const DeviceInfo&) const override { return {}; }
  SearchSpace space(const DeviceInfo&, Precision) const override;
  Config default_config(const DeviceInfo&, Precision) const override { return {{"X", 1}}; }
  std::unique_ptr<Executable> prepare(Device&, const Problem& p, const Config& c) const override;
  std::string source_hash() const override { return "test"; }
};

// X in {1, 2}: X = 2 computes the same correct result but repeats the work 300 times.
class SlowKernel final : public Kernel {
 public:
  std::string_view name() const override { return "slow"; }
  std::string_view backend() const override { return "cpu"; }
  std::string_view summary() const override { return "test kernel with one very slow configuration"; }
  std::vector<Precision> precisions() const override { return {Precision::fp64}; }
  Support supported(const DeviceInfo&) const override { return {}; }
  SearchSpace space(const DeviceInfo&, Precision) const override;
  Config default_config(const DeviceInfo&, Precision) const override { return {{"X", 1}}; }
  std::unique_ptr<Executable> prepare(Device&, const Problem& p, const Config& c) const override;
  std::string source_hash() const override { return "test"; }
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
class CrashingKernel final : public Kernel {
 public:
  std::string_view name() const override { return "crashing"; }
  std::string_view backend() const override { return "cpu"; }
  std::string_view summary() const override { return "test kernel whose configurations crash, hang or exhaust memory"; }
  std::vector<Precision> precisions() const override { return {Precision::fp64}; }
  Support supported(const DeviceInfo&) const override { return {}; }
  SearchSpace space(const DeviceInfo&, Precision) const override;
  Config default_config(const DeviceInfo&, Precision) const override { return {{"MODE", correct}}; }
  std::unique_ptr<Executable> prepare(Device&, const Problem& p, const Config& c) const override;
  std::string source_hash() const override { return "test"; }
};

// Adds the three kernels above to `registry` (whose cpu backend must be registered).
void register_faulty_kernels(Registry& registry);

}  // namespace gemmlab::testing
