#include "gemmlab/evaluate.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace gemmlab {

double gflops(const Problem& problem, double seconds) {
  return seconds > 0 ? problem.flops() / seconds * 1e-9 : 0.0;
}

// Device copies of a HostCase's operands.
struct Evaluator::DeviceOperands {
  std::unique_ptr<DeviceBuffer> a, b, c;
  Operands view() { return {a->data(), b->data(), c->data()}; }
};

namespace {
// Power readings taken between timed runs, at most every 20 ms (a reading costs a driver call,
// and the board's own averaging window is longer than that anyway).
class PowerSamples {
 public:
  explicit PowerSamples(Device& device) : device_(device) {}
  void sample() {
    if (unavailable_) return;  // a device without readings costs the timing loop nothing more
    const auto now = std::chrono::steady_clock::now();
    if (!watts_.empty() && now - last_ < std::chrono::milliseconds(20)) return;
    const auto reading = device_.read_power();
    if (!reading) {
      unavailable_ = watts_.empty();
      return;
    }
    last_ = now;
    watts_.push_back(reading->watts);
    if (reading->temperature_c) hottest_ = std::max(hottest_.value_or(*reading->temperature_c), *reading->temperature_c);
  }
  void into(Timing& t) const {
    if (watts_.empty()) return;
    t.watts = summarize(watts_).median_s;  // the median of the readings
    t.temperature_c = hottest_;
  }

 private:
  Device& device_;
  std::vector<double> watts_;
  std::optional<double> hottest_;
  std::chrono::steady_clock::time_point last_;
  bool unavailable_ = false;
};

// A device whose timings never vary is measured by one run, without warm-up or settling.
MeasureOptions for_device(const Device& device, MeasureOptions options) {
  if (!device.deterministic_timing()) return options;
  options.warmup = 0;
  options.min_repetitions = options.max_repetitions = 1;
  options.settle_seconds = options.block_seconds = 0;
  return options;
}

Timing timing(const Problem& problem, Measurement m, const PowerSamples* power = nullptr) {
  Timing t;
  t.gflops = gflops(problem, m.median_s);
  t.measurement = std::move(m);
  if (power != nullptr) power->into(t);
  return t;
}
}  // namespace

Evaluator::Evaluator(Device& device, const Problem& problem, Reference* truth_fp64, std::uint64_t seed)
    : device_(device), truth_(truth_fp64), host_(problem, seed), operands_(std::make_unique<DeviceOperands>()) {
  operands_->a = device.allocate(host_.a().size());
  operands_->b = device.allocate(host_.b().size());
  operands_->c = device.allocate(host_.c_initial().size());
  device.upload(*operands_->a, host_.a().data(), host_.a().size());
  device.upload(*operands_->b, host_.b().data(), host_.b().size());
}

Evaluator::~Evaluator() = default;

Evaluation Evaluator::run(const Kernel& kernel, const Config& config, Reference* timed_reference,
                          const EvaluationOptions& given) {
  const Problem& problem = host_.problem();
  EvaluationOptions options = given;
  options.measure = for_device(device_, given.measure);
  auto executable = kernel.prepare(device_, problem, config);
  // C as it was before any kernel touched it: values (beta != 0) or poison, guard zone poisoned.
  device_.upload(*operands_->c, host_.c_initial().data(), host_.c_initial().size());
  executable->run(operands_->view());
  device_.synchronize();
  HostBuffer<std::byte> result(host_.c_initial().size());
  device_.download(result.data(), *operands_->c, result.size());
  compute_truth();

  Evaluation e;
  e.validation = host_.check(result.data());
  if (!options.time) return e;
  PowerSamples kernel_power(device_), reference_power(device_);
  auto run_kernel = [&] {
    const double seconds = device_.time_once([&] { executable->run(operands_->view()); });
    kernel_power.sample();
    return seconds;
  };
  if (e.validation.valid && options.abort_above_s > 0) {
    const double first = run_kernel();
    if (first > options.abort_above_s) {
      e.aborted = true;
      e.kernel = timing(problem, summarize({first}));
      return e;
    }
  }
  if (timed_reference == nullptr) {
    if (e.validation.valid) e.kernel = timing(problem, measure(run_kernel, options.measure), &kernel_power);
    return e;
  }
  e.reference_name = timed_reference->name();
  if (!e.validation.valid) {
    e.reference = time_reference(*timed_reference, options.measure);
    return e;
  }
  auto run_reference = [&] {
    const double seconds = device_.time_once([&] { timed_reference->gemm(problem, operands_->view()); });
    reference_power.sample();
    return seconds;
  };
  // Alternating samples: a drift of the machine's speed cannot bias the ratio.
  auto [kernel_m, reference_m] = measure_interleaved(run_kernel, run_reference, options.measure);
  e.kernel = timing(problem, std::move(kernel_m), &kernel_power);
  e.reference = timing(problem, std::move(reference_m), &reference_power);
  if (e.reference->gflops > 0) e.ratio_to_reference = e.kernel->gflops / e.reference->gflops;
  return e;
}

void Evaluator::compute_truth() {
  if (expected_ready_) return;
  host_.compute_expected(truth_);
  expected_ready_ = true;
}

Timing Evaluator::time_reference(Reference& reference, const MeasureOptions& given) {
  const Problem& problem = host_.problem();
  const MeasureOptions options = for_device(device_, given);
  PowerSamples power(device_);
  auto run_once = [&] {
    const double seconds = device_.time_once([&] { reference.gemm(problem, operands_->view()); });
    power.sample();
    return seconds;
  };
  return timing(problem, measure(run_once, options), &power);
}

std::vector<Timing> Evaluator::time_together(const std::vector<std::pair<const Kernel*, Config>>& candidates,
                                             const MeasureOptions& given) {
  const Problem& problem = host_.problem();
  const MeasureOptions options = for_device(device_, given);
  std::vector<std::unique_ptr<Executable>> executables;
  std::vector<std::function<double()>> runs;
  for (const auto& [kernel, config] : candidates) {
    executables.push_back(kernel->prepare(device_, problem, config));
    Executable* executable = executables.back().get();
    runs.push_back([this, executable] { return device_.time_once([&] { executable->run(operands_->view()); }); });
  }
  std::vector<Timing> timings;
  for (Measurement& m : measure_round_robin(runs, options)) timings.push_back(timing(problem, std::move(m)));
  return timings;
}

Evaluation evaluate(Device& device, const Kernel& kernel, const Config& config,
                    const Problem& problem, Reference* truth_fp64, Reference* timed_reference,
                    const EvaluationOptions& options) {
  validate(problem);
  return Evaluator(device, problem, truth_fp64, options.seed).run(kernel, config, timed_reference, options);
}

}  // namespace gemmlab
