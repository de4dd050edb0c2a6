// Search strategies and what they search.
//
// A strategy sees a SearchDomain — the finite list of valid configurations, each encoded as the
// index of its value in every parameter's value list — and asks a SearchContext to evaluate
// candidates. The context spends the budget, refuses to evaluate anything twice, and remembers
// the best. The same strategies therefore run on a live kernel (the domain is the kernel's valid
// space, the objective runs it) and on a recorded space (the domain is the recorded
// configurations, the objective looks their time up), and a new strategy is one class.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "gemmlab/space.hpp"

namespace gemmlab {

// A configuration as value indices, one per parameter in the domain's parameter order.
using Point = std::vector<std::uint16_t>;

class SearchDomain {
 public:
  // The valid space of `space`.
  explicit SearchDomain(const SearchSpace& space);
  // An explicit list of configurations (a recorded space); each must give every parameter one of
  // its values. Throws ConfigError otherwise.
  SearchDomain(std::vector<Parameter> parameters, const std::vector<Config>& configs);

  const std::vector<Parameter>& parameters() const { return parameters_; }
  std::size_t size() const { return points_.size(); }
  const Point& point(std::size_t candidate) const { return points_[candidate]; }
  Config config(std::size_t candidate) const;
  // Candidate index of a point or configuration, if it is in the domain.
  std::optional<std::size_t> find(const Point& point) const;
  std::optional<std::size_t> find(const Config& config) const;
  // Candidates differing from `candidate` in exactly one parameter (adjacent value, or any).
  std::vector<std::size_t> neighbours(std::size_t candidate, SearchSpace::Neighbourhood kind) const;
  // The candidate closest to `point`: fewest differing parameters, then the smallest sum of
  // index distances (ties: the lower candidate index). For repairing recombined points.
  std::size_t nearest(const Point& point) const;

 private:
  void index_points();
  std::vector<Parameter> parameters_;
  std::vector<Point> points_;
  std::unordered_map<std::string, std::size_t> lookup_;  // encoded point -> candidate
};

// aborted: valid, but its first timed run was so slow that it was not measured further.
enum class Status { ok, invalid, failed, aborted };
std::string_view to_string(Status s);
// "ok", "invalid", "failed", "aborted"; throws std::invalid_argument naming them for anything else.
Status parse_status(std::string_view text);

struct Observation {
  std::size_t candidate = 0;
  Status status = Status::failed;
  double time_s = std::numeric_limits<double>::infinity();  // finite when ok or aborted
  std::string reason;  // why invalid or failed
  // Still being evaluated (several evaluations in flight): a stand-in until the result arrives
  // and replaces it in the history (see SearchContext::evaluate).
  bool pending = false;
};

// Evaluates one candidate (runs the kernel, or looks a recorded time up).
using Objective = std::function<Observation(std::size_t candidate)>;

// Evaluates candidates several at a time (on MPI ranks; simulated by replay --parallel).
struct AsyncObjective {
  std::size_t slots = 1;  // evaluations in flight at most
  std::function<void(std::size_t candidate)> submit;
  // Waits until one submitted candidate's evaluation is done and returns its observation
  // (candidate set).
  std::function<Observation()> collect;
};

struct Budget {
  std::size_t evaluations = 100;
  double seconds = 0;  // wall-clock limit; 0 = none
};

// With an AsyncObjective of several slots, evaluate() hands the candidate to a free slot and
// returns at once with a stand-in observation, the "constant liar" of batch Bayesian
// optimisation: the worst successful time observed so far (or a failure while none succeeded).
// Strategies so propose the next candidates away from those in flight, and each real result
// replaces its stand-in in history() as it arrives. evaluate() waits only while every slot is
// busy; with one slot it waits for the result itself, so a search is the same as with the plain
// Objective. Strategies that act on one result at a time (local search, annealing, genetic)
// decide on a candidate only once its real result is known (observation()), and wait (finish())
// where they cannot go on without it.
class SearchContext {
 public:
  SearchContext(const SearchDomain& domain, Objective objective, Budget budget, std::uint64_t seed);
  SearchContext(const SearchDomain& domain, AsyncObjective objective, Budget budget, std::uint64_t seed);

  const SearchDomain& domain() const { return domain_; }
  std::mt19937_64& rng() { return rng_; }

  // Evaluates `candidate` unless the budget is spent (nullopt). A candidate already evaluated
  // costs nothing and returns its first observation (its stand-in while still in flight).
  std::optional<Observation> evaluate(std::size_t candidate);
  // The same for a starting point (TuneOptions::start_with: the kernel's default and the tiles it
  // names), evaluated while the evaluation budget lasts whatever the time limit: a search that
  // time cuts short still ends no worse than its starting points.
  std::optional<Observation> evaluate_start(std::size_t candidate);
  // Waits for every evaluation still in flight: a strategy that needs their results before it
  // goes on, and the tuner once the strategy is done.
  void finish();
  std::size_t in_flight() const { return in_flight_; }
  // What is known of an evaluated candidate now: its result, or its stand-in while in flight.
  const Observation& observation(std::size_t candidate) const { return history_.at(seen_.at(candidate)); }
  bool evaluated(std::size_t candidate) const { return seen_[candidate] != unseen; }
  // No evaluation left: budget spent or every candidate evaluated.
  bool done() const;
  std::size_t evaluations() const { return history_.size(); }
  std::size_t remaining() const;
  // A uniformly random candidate not yet evaluated (nullopt when none is left).
  std::optional<std::size_t> random_unevaluated();

  // Look-ahead: a strategy that knows candidates it is likely to evaluate soon says so, and the
  // tuner prepares them meanwhile (compiles the kernel for them on other threads). A hint never
  // changes what is evaluated, and strategies give hints without drawing random numbers, so a
  // seeded search is the same with or without a listener.
  void hint(std::size_t candidate) const {
    if (lookahead_ && !evaluated(candidate)) lookahead_(candidate);
  }
  void set_lookahead(std::function<void(std::size_t candidate)> listener) { lookahead_ = std::move(listener); }

  const std::vector<Observation>& history() const { return history_; }
  // Best successful observation so far (null when none succeeded).
  const Observation* best() const { return best_ < history_.size() ? &history_[best_] : nullptr; }
  // The cost strategies minimise: the time when ok, the one timed run when aborted (a known slow
  // configuration), +infinity when invalid or failed (so a failure steers the search away from
  // where it happened).
  static double cost(const Observation& o) {
    return o.status == Status::ok || o.status == Status::aborted ? o.time_s : std::numeric_limits<double>::infinity();
  }

 private:
  static constexpr std::size_t unseen = static_cast<std::size_t>(-1);
  const SearchDomain& domain_;
  Budget budget_;
  std::mt19937_64 rng_;
  // Records a finished evaluation in place of its stand-in.
  void absorb(Observation o);
  std::optional<Observation> evaluate(std::size_t candidate, bool time_limited);
  Observation stand_in(std::size_t candidate) const;

  AsyncObjective async_;
  std::size_t in_flight_ = 0;
  double worst_ok_s_ = -1;  // worst successful time so far (-1: none)
  std::chrono::steady_clock::time_point start_;
  std::function<void(std::size_t)> lookahead_;
  std::vector<std::size_t> seen_;  // candidate -> history index
  std::vector<Observation> history_;
  std::size_t best_ = unseen;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // Searches until ctx.done() or the strategy has nothing left to try.
  virtual void search(SearchContext& ctx) = 0;
};

// "exhaustive", "random", "annealing", "genetic", "local", "bayesian" (TPE); throws ConfigError
// naming the known strategies for any other name.
std::unique_ptr<Strategy> make_strategy(const std::string& name);
std::vector<std::string> strategy_names();
std::string default_strategy_name();

}  // namespace gemmlab
