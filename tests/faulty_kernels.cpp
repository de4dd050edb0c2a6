#include "faulty_kernels.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace gemmlab::testing {
namespace {

// C = alpha * A * B (+ offset), `repeats` times over (fp64; beta is taken as 0).
class NaiveRun final : public Executable {
 public:
  NaiveRun(const Problem& p, double offset, int repeats, CrashMode mode)
      : p_(p), offset_(offset), repeats_(repeats), mode_(mode) {}
  void run(const Operands& o) override {
    fault();
    const auto* a = static_cast<const double*>(o.a);
    const auto* b = static_cast<const double*>(o.b);
    auto* c = static_cast<double*>(o.c);
    for (int r = 0; r < repeats_; ++r)
      for (std::int64_t i = 0; i < p_.m; ++i)
        for (std::int64_t j = 0; j < p_.n; ++j) {
          double sum = 0;
          for (std::int64_t k = 0; k < p_.k; ++k) sum += a[i * p_.lda + k] * b[k * p_.ldb + j];
          volatile double keep = sum;  // each repeat really runs
          c[i * p_.ldc + j] = p_.alpha * keep + offset_;
        }
  }

 private:
  void fault() const {
    switch (mode_) {
      case segfault:
        std::raise(SIGSEGV);
        break;
      case hang:
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      case abort_process:
        std::abort();
      case exhaust_memory: {
        constexpr std::size_t chunk = std::size_t{256} << 20, most = std::size_t{8} << 30;
        std::vector<std::unique_ptr<char[]>> held;
        for (std::size_t total = 0; total < most; total += chunk) {
          held.push_back(std::make_unique<char[]>(chunk));  // zero-filled: the pages are touched
          std::memset(held.back().get(), 1, chunk);
        }
        throw std::runtime_error("8 GiB allocated without an allocation failure: no memory limit in effect");
      }
      default:
        break;
    }
  }
  Problem p_;
  double offset_;
  int repeats_;
  CrashMode mode_;
};

SearchSpace one_parameter(const std::string& name, std::vector<std::int64_t> values) {
  SearchSpace s;
  s.add(name, std::move(values), "");
  return s;
}

}  // namespace

SearchSpace FaultyKernel::space(const DeviceInfo&, Precision) const { return one_parameter("X", {1, 2, 3, 4}); }

std::unique_ptr<Executable> FaultyKernel::prepare(Device&, const Problem& p, const Config& c) const {
  if (c.at("X") == 3) throw ConfigError("X=3 cannot be built");
  return std::make_unique<NaiveRun>(p, c.at("X") == 4 ? 1.0 : 0.0, 1, correct);
}

SearchSpace SlowKernel::space(const DeviceInfo&, Precision) const { return one_parameter("X", {1, 2}); }

std::unique_ptr<Executable> SlowKernel::prepare(Device&, const Problem& p, const Config& c) const {
  return std::make_unique<NaiveRun>(p, 0.0, c.at("X") == 2 ? 300 : 1, correct);
}

SearchSpace CrashingKernel::space(const DeviceInfo&, Precision) const {
  return one_parameter("MODE", {correct, segfault, hang, abort_process, correct_again, exhaust_memory});
}

std::unique_ptr<Executable> CrashingKernel::prepare(Device&, const Problem& p, const Config& c) const {
  return std::make_unique<NaiveRun>(p, 0.0, 1, static_cast<CrashMode>(c.at("MODE")));
}

void register_faulty_kernels(Registry& registry) {
  registry.add_kernel(std::make_unique<FaultyKernel>());
  registry.add_kernel(std::make_unique<SlowKernel>());
  registry.add_kernel(std::make_unique<CrashingKernel>());
}

}  // namespace gemmlab::testing
