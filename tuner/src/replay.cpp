#include "gemmlab/replay.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

namespace gemmlab {

namespace {
std::vector<Config> configs_of(const Record& r) {
  std::vector<Config> configs;
  for (const auto& e : r.entries) configs.push_back(e.config);
  return configs;
}
}  // namespace

RecordedSpace::RecordedSpace(const Record& record)
    : domain_(record.parameters, configs_of(record)), outcomes_(record.entries.size()) {
  optimum_s_ = record.best().time_ms * 1e-3;
  for (std::size_t i = 0; i < record.entries.size(); ++i) {
    const RecordEntry& e = record.entries[i];
    Observation& o = outcomes_[*domain_.find(e.config)];
    o.status = e.ok ? Status::ok : Status::failed;
    o.time_s = e.ok ? e.time_ms * 1e-3 : INFINITY;
    o.reason = e.failure;
  }
}

Objective RecordedSpace::objective() const {
  return [this](std::size_t candidate) { return outcomes_[candidate]; };
}

ReplaySummary replay(const RecordedSpace& space, const std::string& strategy, const ReplayOptions& options) {
  std::vector<std::size_t> checkpoints;
  for (std::size_t b : {25u, 50u, 100u, 200u})
    if (b < options.budget) checkpoints.push_back(b);
  checkpoints.push_back(options.budget);

  ReplaySummary s;
  s.strategy = strategy;
  s.runs = options.runs;
  std::map<std::size_t, std::vector<double>> fractions;
  double evals_sum = 0;
  for (int run = 0; run < options.runs; ++run) {
    std::deque<std::size_t> in_flight;  // finishing first in, first out
    const Objective lookup = space.objective();
    const AsyncObjective objective{.slots = std::max<std::size_t>(1, options.parallel),
                                   .submit = [&](std::size_t candidate) { in_flight.push_back(candidate); },
                                   .collect = [&] {
                                     const std::size_t candidate = in_flight.front();
                                     in_flight.pop_front();
                                     Observation o = lookup(candidate);
                                     o.candidate = candidate;
                                     return o;
                                   }};
    SearchContext ctx(space.domain(), objective, {.evaluations = options.budget},
                      options.seed + static_cast<std::uint64_t>(run));
    make_strategy(strategy)->search(ctx);
    ctx.finish();
    // Best time after each evaluation.
    double best = INFINITY;
    std::vector<double> best_after;
    for (const auto& o : ctx.history()) {
      best = std::min(best, SearchContext::cost(o));
      best_after.push_back(best);
    }
    for (std::size_t b : checkpoints) {
      const double found = best_after.empty() ? INFINITY : best_after[std::min(b, best_after.size()) - 1];
      fractions[b].push_back(std::isfinite(found) ? space.optimum_s() / found : 0.0);
    }
    for (std::size_t i = 0; i < best_after.size(); ++i)
      if (best_after[i] <= 1.05 * space.optimum_s()) {
        evals_sum += static_cast<double>(i + 1);
        ++s.runs_within_5pct;
        break;
      }
  }
  for (const auto& [b, values] : fractions) {
    double mean = 0, square = 0;
    for (double v : values) mean += v;
    mean /= static_cast<double>(values.size());
    for (double v : values) square += (v - mean) * (v - mean);
    s.mean_fraction[b] = mean;
    s.spread_fraction[b] = values.size() > 1 ? std::sqrt(square / static_cast<double>(values.size() - 1)) : 0.0;
  }
  s.mean_evals_to_within_5pct = s.runs_within_5pct > 0 ? evals_sum / s.runs_within_5pct : 0.0;
  return s;
}

}  // namespace gemmlab
