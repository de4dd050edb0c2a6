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

Timing time_runs(Device& device, const Problem& problem, const std::function<void()>& launch,
                 const MeasureOptions& options) {
  Timing t;
  t.measurement = measure([&] { return device.time_once(launch); }, options);
  t.gflops = gflops(problem, t.measurement.median_s);
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
  if (e.validation.valid)
    e.kernel = time_runs(device, problem, [&] { executable->run(operands.view()); }, options.measure);
  if (timed_reference != nullptr) {
    e.reference_name = timed_reference->name();
    e.reference = time_runs(device, problem,
                            [&] { timed_reference->gemm(problem, operands.view()); },
                            options.measure);
    if (e.kernel && e.reference->gflops > 0) e.ratio_to_reference = e.kernel->gflops / e.reference->gflops;
  }
  return e;
}

}  // namespace gemmlab
