// Tuning one kernel on one problem: a strategy walks the kernel's valid space, each configuration
// is prepared, validated against the fp64 truth and timed through the Evaluator (operands and
// truth made once), and the reference library is timed once in the same process for the ratios.
// Evaluations run in this process for now: a configuration that crashes or hangs stops the run
// (the sandboxed worker process is still to come). A configuration far slower than the best so
// far is stopped after its first timed run (early abort).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gemmlab/evaluate.hpp"
#include "gemmlab/strategy.hpp"

namespace gemmlab {

struct TuneOptions {
  std::string strategy = default_strategy_name();
  Budget budget;
  std::uint64_t seed = 1;
  MeasureOptions measure{.warmup = 1, .min_repetitions = 3, .max_repetitions = 50, .max_seconds = 0.3,
                         .target_spread = 0.03};
  // A configuration whose first timed run is slower than this many times the best so far is
  // not measured further and is recorded as aborted (0: never).
  double early_abort_factor = 3.0;
};

struct TuneEntry {
  Config config;
  Status status = Status::failed;
  double gflops = 0;
  double ratio_to_reference = 0;
  double max_rel_error = 0;
  std::string reason;  // invalid / failed
};

struct TuneResult {
  std::vector<TuneEntry> history;  // in evaluation order
  std::optional<TuneEntry> best;
  std::string reference_name;
  double reference_gflops = 0;
  std::size_t space_size = 0;
  std::size_t failed = 0, invalid = 0, aborted = 0;
  // The best `n` successful entries, fastest first.
  std::vector<TuneEntry> top(std::size_t n) const;
};

// Called after every evaluation with the result so far.
using TuneProgress = std::function<void(const TuneResult&, const Budget&)>;

TuneResult tune(Device& device, const Kernel& kernel, const Problem& problem, Reference* truth_fp64,
                Reference* reference, const TuneOptions& options, const TuneProgress& progress = {});

}  // namespace gemmlab
