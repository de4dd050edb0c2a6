// The search strategies. Each is one class: it sees only the SearchContext (evaluate, budget,
// history, random numbers) and the domain's encoded points, so it runs unchanged on live kernels
// and on recorded spaces.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "gemmlab/strategy.hpp"

namespace gemmlab {
namespace {

// Every candidate in order: the reference for small spaces.
class Exhaustive final : public Strategy {
 public:
  std::string name() const override { return "exhaustive"; }
  void search(SearchContext& ctx) override {
    for (std::size_t c = 0; c < ctx.domain().size() && !ctx.done(); ++c) ctx.evaluate(c);
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
      descend(ctx, *current);
    }
  }

 private:
  static void descend(SearchContext& ctx, Observation current) {
    bool improved = true;
    while (improved && !ctx.done()) {
      improved = false;
      for (auto kind : {SearchSpace::Neighbourhood::adjacent, SearchSpace::Neighbourhood::any}) {
        std::vector<std::size_t> moves = ctx.domain().neighbours(current.candidate, kind);
        std::shuffle(moves.begin(), moves.end(), ctx.rng());
        for (std::size_t m : moves) {
          if (ctx.evaluated(m)) continue;
          auto o = ctx.evaluate(m);
          if (!o) return;
          if (SearchContext::cost(*o) < SearchContext::cost(current)) {
            current = *o;
            improved = true;
            break;
          }
        }
        if (improved) break;
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
  void search(SearchContext& ctx) override {
    auto start = ctx.random_unevaluated();
    if (!start) return;
    auto current = ctx.evaluate(*start);
    if (!current) return;
    const double planned = static_cast<double>(std::max<std::size_t>(ctx.remaining() + ctx.evaluations(), 2));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    while (!ctx.done()) {
      std::vector<std::size_t> moves = ctx.domain().neighbours(current->candidate, SearchSpace::Neighbourhood::any);
      moves.erase(std::remove_if(moves.begin(), moves.end(), [&](std::size_t m) { return ctx.evaluated(m); }),
                  moves.end());
      std::optional<std::size_t> next;
      if (!moves.empty()) next = moves[std::uniform_int_distribution<std::size_t>(0, moves.size() - 1)(ctx.rng())];
      else next = ctx.random_unevaluated();  // nothing new nearby: jump
      if (!next) return;
      auto o = ctx.evaluate(*next);
      if (!o) return;
      const double progress = static_cast<double>(ctx.evaluations()) / planned;
      const double temperature = 0.3 * std::pow(0.005 / 0.3, std::min(1.0, progress));
      const double now = SearchContext::cost(*current), proposed = SearchContext::cost(*o);
      if (proposed <= now || moves.empty()) {
        if (std::isfinite(proposed) || !std::isfinite(now)) current = o;
      } else if (std::isfinite(proposed) && unit(ctx.rng()) < std::exp(-(proposed / now - 1.0) / temperature)) {
        current = o;
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

// Model-based search with a tree-structured Parzen estimator (TPE). After a few random
// evaluations, the observations are split into the best quarter ("good") and the rest (failures
// included); for every parameter, a density over its values is estimated from each group, with
// each observation spread over neighbouring values (the value lists are ordered, so a good tile
// size makes the next size up or down plausible too). Every unevaluated candidate is scored by
// sum over parameters of log(good density / other density), and the best-scoring one is evaluated
// next; now and then a random candidate instead, so the model keeps being tested. The densities
// treat parameters independently: cheap enough to score every candidate at every step.
class Parzen final : public Strategy {
 public:
  std::string name() const override { return "bayesian"; }
  void search(SearchContext& ctx) override {
    const std::size_t initial = std::min<std::size_t>(initial_random, ctx.remaining());
    for (std::size_t i = 0; i < initial && !ctx.done(); ++i)
      if (auto c = ctx.random_unevaluated()) ctx.evaluate(*c);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    while (!ctx.done()) {
      std::optional<std::size_t> next;
      if (unit(ctx.rng()) >= explore) next = best_scoring(ctx);
      if (!next) next = ctx.random_unevaluated();
      if (!next) return;
      ctx.evaluate(*next);
    }
  }

 private:
  static constexpr std::size_t initial_random = 20;
  static constexpr double explore = 0.1, good_fraction = 0.25, prior_weight = 1.0;

  // log(good density / other density) for every value of every parameter.
  static std::vector<std::vector<double>> log_ratios(const SearchContext& ctx) {
    const SearchDomain& d = ctx.domain();
    std::vector<const Observation*> sorted;
    for (const auto& o : ctx.history()) sorted.push_back(&o);
    std::stable_sort(sorted.begin(), sorted.end(), [](const Observation* a, const Observation* b) {
      return SearchContext::cost(*a) < SearchContext::cost(*b);
    });
    std::size_t successes = 0;
    for (const auto* o : sorted) successes += o->status == Status::ok;
    const std::size_t good = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(good_fraction * static_cast<double>(successes))));
    std::vector<std::vector<double>> ratios(d.parameters().size());
    for (std::size_t i = 0; i < d.parameters().size(); ++i) {
      const std::size_t values = d.parameters()[i].values.size();
      std::vector<double> in_good(values, prior_weight / static_cast<double>(values)), in_other(in_good);
      const double width = std::max(0.5, static_cast<double>(values) / 8.0);  // spread in value steps
      for (std::size_t k = 0; k < sorted.size(); ++k) {
        std::vector<double>& density = k < good && sorted[k]->status == Status::ok ? in_good : in_other;
        const double at = d.point(sorted[k]->candidate)[i];
        double total = 0;
        std::vector<double> spread(values);
        for (std::size_t v = 0; v < values; ++v) total += spread[v] = std::exp(-0.5 * std::pow((static_cast<double>(v) - at) / width, 2));
        for (std::size_t v = 0; v < values; ++v) density[v] += spread[v] / total;
      }
      const double sum_good = std::accumulate(in_good.begin(), in_good.end(), 0.0);
      const double sum_other = std::accumulate(in_other.begin(), in_other.end(), 0.0);
      ratios[i].resize(values);
      for (std::size_t v = 0; v < values; ++v) ratios[i][v] = std::log(in_good[v] / sum_good) - std::log(in_other[v] / sum_other);
    }
    return ratios;
  }

  static std::optional<std::size_t> best_scoring(SearchContext& ctx) {
    const SearchDomain& d = ctx.domain();
    const auto ratios = log_ratios(ctx);
    std::optional<std::size_t> best;
    double best_score = -std::numeric_limits<double>::infinity();
    std::size_t ties = 0;
    for (std::size_t c = 0; c < d.size(); ++c) {
      if (ctx.evaluated(c)) continue;
      const Point& p = d.point(c);
      double score = 0;
      for (std::size_t i = 0; i < p.size(); ++i) score += ratios[i][p[i]];
      if (score > best_score) {
        best_score = score, best = c, ties = 1;
      } else if (score == best_score && std::uniform_int_distribution<std::size_t>(0, ties++)(ctx.rng()) == 0) {
        best = c;  // uniform among equal scores
      }
    }
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
