// The search strategies. Each is one class: it sees only the SearchContext (evaluate, budget,
// history, random numbers) and the domain's encoded points, so it runs unchanged on live kernels
// and on recorded spaces.
#include <algorithm>
#include <cmath>
#include <deque>

#include "gemmlab/strategy.hpp"

namespace gemmlab {
namespace {

// How many upcoming candidates a strategy announces (SearchContext::hint): enough to keep a few
// compile threads busy while one configuration is timed.
constexpr std::size_t lookahead = 4;

// Every candidate in order: the reference for small spaces.
class Exhaustive final : public Strategy {
 public:
  std::string name() const override { return "exhaustive"; }
  void search(SearchContext& ctx) override {
    for (std::size_t c = 0; c < ctx.domain().size() && !ctx.done(); ++c) {
      for (std::size_t next = c + 1; next < std::min(ctx.domain().size(), c + 1 + lookahead); ++next) ctx.hint(next);
      ctx.evaluate(c);
    }
  }
};

// Uniform sampling without repetition: the baseline every other strategy must beat.
class RandomSearch final : public Strategy {
 public:
  std::string name() const override { return "random"; }
  void search(SearchContext& ctx) override {
    while (!ctx.done())
      if (auto c = ctx.random_unevaluated()) ctx.evaluate(*c);
      else return;
  }
};

// Iterated local search: first-improvement descent over one-parameter moves (adjacent values
// first, then any value), and from a local optimum a restart at a random unevaluated candidate.
class IteratedLocalSearch final : public Strategy {
 public:
  std::string name() const override { return "local"; }
  void search(SearchContext& ctx) override {
    while (!ctx.done()) {
      auto start = ctx.random_unevaluated();
      if (!start) return;
      auto current = ctx.evaluate(*start);
      if (!current) return;
      if (current->pending) {  // several in flight: the descent starts from a known time
        ctx.finish();
        current = ctx.observation(current->candidate);
      }
      descend(ctx, *current);
    }
  }

 private:
  // With several evaluations in flight, the moves are submitted one after another while their
  // results are pending; once a neighbourhood is submitted, the descent waits for them and takes
  // the best move that improves (with one in flight, the first improvement ends the scan first).
  static void descend(SearchContext& ctx, Observation current) {
    bool improved = true;
    while (improved && !ctx.done()) {
      improved = false;
      for (auto kind : {SearchSpace::Neighbourhood::adjacent, SearchSpace::Neighbourhood::any}) {
        std::vector<std::size_t> moves = ctx.domain().neighbours(current.candidate, kind);
        std::shuffle(moves.begin(), moves.end(), ctx.rng());
        for (std::size_t i = 0; i < moves.size(); ++i) {
          const std::size_t m = moves[i];
          if (ctx.evaluated(m)) continue;
          for (std::size_t j = i + 1; j < std::min(moves.size(), i + 1 + lookahead); ++j) ctx.hint(moves[j]);
          auto o = ctx.evaluate(m);
          if (!o) return;
          if (!o->pending && SearchContext::cost(*o) < SearchContext::cost(current)) {
            current = *o;
            improved = true;
            break;
          }
        }
        if (improved) break;
        if (ctx.in_flight() > 0) {
          ctx.finish();
          for (std::size_t m : moves)
            if (ctx.evaluated(m) && SearchContext::cost(ctx.observation(m)) < SearchContext::cost(current)) {
              current = ctx.observation(m);
              improved = true;
            }
          if (improved) break;
        }
      }
    }
  }
};

// Simulated annealing over one-parameter moves. A worse move is accepted with probability
// exp(-(relative slowdown) / T); T falls geometrically from 0.3 to 0.005 over the budget, so the
// walk explores first and settles later. Failed candidates are never accepted.
class SimulatedAnnealing final : public Strategy {
 public:
  std::string name() const override { return "annealing"; }
  // With several evaluations in flight, each move is decided when its result arrives, oldest
  // first; meanwhile the walk proposes further moves from where it stands.
  void search(SearchContext& ctx) override {
    auto start = ctx.random_unevaluated();
    if (!start) return;
    auto current = ctx.evaluate(*start);
    if (!current) return;
    if (current->pending) {
      ctx.finish();
      current = ctx.observation(current->candidate);
    }
    const double planned = static_cast<double>(std::max<std::size_t>(ctx.remaining() + ctx.evaluations(), 2));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    struct Move {
      std::size_t candidate;
      bool jump;  // nothing new was left nearby
    };
    std::deque<Move> undecided;
    while (!ctx.done()) {
      std::vector<std::size_t> moves = ctx.domain().neighbours(current->candidate, SearchSpace::Neighbourhood::any);
      moves.erase(std::remove_if(moves.begin(), moves.end(), [&](std::size_t m) { return ctx.evaluated(m); }),
                  moves.end());
      std::optional<std::size_t> next;
      if (!moves.empty()) next = moves[std::uniform_int_distribution<std::size_t>(0, moves.size() - 1)(ctx.rng())];
      else next = ctx.random_unevaluated();  // nothing new nearby: jump
      if (!next) return;
      if (!ctx.evaluate(*next)) return;
      undecided.push_back({*next, moves.empty()});
      while (!undecided.empty() && !ctx.observation(undecided.front().candidate).pending) {
        const Move move = undecided.front();
        undecided.pop_front();
        const Observation& o = ctx.observation(move.candidate);
        const double progress = static_cast<double>(ctx.evaluations()) / planned;
        const double temperature = 0.3 * std::pow(0.005 / 0.3, std::min(1.0, progress));
        const double now = SearchContext::cost(*current), proposed = SearchContext::cost(o);
        if (proposed <= now || move.jump) {
          if (std::isfinite(proposed) || !std::isfinite(now)) current = o;
        } else if (std::isfinite(proposed) && unit(ctx.rng()) < std::exp(-(proposed / now - 1.0) / temperature)) {
          current = o;
        }
      }
    }
  }
};

// Genetic algorithm: a population of candidates; tournament selection, uniform crossover of the
// encoded points, mutation of each parameter with probability 1/parameters; a child outside the
// domain is repaired to the nearest candidate, one already evaluated is mutated again or replaced
// by a random unevaluated candidate.
class Genetic final : public Strategy {
 public:
  std::string name() const override { return "genetic"; }
  void search(SearchContext& ctx) override {
    const SearchDomain& d = ctx.domain();
    std::vector<Observation> population;
    for (std::size_t i = 0; i < population_size && !ctx.done(); ++i)
      if (auto c = ctx.random_unevaluated())
        if (auto o = ctx.evaluate(*c)) population.push_back(*o);
    if (population.empty()) return;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const double mutation = 1.0 / static_cast<double>(std::max<std::size_t>(1, d.parameters().size()));
    while (!ctx.done()) {
      // The results that arrived since (several evaluations in flight) replace their stand-ins.
      for (Observation& o : population) o = ctx.observation(o.candidate);
      std::vector<Observation> next;
      std::sort(population.begin(), population.end(),
                [](const Observation& a, const Observation& b) { return SearchContext::cost(a) < SearchContext::cost(b); });
      next.insert(next.end(), population.begin(), population.begin() + std::min<std::size_t>(elite, population.size()));
      while (next.size() < population.size() && !ctx.done()) {
        const Point& a = d.point(tournament(ctx, population).candidate);
        const Point& b = d.point(tournament(ctx, population).candidate);
        Point child(a.size());
        for (std::size_t i = 0; i < a.size(); ++i) child[i] = unit(ctx.rng()) < 0.5 ? a[i] : b[i];
        std::optional<std::size_t> candidate;
        for (int attempt = 0; attempt < 8 && !candidate; ++attempt) {
          for (std::size_t i = 0; i < child.size(); ++i)
            if (unit(ctx.rng()) < mutation)
              child[i] = static_cast<std::uint16_t>(std::uniform_int_distribution<std::size_t>(
                  0, d.parameters()[i].values.size() - 1)(ctx.rng()));
          const std::size_t repaired = d.nearest(child);
          if (!ctx.evaluated(repaired)) candidate = repaired;
        }
        if (!candidate) candidate = ctx.random_unevaluated();
        if (!candidate) return;
        if (auto o = ctx.evaluate(*candidate)) next.push_back(*o);
      }
      population = std::move(next);
    }
  }

 private:
  static constexpr std::size_t population_size = 20, elite = 2;
  static const Observation& tournament(SearchContext& ctx, const std::vector<Observation>& population) {
    std::uniform_int_distribution<std::size_t> pick(0, population.size() - 1);
    const Observation& x = population[pick(ctx.rng())];
    const Observation& y = population[pick(ctx.rng())];
    return SearchContext::cost(x) <= SearchContext::cost(y) ? x : y;
  }
};

// Model-based search with a multivariate tree-structured Parzen estimator (TPE), as Optuna's
// TPESampler(multivariate=True), whose candidates include the local-search neighbourhood.
//
// After a few random evaluations, the successful observations are split into the best tenth
// ("good") and the rest (failures included). Each group gives a density over configurations: a
// mixture with one component per observation plus a uniform one (the prior). A component is a
// product over parameters of a discrete Gaussian over the value index: the value lists are
// ordered, so a good tile size makes the next size up or down plausible too, and the product
// keeps the parameters together, so the density sees interactions (a tile size that is good only
// with a matching thread-block shape) that per-parameter densities average away. The candidates
// are draws from the good density l and every one-parameter move away from a good configuration
// (the moves of local search); the one with the highest l/g, TPE's stand-in for the expected
// improvement, is evaluated next. Draws keep the model exploring; the moves let it refine the
// good configurations without leaving it to chance that a draw lands next to them.
class Parzen final : public Strategy {
 public:
  std::string name() const override { return "bayesian"; }
  void search(SearchContext& ctx) override {
    const std::size_t initial = std::min<std::size_t>(initial_random, ctx.remaining());
    for (std::size_t i = 0; i < initial && !ctx.done(); ++i)
      if (auto c = ctx.random_unevaluated()) ctx.evaluate(*c);
    while (!ctx.done()) {
      std::optional<std::size_t> next = best_candidate(ctx);
      if (!next) next = ctx.random_unevaluated();
      if (!next) return;
      ctx.evaluate(*next);
    }
  }

 private:
  // hyperopt's start: enough random configurations for a first split into good and other.
  static constexpr std::size_t initial_random = 20;
  // The uniform component weighs as much as one observation (Optuna's and hyperopt's default).
  static constexpr double prior_weight = 1.0;
  // Kernel width 0.2 x (number of values) x n^(-1/(d+4)): Optuna's multivariate rule (Scott's).
  static constexpr double sigma0 = 0.2;
  // Draws from l per step (Optuna: 24): scoring is cheap, and more draws sharpen the pick.
  static constexpr std::size_t draws = 64;
  // Bound on draws rejected (outside the domain or already evaluated) per kept one.
  static constexpr std::size_t tries_per_draw = 16;

  // Optuna's split: the best 10% of the successful observations, at most 25, at least 1.
  static std::size_t good_count(std::size_t successes) {
    return std::clamp<std::size_t>((successes + 9) / 10, 1, 25);
  }

  // One group's density: log kernel tables per parameter and the observations it is built from.
  struct Mixture {
    std::vector<std::vector<double>> log_kernel;  // [parameter][centre index * values + value]
    std::vector<std::size_t> centres;             // candidates
    double log_prior = 0;                         // log(prior weight x uniform density on the grid)
  };

  static Mixture mixture(const SearchDomain& d, const std::vector<std::size_t>& active,
                         std::vector<std::size_t> centres) {
    Mixture m;
    m.centres = std::move(centres);
    const double n = static_cast<double>(std::max<std::size_t>(1, m.centres.size()));
    const double shrink = std::pow(n, -1.0 / (static_cast<double>(active.size()) + 4.0));  // Scott's rule
    m.log_kernel.resize(d.parameters().size());
    m.log_prior = std::log(prior_weight);
    for (std::size_t i : active) {
      const std::size_t values = d.parameters()[i].values.size();
      const double sigma = sigma0 * static_cast<double>(values) * shrink;
      m.log_prior -= std::log(static_cast<double>(values));
      std::vector<double>& table = m.log_kernel[i];
      table.resize(values * values);
      for (std::size_t a = 0; a < values; ++a) {
        double total = 0;
        for (std::size_t v = 0; v < values; ++v) {
          const double z = (static_cast<double>(v) - static_cast<double>(a)) / sigma;
          table[a * values + v] = -0.5 * z * z;
          total += std::exp(table[a * values + v]);
        }
        for (std::size_t v = 0; v < values; ++v) table[a * values + v] -= std::log(total);
      }
    }
    return m;
  }

  // log density of `p` under `m` (log-sum-exp over the components).
  static double log_density(const SearchDomain& d, const std::vector<std::size_t>& active, const Mixture& m,
                            const Point& p, std::vector<double>& terms) {
    terms.assign(1, m.log_prior);
    for (std::size_t c : m.centres) {
      const Point& centre = d.point(c);
      double s = 0;
      for (std::size_t i : active) s += m.log_kernel[i][centre[i] * d.parameters()[i].values.size() + p[i]];
      terms.push_back(s);
    }
    const double top = *std::max_element(terms.begin(), terms.end());
    double sum = 0;
    for (double t : terms) sum += std::exp(t - top);
    return top + std::log(sum) - std::log(static_cast<double>(m.centres.size()) + prior_weight);
  }

  static std::optional<std::size_t> best_candidate(SearchContext& ctx) {
    const SearchDomain& d = ctx.domain();
    std::vector<std::size_t> active;  // parameters with a choice; the others add nothing
    for (std::size_t i = 0; i < d.parameters().size(); ++i)
      if (d.parameters()[i].values.size() > 1) active.push_back(i);

    std::vector<const Observation*> sorted;
    for (const auto& o : ctx.history()) sorted.push_back(&o);
    std::stable_sort(sorted.begin(), sorted.end(), [](const Observation* a, const Observation* b) {
      return SearchContext::cost(*a) < SearchContext::cost(*b);
    });
    std::size_t successes = 0;
    for (const auto* o : sorted) successes += o->status == Status::ok;
    if (successes == 0) return std::nullopt;  // nothing to model yet
    std::vector<std::size_t> good, other;
    const std::size_t want_good = good_count(successes);
    for (const auto* o : sorted)
      (good.size() < want_good && o->status == Status::ok ? good : other).push_back(o->candidate);
    const Mixture l = mixture(d, active, good), g = mixture(d, active, std::move(other));

    // Candidates: draws from l (a component at random, then every parameter from its kernel; the
    // uniform component is a random unevaluated candidate), kept when in the domain and new ...
    std::vector<std::size_t> candidates;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::uniform_int_distribution<std::size_t> pick(0, good.size() - 1);
    const double p_prior = prior_weight / (static_cast<double>(good.size()) + prior_weight);
    Point p(d.parameters().size(), 0);
    for (std::size_t attempt = 0; attempt < tries_per_draw * draws && candidates.size() < draws; ++attempt) {
      if (unit(ctx.rng()) < p_prior) {
        if (auto c = ctx.random_unevaluated()) candidates.push_back(*c);
        continue;
      }
      const Point& centre = d.point(good[pick(ctx.rng())]);
      for (std::size_t i : active) {
        const std::size_t values = d.parameters()[i].values.size();
        double u = unit(ctx.rng());
        std::size_t v = 0;
        while (v + 1 < values && (u -= std::exp(l.log_kernel[i][centre[i] * values + v])) >= 0) ++v;
        p[i] = static_cast<std::uint16_t>(v);
      }
      if (auto c = d.find(p); c && !ctx.evaluated(*c)) candidates.push_back(*c);
    }
    // ... and the unevaluated one-parameter moves from every good configuration.
    for (std::size_t c : good)
      for (std::size_t m : d.neighbours(c, SearchSpace::Neighbourhood::any))
        if (!ctx.evaluated(m)) candidates.push_back(m);
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

    std::optional<std::size_t> best;
    double best_score = -std::numeric_limits<double>::infinity();
    std::vector<double> terms;
    std::vector<std::pair<double, std::size_t>> runners_up;  // for the look-ahead
    for (std::size_t c : candidates) {
      const double score =
          log_density(d, active, l, d.point(c), terms) - log_density(d, active, g, d.point(c), terms);
      if (score > best_score) best_score = score, best = c;
      runners_up.emplace_back(-score, c);
    }
    // The next best-scoring candidates are the likeliest picks of the next steps.
    const std::size_t hints = std::min(runners_up.size(), lookahead + 1);
    std::partial_sort(runners_up.begin(), runners_up.begin() + static_cast<std::ptrdiff_t>(hints), runners_up.end());
    for (std::size_t i = 1; i < hints; ++i) ctx.hint(runners_up[i].second);
    return best;
  }
};

}  // namespace

std::vector<std::string> strategy_names() {
  return {"exhaustive", "random", "annealing", "genetic", "local", "bayesian"};
}

std::string default_strategy_name() { return "bayesian"; }

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  if (name == "exhaustive") return std::make_unique<Exhaustive>();
  if (name == "random") return std::make_unique<RandomSearch>();
  if (name == "annealing") return std::make_unique<SimulatedAnnealing>();
  if (name == "genetic") return std::make_unique<Genetic>();
  if (name == "local") return std::make_unique<IteratedLocalSearch>();
  if (name == "bayesian") return std::make_unique<Parzen>();
  std::string known;
  for (const auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError("unknown strategy '" + name + "'; strategies: " + known);
}

}  // namespace gemmlab
