// How long enumerating a kernel's valid space takes: valid_size() (the depth-first walk the tuner's
// search domain and `gemmlab kernels` use) of the largest spaces, per kernel and precision on this
// machine's first device of each backend (the GPU backends: their first compile target), with the
// walk's bindings and constraint checks per valid configuration (how early it prunes).
//   build/default/bench/space_bench [--benchmark_filter=opencl] [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include "gemmlab/builtin.hpp"

namespace {

using namespace gemmlab;

void enumerate_space(benchmark::State& state, const Kernel* kernel, DeviceInfo device, Precision precision) {
  const SearchSpace space = kernel->space(device, precision);
  std::size_t valid = 0;
  for (auto _ : state) benchmark::DoNotOptimize(valid = space.valid_size());
  state.counters["valid"] = static_cast<double>(valid);
  state.counters["raw"] = space.raw_size();
  // How early the constraints prune: values bound and constraint evaluations per valid point.
  const SearchSpace::EnumerationCost cost = space.enumeration_cost();
  double checks = 0;
  for (auto n : cost.checks) checks += static_cast<double>(n);
  state.counters["bindings/valid"] = valid > 0 ? static_cast<double>(cost.bindings) / static_cast<double>(valid) : 0;
  state.counters["checks/valid"] = valid > 0 ? checks / static_cast<double>(valid) : 0;
}

// Every kernel whose raw space has at least this many points: the small ones take microseconds.
constexpr double smallest_timed_space = 1000;

void register_benchmarks() {
  for (const Kernel* k : registry().kernels()) {
    std::vector<DeviceInfo> devices = registry().backend(std::string(k->backend())).devices();
    const auto targets = k->compile_targets();
    if (devices.empty() && !targets.empty()) devices.push_back(targets.front().device);
    if (devices.empty()) continue;
    for (Precision p : k->precisions()) {
      if (k->space(devices.front(), p).raw_size() < smallest_timed_space) continue;
      const std::string name = std::string(k->backend()) + "/" + std::string(k->name()) + "/" + std::string(to_string(p));
      benchmark::RegisterBenchmark(name.c_str(), enumerate_space, k, devices.front(), p)->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
