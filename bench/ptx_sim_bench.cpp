// The PTX simulator's speed: thread-instructions per second on one host core, for every CUDA
// kernel at its default configuration on the simulated H100 (sim-sm_90a), in its first precision.
// Each kernel's C is checked against the fp64 reference before it is timed; a wrong C is an error.
//
//   ptx_sim_bench [--benchmark_format=json] [...]
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "gemmlab/builtin.hpp"
#include "gemmlab/cuda.hpp"
#include "gemmlab/launch_counts.hpp"
#include "gemmlab/setup.hpp"
#include "gemmlab/validate.hpp"

namespace {

using namespace gemmlab;

std::unique_ptr<Device> open_simulated_h100() {
  Backend& cuda = registry().backend("cuda");
  for (const DeviceInfo& d : cuda.devices())
    if (d.name == "sim-sm_90a") return cuda.open(d.index);
  return nullptr;
}

double count_of(const Device& device, const std::string& name) {
  for (const auto& [counted, value] : last_launch_counts(device))
    if (counted == name) return value;
  return 0;
}

void kernel_rate(benchmark::State& state, const Kernel* kernel) {
  const auto device = open_simulated_h100();
  if (!device) {
    state.SkipWithError("no simulated sim-sm_90a device in this build");
    return;
  }
  dynamic_cast<cuda::SimulatedDevice&>(*device).set_host_threads(1);
  const std::int64_t size = state.range(0);
  const Precision precision = kernel->precisions().front();
  const Problem p = Problem::packed(size, size, size, precision);
  const Config config = kernel->default_config(device->info(), precision);
  HostCase host(p, 1);
  auto a = device->allocate(host.a().size()), b = device->allocate(host.b().size());
  auto c = device->allocate(host.c_initial().size());
  device->upload(*a, host.a().data(), host.a().size());
  device->upload(*b, host.b().data(), host.b().size());
  device->upload(*c, host.c_initial().data(), host.c_initial().size());
  const auto executable = kernel->prepare(*device, p, config);
  const Operands operands{a->data(), b->data(), c->data()};
  executable->run(operands);
  HostBuffer<std::byte> result(host.c_initial().size());
  device->download(result.data(), *c, result.size());
  const auto truth = open_fp64_truth();
  host.compute_expected(truth.get());
  if (const ValidationResult v = host.check(result.data()); !v.valid) {
    state.SkipWithError(("wrong C: " + v.reason).c_str());
    return;
  }
  for (auto _ : state) executable->run(operands);
  const double thread_instructions = count_of(*device, "thread_instructions");
  state.counters["thread_instructions_per_s"] =
      benchmark::Counter(thread_instructions, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["warp_instructions_per_s"] =
      benchmark::Counter(count_of(*device, "warp_instructions"), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(to_string(precision)) + " [" + to_string(config) + "]");
}

}  // namespace

int main(int argc, char** argv) {
  for (const Kernel* kernel : registry().kernels("cuda"))
    benchmark::RegisterBenchmark(std::string(kernel->name()).c_str(), kernel_rate, kernel)
        ->Arg(256)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(2);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
