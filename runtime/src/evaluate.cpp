#include "gemmlab/evaluate.hpp"

#include <vector>

namespace gemmlab {

double gflops(const Problem& problem, double seconds) {
  return seconds > 0 ? problem.flops() / seconds * 1e-9 : 0.0;
}

namespace {
// Device copies of a HostCase's operands.
struct DeviceOperands {
  std::unique_ptr<DeviceBuffer> a, b, c;
  Operands view() { return {a->data(), b->data(), c->data()}; }
};

DeviceOperands upload(Device& device, const HostCase& host) {
  DeviceOperands d;
  d.a = device.allocate(host.a().size());
  d.b = device.allocate(host.b().size());
  d.c = device.allocate(host.c_initial().size());
  device.upload(*d.a, host.a().data(), host.a().size());
  device.upload(*d.b, host.b().data(), host.b().size());
  device.upload(*d.c, host.c_initial().data(), host.c_initial().size());
  return d;
}

Timing timing(const Problem& problem, Measurement m) {
  Timing t;
  t.gflops = gflops(problem, m.median_s);
  t.measurement = std::move(m);
  return t;
}
}  // namespace

Evaluation evaluate(Device& device, const Kernel& kernel, const Config& config,
                    const Problem& problem, Reference* truth_fp64, Reference* timed_reference,
                    const EvaluationOptions& options) {
  validate(problem);
  auto executable = kernel.prepare(device, problem, config);
  HostCase host(problem, options.seed);
  DeviceOperands operands = upload(device, host);

  executable->run(operands.view());
  device.synchronize();
  HostBuffer<std::byte> result(host.c_initial().size());
  device.download(result.data(), *operands.c, result.size());
  host.compute_expected(truth_fp64);

  Evaluation e;
  e.validation = host.check(result.data());
  if (!options.time) return e;
  auto run_kernel = [&] { return device.time_once([&] { executable->run(operands.view()); }); };
  if (timed_reference == nullptr) {
    if (e.validation.valid) e.kernel = timing(problem, measure(run_kernel, options.measure));
    return e;
  }
  e.reference_name = timed_reference->name();
  auto run_reference = [&] {
    return device.time_once([&] { timed_reference->gemm(problem, operands.view()); });
  };
  if (!e.validation.valid) {
    e.reference = timing(problem, measure(run_reference, options.measure));
    return e;
  }
  // Alternating samples: a drift of the machine's speed cannot bias the ratio.
  auto [kernel_m, reference_m] = measure_interleaved(run_kernel, run_reference, options.measure);
  e.kernel = timing(problem, std::move(kernel_m));
  e.reference = timing(problem, std::move(reference_m));
  if (e.reference->gflops > 0) e.ratio_to_reference = e.kernel->gflops / e.reference->gflops;
  return e;
}

}  // namespace gemmlab
