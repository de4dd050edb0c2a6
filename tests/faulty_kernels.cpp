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

}  // namespace

TestKernel::TestKernel(std::string name, std::string summary, Precision precision, std::string parameter,
                       std::vector<ParamValue> values, Builder builder)
    : Kernel({.name = std::move(name),
              .backend = "cpu",
              .summary = std::move(summary),
              .precisions = {precision},
              .source_sha256 = "test"}),
      parameter_(std::move(parameter)), values_(std::move(values)), builder_(std::move(builder)) {}

SearchSpace TestKernel::space(const DeviceInfo&, Precision) const {
  SearchSpace s;
  s.add(parameter_, values_, "");
  return s;
}

FaultyKernel::FaultyKernel()
    : TestKernel("faulty", "test kernel with broken configurations", Precision::fp64, "X", {1, 2, 3, 4},
                 [](const Problem& p, ParamValue x) -> std::unique_ptr<Executable> {
                   if (x == 3) throw ConfigError("X=3 cannot be built");
                   return std::make_unique<NaiveRun>(p, x == 4 ? 1.0 : 0.0, 1, correct);
                 }) {}

SlowKernel::SlowKernel()
    : TestKernel("slow", "test kernel with one very slow configuration", Precision::fp64, "X", {1, 2},
                 [](const Problem& p, ParamValue x) { return std::make_unique<NaiveRun>(p, 0.0, x == 2 ? 300 : 1, correct); }) {}

CrashingKernel::CrashingKernel()
    : TestKernel("crashing", "test kernel whose configurations crash, hang or exhaust memory", Precision::fp64, "MODE",
                 {correct, segfault, hang, abort_process, correct_again, exhaust_memory},
                 [](const Problem& p, ParamValue mode) {
                   return std::make_unique<NaiveRun>(p, 0.0, 1, static_cast<CrashMode>(mode));
                 }) {}

void register_faulty_kernels(Registry& registry) {
  registry.add_kernel(std::make_unique<FaultyKernel>());
  registry.add_kernel(std::make_unique<SlowKernel>());
  registry.add_kernel(std::make_unique<CrashingKernel>());
}

}  // namespace gemmlab::testing
