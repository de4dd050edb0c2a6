#include "gemmlab/evaluate.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
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
  options.min_repetitions = options.max_repetitions = options.min_blocks = 1;
  options.settle_seconds = options.block_seconds = 0;
  return options;
}

// One timed run of `launch` on `device` (as the device times), then a power reading where
// `power` is given: what every side of every measurement here repeats.
std::function<double()> timed(Device& device, std::function<void()> launch, PowerSamples* power) {
  return [&device, launch = std::move(launch), power] {
    const double seconds = device.time_once(launch);
    if (power != nullptr) power->sample();
    return seconds;
  };
}

// What else ran while a device was timed; nothing for a simulated device, whose times other work
// cannot change.
std::optional<MachineLoad> load_while_timed(const Device& device, const LoadMeter& meter) {
  if (device.deterministic_timing()) return std::nullopt;
  return meter.stop();
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
  // C written now too, so that its pages are resident before the first kernel's memory is metered
  // (each configuration writes it again before its first run).
  device.upload(*operands_->c, host_.c_initial().data(), host_.c_initial().size());
}

Evaluator::~Evaluator() = default;

Evaluator::Checked Evaluator::prepare_and_check(const Kernel& kernel, const Config& config) {
  const Problem& problem = host_.problem();
  // The memory the kernel touches beyond its operands while it is prepared and first run: the
  // allocator first returns what earlier evaluations freed, so that reusing it shows as growth.
  const bool meter_memory = device_.buffers_in_host_memory();
  if (meter_memory) release_freed_memory();
  std::optional<ResidentPeakMeter> resident;
  if (meter_memory) resident.emplace();
  Checked checked;
  checked.executable = kernel.prepare(device_, problem, config);
  // C as it was before any kernel touched it: values (beta != 0) or poison, guard zone poisoned.
  device_.upload(*operands_->c, host_.c_initial().data(), host_.c_initial().size());
  checked.first_run_s = wall_seconds([&] {
    checked.executable->run(operands_->view());
    device_.synchronize();
  });
  Evaluation& e = checked.evaluation;
  e.memory.operands_bytes = static_cast<std::int64_t>(operands_->a->bytes() + operands_->b->bytes() + operands_->c->bytes());
  if (resident) e.memory.workspace_bytes = resident->stop();
  HostBuffer<std::byte> result(host_.c_initial().size());
  device_.download(result.data(), *operands_->c, result.size());
  compute_truth();
  e.validation = host_.check(result.data());
  return checked;
}

Evaluation Evaluator::run(const Kernel& kernel, const Config& config, Reference* timed_reference,
                          const EvaluationOptions& given) {
  const Problem& problem = host_.problem();
  EvaluationOptions options = given;
  options.measure = for_device(device_, given.measure);
  Checked checked = prepare_and_check(kernel, config);
  Evaluation& e = checked.evaluation;
  auto& executable = checked.executable;
  if (!options.time) return e;
  const LoadMeter load;  // what else runs while this evaluation is timed
  PowerSamples kernel_power(device_), reference_power(device_);
  const auto run_kernel = timed(device_, [&] { executable->run(operands_->view()); }, &kernel_power);
  if (e.validation.valid && options.abort_above_s > 0) {
    const double first = run_kernel();
    if (first > options.abort_above_s) {
      e.aborted = true;
      e.kernel = timing(problem, summarize({first}));
      e.load = load_while_timed(device_, load);
      return e;
    }
  }
  if (timed_reference == nullptr) {
    if (e.validation.valid) e.kernel = timing(problem, measure(run_kernel, options.measure), &kernel_power);
    e.load = load_while_timed(device_, load);
    return e;
  }
  e.reference_name = timed_reference->name();
  if (!e.validation.valid) {
    e.reference = time_reference(*timed_reference, options.measure);
    e.load = load_while_timed(device_, load);
    return e;
  }
  const auto run_reference = timed(device_, [&] { timed_reference->gemm(problem, operands_->view()); }, &reference_power);
  // Alternating samples: a drift of the machine's speed cannot bias the ratio.
  auto [kernel_m, reference_m] = measure_interleaved(run_kernel, run_reference, options.measure);
  e.kernel = timing(problem, std::move(kernel_m), &kernel_power);
  e.reference = timing(problem, std::move(reference_m), &reference_power);
  if (e.reference->gflops > 0) e.ratio_to_reference = e.kernel->gflops / e.reference->gflops;
  e.load = load_while_timed(device_, load);
  return e;
}

void Evaluator::compute_truth() {
  if (expected_ready_) return;
  host_.compute_expected(truth_);
  expected_ready_ = true;
}

std::vector<Evaluation> Evaluator::run_together(const std::vector<std::pair<const Kernel*, Config>>& candidates,
                                                Reference* timed_reference, const EvaluationOptions& given) {
  const Problem& problem = host_.problem();
  EvaluationOptions options = given;
  options.measure = for_device(device_, given.measure);
  std::vector<Checked> checked;
  std::vector<Evaluation> out(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    try {
      checked.push_back(prepare_and_check(*candidates[i].first, candidates[i].second));
    } catch (const std::exception& error) {  // the kernel refused the problem or configuration
      checked.push_back({});
      checked.back().evaluation.validation = {.valid = false, .max_rel_error = std::numeric_limits<double>::quiet_NaN(),
                                              .tolerance = 0, .reason = error.what()};
    }
  }
  if (!options.time) {
    for (std::size_t i = 0; i < checked.size(); ++i) out[i] = std::move(checked[i].evaluation);
    return out;
  }
  const LoadMeter load;
  // The sides of the round robin: the reference first, then every valid candidate whose first
  // run was not too long (abort_above_s: that run is its one timing).
  std::vector<std::function<double()>> runs;
  std::vector<std::size_t> side_of;  // candidate index of each side after the reference
  std::vector<std::unique_ptr<PowerSamples>> power;
  if (timed_reference != nullptr) {
    power.push_back(std::make_unique<PowerSamples>(device_));
    runs.push_back(timed(device_, [this, &problem, timed_reference] { timed_reference->gemm(problem, operands_->view()); },
                         power.back().get()));
  }
  for (std::size_t i = 0; i < checked.size(); ++i) {
    Checked& c = checked[i];
    if (!c.executable || !c.evaluation.validation.valid) continue;
    if (options.abort_above_s > 0 && c.first_run_s > options.abort_above_s) {
      c.evaluation.aborted = true;
      c.evaluation.kernel = timing(problem, summarize({c.first_run_s}));
      continue;
    }
    power.push_back(std::make_unique<PowerSamples>(device_));
    Executable* executable = c.executable.get();
    runs.push_back(timed(device_, [this, executable] { executable->run(operands_->view()); }, power.back().get()));
    side_of.push_back(i);
  }
  std::vector<Measurement> measured = runs.size() > (timed_reference != nullptr ? 1u : 0u)
                                          ? measure_round_robin(runs, options.measure)
                                          : std::vector<Measurement>{};
  const std::optional<MachineLoad> machine = load_while_timed(device_, load);
  const std::size_t first_kernel = timed_reference != nullptr ? 1 : 0;
  std::optional<Timing> reference;
  if (timed_reference != nullptr && !measured.empty()) reference = timing(problem, measured[0], power[0].get());
  for (std::size_t side = 0; side < side_of.size(); ++side) {
    Evaluation& e = checked[side_of[side]].evaluation;
    e.kernel = timing(problem, std::move(measured[first_kernel + side]), power[first_kernel + side].get());
  }
  for (std::size_t i = 0; i < checked.size(); ++i) {
    Evaluation& e = checked[i].evaluation;
    e.load = machine;
    if (timed_reference != nullptr) {
      e.reference_name = timed_reference->name();
      e.reference = reference;
      if (e.kernel && !e.aborted && reference && reference->gflops > 0) e.ratio_to_reference = e.kernel->gflops / reference->gflops;
    }
    out[i] = std::move(e);
  }
  return out;
}

Timing Evaluator::time_reference(Reference& reference, const MeasureOptions& given) {
  const Problem& problem = host_.problem();
  const MeasureOptions options = for_device(device_, given);
  PowerSamples power(device_);
  const auto run_once = timed(device_, [&] { reference.gemm(problem, operands_->view()); }, &power);
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
    runs.push_back(timed(device_, [this, executable] { executable->run(operands_->view()); }, nullptr));
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
