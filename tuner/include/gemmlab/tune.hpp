// Tuning one kernel on one problem: a strategy walks the kernel's valid space, and a
// ConfigurationRunner evaluates each configuration it picks — prepared, validated against the
// fp64 truth and timed through the Evaluator (operands and truth made once) — with the reference
// library timed once on the same device for the ratios. The runner is either this process
// (InProcessRunner: fast, for tests and trusted kernels) or a sandboxed worker process
// (WorkerRunner in worker.hpp: a crash, hang or memory exhaustion costs one failed configuration).
// A configuration far slower than the best so far is stopped after its first timed run (early
// abort).
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gemmlab/evaluate.hpp"
#include "gemmlab/result.hpp"
#include "gemmlab/results_cache.hpp"
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
  // Per-configuration time limit of a sandboxed evaluation: this many times the wall time the
  // evaluation of the best configuration so far took, and never less than timeout_floor_s (the
  // limit before any configuration succeeded). An in-process runner cannot enforce it.
  double timeout_factor = 10.0;
  double timeout_floor_s = 30.0;
  // Overlap: while one configuration is evaluated, `compile_threads` threads run prepare_ahead
  // (Kernel::prepare_ahead: compile the kernel) for the configurations the strategy expects to
  // evaluate next (SearchContext::hint). 0 or no function: no overlap.
  std::size_t compile_threads = 0;
  std::function<void(const Config&)> prepare_ahead = {};
  // Configurations evaluated before the strategy starts (those in the space; they count against
  // the budget of evaluations, but budget.seconds does not cut them short): the kernel's default,
  // so that tuning never ends worse than it.
  std::vector<Config> start_with = {};
};

// Evaluates configurations of one kernel on one problem, and times the reference once.
class ConfigurationRunner {
 public:
  virtual ~ConfigurationRunner() = default;
  // The reference library's name ("" when there is none) and its GFLOP/s on this problem
  // (timed at the first call; 0 when there is none).
  virtual std::string reference_name() const = 0;
  virtual double reference_gflops() = 0;
  // A configuration whose first timed run is longer than abort_above_s (> 0) is aborted; one
  // that has not answered after timeout_s (> 0, where the runner can enforce it) is failed.
  // The result carries the configuration, its status, time, GFLOP/s, error, reason and power.
  virtual ConfigResult run(const Config& config, double abort_above_s, double timeout_s) = 0;
  // The reference's GFLOP/s timed in alternation with `config` (measure_interleaved), for the
  // final ratios: measured alone at the start, the reference can come out slow (its thread pool
  // still cold, the machine busy), and every ratio would be flattered. 0 when there is none or
  // the measurement failed.
  virtual double reference_gflops_beside(const Config& config, double timeout_s) = 0;
  // How many times the evaluation process had to be restarted (sandboxed runners).
  virtual std::size_t restarts() const { return 0; }

  // Several configurations at a time: up to slots() submitted and not yet collected, each with
  // a ticket of the caller's choosing. A runner that evaluates one at a time keeps the default:
  // collect() runs the oldest submitted configuration through run().
  struct Completion {
    std::size_t ticket = 0;
    ConfigResult result;
    double wall_s = 0;  // how long its evaluation took
  };
  virtual std::size_t slots() const { return 1; }
  virtual void submit(std::size_t ticket, const Config& config, double abort_above_s, double timeout_s);
  // Waits until a submitted configuration is done. Throws std::logic_error when none is in flight.
  virtual Completion collect();

 private:
  struct Submitted {
    std::size_t ticket;
    Config config;
    double abort_above_s, timeout_s;
  };
  std::deque<Submitted> submitted_;
};

// Runs configurations in this process through one Evaluator.
class InProcessRunner final : public ConfigurationRunner {
 public:
  InProcessRunner(Device& device, const Kernel& kernel, const Problem& problem, Reference* truth_fp64,
                  Reference* reference, std::uint64_t seed, const MeasureOptions& measure);
  std::string reference_name() const override;
  double reference_gflops() override;
  ConfigResult run(const Config& config, double abort_above_s, double timeout_s) override;
  double reference_gflops_beside(const Config& config, double timeout_s) override;

 private:
  const Kernel& kernel_;
  Reference* reference_;
  MeasureOptions measure_;
  std::uint64_t seed_;
  Evaluator evaluator_;
  std::optional<double> reference_gflops_;
};

// Where tune() keeps its results: each configuration is looked up under `key` before it is
// evaluated (a hit is reused, except a failure by timeout, which a longer limit might avoid)
// and stored, one transaction each, as soon as it has been evaluated.
struct TuneCache {
  ResultsCache* cache = nullptr;  // null: no cache
  CacheKey key;
};

// The cache key of tuning `kernel` on `problem` on `device`.
CacheKey cache_key(const DeviceInfo& device, const Kernel& kernel, const Problem& problem);

struct TuneResult {
  std::vector<ConfigResult> history;  // in evaluation order
  std::optional<ConfigResult> best;
  std::string reference_name;
  // Timed beside the best configuration at the end (alone at the start until then, and when
  // nothing succeeded); every ratio_to_reference is to it.
  double reference_gflops = 0;
  bool reference_beside_best = false;
  std::size_t space_size = 0;
  std::size_t failed = 0, invalid = 0, aborted = 0;
  std::size_t worker_restarts = 0;
  std::size_t reused_from_cache = 0;
  double seconds = 0;  // wall time of the search
  // Where the search's wall time went in this process (rank 0 under MPI): timing the reference
  // at the start, waiting for results (runner.collect()), committing them to the results cache,
  // and the rest, which is the strategy proposing the next configurations and the cache lookups.
  double reference_seconds = 0, wait_seconds = 0, commit_seconds = 0;
  double proposal_seconds() const {
    return std::max(0.0, seconds - reference_seconds - wait_seconds - commit_seconds);
  }
  double evaluations_per_second() const { return seconds > 0 ? static_cast<double>(history.size()) / seconds : 0; }
  // The best `n` successful entries, fastest first.
  std::vector<ConfigResult> top(std::size_t n) const;
};

// Called after every evaluation with the result so far.
using TuneProgress = std::function<void(const TuneResult&, const Budget&)>;

// Tunes `kernel` over `space` (its valid space on the device) with `runner` evaluating.
TuneResult tune(const SearchSpace& space, const Problem& problem, ConfigurationRunner& runner,
                const TuneOptions& options, const TuneProgress& progress = {}, const TuneCache& cache = {});

// In this process: tune(kernel.space(...), problem, InProcessRunner(...), ...). Throws Unsupported
// when the device cannot run the kernel.
TuneResult tune(Device& device, const Kernel& kernel, const Problem& problem, Reference* truth_fp64,
                Reference* reference, const TuneOptions& options, const TuneProgress& progress = {});

}  // namespace gemmlab
