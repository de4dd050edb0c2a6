#include "gemmlab/tune.hpp"

#include <algorithm>
#include <chrono>

#include "gemmlab/kernel.hpp"

namespace gemmlab {

std::vector<TuneEntry> TuneResult::top(std::size_t n) const {
  std::vector<TuneEntry> ok;
  for (const auto& e : history)
    if (e.status == Status::ok) ok.push_back(e);
  std::stable_sort(ok.begin(), ok.end(), [](const TuneEntry& a, const TuneEntry& b) { return a.gflops > b.gflops; });
  if (ok.size() > n) ok.resize(n);
  return ok;
}

RunOutcome outcome_of(const Evaluation& e) {
  RunOutcome o;
  o.max_rel_error = e.validation.max_rel_error;
  if (!e.validation.valid) {
    o.status = Status::invalid;  // a wrong result can never become the best
    o.reason = e.validation.reason;
    return o;
  }
  o.status = e.aborted ? Status::aborted : Status::ok;
  if (e.kernel) {
    o.time_s = e.kernel->measurement.median_s;
    o.gflops = e.kernel->gflops;
  }
  return o;
}

InProcessRunner::InProcessRunner(Device& device, const Kernel& kernel, const Problem& problem, Reference* truth_fp64,
                                 Reference* reference, std::uint64_t seed, const MeasureOptions& measure)
    : kernel_(kernel), reference_(reference), measure_(measure), seed_(seed), evaluator_(device, problem, truth_fp64, seed) {}

std::string InProcessRunner::reference_name() const { return reference_ != nullptr ? reference_->name() : ""; }

double InProcessRunner::reference_gflops() {
  if (!reference_gflops_) reference_gflops_ = reference_ != nullptr ? evaluator_.time_reference(*reference_, measure_).gflops : 0.0;
  return *reference_gflops_;
}

RunOutcome InProcessRunner::run(const Config& config, double abort_above_s, double) {
  try {
    const EvaluationOptions options{.seed = seed_, .time = true, .measure = measure_, .abort_above_s = abort_above_s};
    return outcome_of(evaluator_.run(kernel_, config, nullptr, options));
  } catch (const std::exception& error) {  // the kernel refused to build or run this one
    return {.status = Status::failed, .reason = error.what()};
  }
}

TuneResult tune(const SearchSpace& space, const Problem& problem, ConfigurationRunner& runner,
                const TuneOptions& options, const TuneProgress& progress) {
  const SearchDomain domain(space);
  auto strategy = make_strategy(options.strategy);

  TuneResult result;
  result.space_size = domain.size();
  result.reference_name = runner.reference_name();
  result.reference_gflops = runner.reference_gflops();
  double best_wall_s = 0;  // wall time the evaluation of the best configuration took

  auto objective = [&](std::size_t candidate) {
    TuneEntry entry;
    entry.config = domain.config(candidate);
    double abort_above_s = 0;
    if (options.early_abort_factor > 0 && result.best)
      abort_above_s = options.early_abort_factor * problem.flops() / (result.best->gflops * 1e9);
    const double timeout_s = std::max(options.timeout_floor_s, options.timeout_factor * best_wall_s);
    const auto start = std::chrono::steady_clock::now();
    const RunOutcome run = runner.run(entry.config, abort_above_s, timeout_s);
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    entry.status = run.status;
    entry.gflops = run.gflops;
    entry.max_rel_error = run.max_rel_error;
    entry.reason = run.reason;
    if (run.status == Status::aborted && entry.reason.empty())
      entry.reason = "first run slower than " + std::to_string(options.early_abort_factor) + "x the best";
    if ((run.status == Status::ok || run.status == Status::aborted) && result.reference_gflops > 0)
      entry.ratio_to_reference = entry.gflops / result.reference_gflops;
    result.failed += entry.status == Status::failed;
    result.invalid += entry.status == Status::invalid;
    result.aborted += entry.status == Status::aborted;
    if (entry.status == Status::ok && (!result.best || entry.gflops > result.best->gflops)) {
      result.best = entry;
      best_wall_s = wall_s;
    }
    result.worker_restarts = runner.restarts();

    Observation o;
    o.status = entry.status;
    o.reason = entry.reason;
    if (entry.status == Status::ok || entry.status == Status::aborted) o.time_s = run.time_s;
    result.history.push_back(std::move(entry));
    if (progress) progress(result, options.budget);
    return o;
  };
  SearchContext ctx(domain, objective, options.budget, options.seed);
  strategy->search(ctx);
  return result;
}

TuneResult tune(Device& device, const Kernel& kernel, const Problem& problem, Reference* truth_fp64,
                Reference* reference, const TuneOptions& options, const TuneProgress& progress) {
  if (auto s = kernel.supported(device.info()); !s.ok) throw Unsupported(std::string(kernel.name()) + ": " + s.reason);
  InProcessRunner runner(device, kernel, problem, truth_fp64, reference, options.seed, options.measure);
  return tune(kernel.space(device.info(), problem.precision), problem, runner, options, progress);
}

}  // namespace gemmlab
