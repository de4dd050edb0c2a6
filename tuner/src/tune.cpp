#include "gemmlab/tune.hpp"

#include <algorithm>

namespace gemmlab {

std::vector<TuneEntry> TuneResult::top(std::size_t n) const {
  std::vector<TuneEntry> ok;
  for (const auto& e : history)
    if (e.status == Status::ok) ok.push_back(e);
  std::stable_sort(ok.begin(), ok.end(), [](const TuneEntry& a, const TuneEntry& b) { return a.gflops > b.gflops; });
  if (ok.size() > n) ok.resize(n);
  return ok;
}

TuneResult tune(Device& device, const Kernel& kernel, const Problem& problem, Reference* truth_fp64,
                Reference* reference, const TuneOptions& options, const TuneProgress& progress) {
  if (auto s = kernel.supported(device.info()); !s.ok) throw Unsupported(std::string(kernel.name()) + ": " + s.reason);
  const SearchDomain domain(kernel.space(device.info(), problem.precision));
  auto strategy = make_strategy(options.strategy);
  Evaluator evaluator(device, problem, truth_fp64, options.seed);

  TuneResult result;
  result.space_size = domain.size();
  if (reference != nullptr) {
    result.reference_name = reference->name();
    result.reference_gflops = evaluator.time_reference(*reference, options.measure).gflops;
  }

  auto objective = [&](std::size_t candidate) {
    TuneEntry entry;
    entry.config = domain.config(candidate);
    Observation o;
    try {
      EvaluationOptions run{.seed = options.seed, .time = true, .measure = options.measure};
      if (options.early_abort_factor > 0 && result.best)
        run.abort_above_s = options.early_abort_factor * problem.flops() / (result.best->gflops * 1e9);
      const Evaluation e = evaluator.run(kernel, entry.config, nullptr, run);
      entry.max_rel_error = e.validation.max_rel_error;
      if (e.aborted) {
        entry.status = o.status = Status::aborted;
        o.time_s = e.kernel->measurement.median_s;
        entry.gflops = e.kernel->gflops;  // from its single run
        if (result.reference_gflops > 0) entry.ratio_to_reference = entry.gflops / result.reference_gflops;
        entry.reason = o.reason = "first run slower than " + std::to_string(options.early_abort_factor) + "x the best";
      } else if (!e.validation.valid) {
        entry.status = o.status = Status::invalid;  // a wrong result can never become the best
        entry.reason = o.reason = e.validation.reason;
      } else {
        entry.status = o.status = Status::ok;
        o.time_s = e.kernel->measurement.median_s;
        entry.gflops = e.kernel->gflops;
        if (result.reference_gflops > 0) entry.ratio_to_reference = entry.gflops / result.reference_gflops;
      }
    } catch (const std::exception& error) {  // the kernel refused to build or run this one
      entry.status = o.status = Status::failed;
      entry.reason = o.reason = error.what();
    }
    result.failed += entry.status == Status::failed;
    result.invalid += entry.status == Status::invalid;
    result.aborted += entry.status == Status::aborted;
    if (entry.status == Status::ok && (!result.best || entry.gflops > result.best->gflops)) result.best = entry;
    result.history.push_back(std::move(entry));
    if (progress) progress(result, options.budget);
    return o;
  };
  SearchContext ctx(domain, objective, options.budget, options.seed);
  strategy->search(ctx);
  return result;
}

}  // namespace gemmlab
