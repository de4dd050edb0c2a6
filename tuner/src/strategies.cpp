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

}  // namespace

std::vector<std::string> strategy_names() { return {"exhaustive", "random", "annealing", "genetic", "local"}; }

std::string default_strategy_name() { return "local"; }

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  if (name == "exhaustive") return std::make_unique<Exhaustive>();
  if (name == "random") return std::make_unique<RandomSearch>();
  if (name == "annealing") return std::make_unique<SimulatedAnnealing>();
  if (name == "genetic") return std::make_unique<Genetic>();
  if (name == "local") return std::make_unique<IteratedLocalSearch>();
  std::string known;
  for (const auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError("unknown strategy '" + name + "'; strategies: " + known);
}

}  // namespace gemmlab
