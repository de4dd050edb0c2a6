// Replaying search strategies on a recorded search space: the space is exactly the recorded
// configurations, and "evaluating" one looks its recorded time up. Strategies can so be compared
// deterministically and without the hardware, by the fraction of the optimum they reach
// (best time in the record / best time found) after a number of evaluations.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gemmlab/record.hpp"
#include "gemmlab/strategy.hpp"

namespace gemmlab {

class RecordedSpace {
 public:
  explicit RecordedSpace(const Record& record);
  const SearchDomain& domain() const { return domain_; }
  Objective objective() const;
  double optimum_s() const { return optimum_s_; }

 private:
  SearchDomain domain_;
  std::vector<Observation> outcomes_;  // by candidate
  double optimum_s_ = 0;
};

struct ReplayOptions {
  std::size_t budget = 200;
  int runs = 100;
  std::uint64_t seed = 1;  // run r uses seed + r
  // Evaluations in flight at once, as on that many MPI ranks (SearchContext's constant liar).
  // Each takes the same time, so they finish in the order they were submitted; the fraction of
  // the optimum after N evaluations then counts the first N submitted. 1: one at a time.
  std::size_t parallel = 1;
};

struct ReplaySummary {
  std::string strategy;
  int runs = 0;
  // By number of evaluations (25, 50, 100, 200 where within the budget, and the budget itself):
  // mean and standard deviation over runs of optimum / best found (0 while nothing succeeded).
  std::map<std::size_t, double> mean_fraction, spread_fraction;
  // Over the runs that came within 5% of the optimum: the mean number of evaluations it took.
  double mean_evals_to_within_5pct = 0;
  int runs_within_5pct = 0;
};

ReplaySummary replay(const RecordedSpace& space, const std::string& strategy, const ReplayOptions& options);

}  // namespace gemmlab
