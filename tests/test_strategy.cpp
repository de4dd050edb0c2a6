// Search domains, the search context (budget, no repetition, best), and every strategy on
// synthetic spaces with a known optimum.
#include <algorithm>
#include <set>

#include "gemmlab/strategy.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

// 3 parameters x 8 values with one constraint: a smooth bowl with its minimum at (5, 2, 6) and a
// region (A == 7) where every configuration fails.
SearchSpace bowl_space() {
  SearchSpace s;
  s.add("A", int_range(0, 7), "").add("B", int_range(0, 7), "").add("C", int_range(0, 7), "");
  s.require("A + B + C <= 16");
  return s;
}

Objective bowl_objective(const SearchDomain& d, int* calls = nullptr) {
  return [&d, calls](std::size_t candidate) {
    if (calls) ++*calls;
    const Config c = d.config(candidate);
    Observation o;
    if (c.at("A") == 7) {
      o.status = Status::failed;
      o.reason = "A == 7 crashes";
      return o;
    }
    const auto sq = [](ParamValue x) { return static_cast<double>(x * x); };
    o.status = Status::ok;
    o.time_s = 1.0 + sq(c.at("A") - 5) + 2 * sq(c.at("B") - 2) + 0.5 * sq(c.at("C") - 6);
    return o;
  };
}

TEST(SearchDomain, HoldsExactlyTheValidSpaceAndMapsBothWays) {
  const SearchSpace s = bowl_space();
  const SearchDomain d(s);
  ASSERT_EQ(d.size(), s.valid_size());
  for (std::size_t i = 0; i < d.size(); ++i) {
    EXPECT_TRUE(s.is_valid(d.config(i)));
    EXPECT_EQ(d.find(d.config(i)), i);
    EXPECT_EQ(d.find(d.point(i)), i);
  }
  EXPECT_FALSE(d.find(Config{{"A", 7}, {"B", 7}, {"C", 7}}).has_value()) << "violates the constraint";
  EXPECT_FALSE(d.find(Config{{"A", 1}}).has_value());
}

TEST(SearchDomain, NeighboursAgreeWithTheSearchSpace) {
  const SearchSpace s = bowl_space();
  const SearchDomain d(s);
  for (std::size_t i = 0; i < d.size(); i += 37)
    for (auto kind : {SearchSpace::Neighbourhood::adjacent, SearchSpace::Neighbourhood::any}) {
      std::set<Config> from_domain, from_space;
      for (std::size_t n : d.neighbours(i, kind)) from_domain.insert(d.config(n));
      for (const Config& c : s.neighbours(d.config(i), kind)) from_space.insert(c);
      EXPECT_EQ(from_domain, from_space) << to_string(d.config(i));
    }
}

TEST(SearchDomain, NearestRepairsAPointOutsideTheDomain) {
  const SearchDomain d(bowl_space());
  const Point outside{7, 7, 7};  // A+B+C = 21 > 16
  ASSERT_FALSE(d.find(outside).has_value());
  const Config repaired = d.config(d.nearest(outside));
  int differing = (repaired.at("A") != 7) + (repaired.at("B") != 7) + (repaired.at("C") != 7);
  EXPECT_EQ(differing, 1) << "one parameter moved is enough: " << to_string(repaired);
  EXPECT_EQ(repaired.at("A") + repaired.at("B") + repaired.at("C"), 16) << to_string(repaired);
}

TEST(SearchDomain, FromRecordedConfigurationsRejectsDuplicatesAndUnknownValues) {
  const std::vector<Parameter> params{{"X", {1, 2, 4}, ""}, {"Y", {8, 16}, ""}};
  const SearchDomain d(params, {{{"X", 1}, {"Y", 8}}, {{"X", 4}, {"Y", 16}}});
  EXPECT_EQ(d.size(), 2u);
  EXPECT_EQ(d.config(1), (Config{{"X", 4}, {"Y", 16}}));
  EXPECT_THROW_CONTAINING(SearchDomain(params, {{{"X", 1}, {"Y", 8}}, {{"X", 1}, {"Y", 8}}}), ConfigError, {"twice"});
  EXPECT_THROW_CONTAINING(SearchDomain(params, {{{"X", 3}, {"Y", 8}}}), ConfigError, {"X=3"});
  EXPECT_THROW_CONTAINING(SearchDomain(params, {{{"X", 1}}}), ConfigError, {"Y"});
}

TEST(SearchContext, SpendsTheBudgetOnceAndNeverRepeats) {
  const SearchDomain d(bowl_space());
  int calls = 0;
  SearchContext ctx(d, bowl_objective(d, &calls), {.evaluations = 10}, 1);
  const auto first = ctx.evaluate(3);
  ASSERT_TRUE(first.has_value());
  const auto again = ctx.evaluate(3);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(calls, 1) << "a repeated candidate must not be evaluated again";
  EXPECT_EQ(ctx.evaluations(), 1u);
  EXPECT_EQ(again->time_s, first->time_s);
  for (std::size_t c = 10; ctx.evaluate(c); ++c) {}
  EXPECT_EQ(ctx.evaluations(), 10u);
  EXPECT_EQ(calls, 10);
  EXPECT_TRUE(ctx.done());
  EXPECT_FALSE(ctx.evaluate(100).has_value()) << "nothing is evaluated past the budget";
}

TEST(SearchContext, AFailureCountsAgainstTheBudgetAndCannotBecomeTheBest) {
  const SearchDomain d(bowl_space());
  SearchContext ctx(d, bowl_objective(d), {.evaluations = 5}, 1);
  const auto failing = d.find(Config{{"A", 7}, {"B", 0}, {"C", 0}});
  ASSERT_TRUE(failing.has_value());
  const auto o = ctx.evaluate(*failing);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->status, Status::failed);
  EXPECT_EQ(ctx.evaluations(), 1u);
  EXPECT_EQ(ctx.best(), nullptr);
  ctx.evaluate(*d.find(Config{{"A", 0}, {"B", 0}, {"C", 0}}));
  ASSERT_NE(ctx.best(), nullptr);
  EXPECT_EQ(ctx.best()->status, Status::ok);
}

TEST(SearchContext, IsDoneWhenEveryCandidateWasEvaluated) {
  const std::vector<Parameter> params{{"X", {1, 2, 3}, ""}};
  const SearchDomain d(params, {{{"X", 1}}, {{"X", 2}}, {{"X", 3}}});
  SearchContext ctx(d, [](std::size_t c) { return Observation{c, Status::ok, 1.0 + double(c), ""}; }, {.evaluations = 100}, 7);
  std::set<std::size_t> seen;
  while (auto c = ctx.random_unevaluated()) {
    EXPECT_TRUE(seen.insert(*c).second);
    ctx.evaluate(*c);
  }
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_TRUE(ctx.done());
}

TEST(SearchContext, AStandInIsTheWorstSuccessfulTimeSoFarUntilItsResultArrives) {
  const SearchDomain d(bowl_space());
  std::vector<std::size_t> in_flight;
  AsyncObjective objective{.slots = 3,
                           .submit = [&](std::size_t c) { in_flight.push_back(c); },
                           .collect = [&] {
                             const std::size_t c = in_flight.front();
                             in_flight.erase(in_flight.begin());
                             Observation o = bowl_objective(d)(c);
                             o.candidate = c;
                             return o;
                           }};
  SearchContext ctx(d, objective, {.evaluations = 10}, 1);
  const std::size_t a = *d.find(Config{{"A", 5}, {"B", 2}, {"C", 6}});  // time 1
  const std::size_t b = *d.find(Config{{"A", 0}, {"B", 0}, {"C", 0}});  // time 1 + 25 + 8 + 18 = 52
  const std::size_t c = *d.find(Config{{"A", 7}, {"B", 0}, {"C", 0}});  // fails
  const std::size_t e = *d.find(Config{{"A", 4}, {"B", 2}, {"C", 6}});  // time 2
  auto first = ctx.evaluate(a);
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->pending);
  EXPECT_EQ(first->status, Status::failed) << "nothing has succeeded yet: the stand-in is a failure";
  EXPECT_EQ(ctx.best(), nullptr);
  ctx.evaluate(b);
  EXPECT_EQ(ctx.in_flight(), 2u);
  ctx.evaluate(c);  // the third slot: a is collected
  EXPECT_EQ(ctx.in_flight(), 2u);
  ASSERT_NE(ctx.best(), nullptr);
  EXPECT_EQ(ctx.best()->candidate, a);
  EXPECT_EQ(ctx.history()[0].time_s, 1.0);
  auto stand_in = ctx.evaluate(e);  // submitted while b is in flight: a's time is the worst known
  ASSERT_TRUE(stand_in);
  EXPECT_EQ(stand_in->status, Status::ok);
  EXPECT_EQ(stand_in->time_s, 1.0);
  EXPECT_TRUE(ctx.evaluate(e)->pending) << "asked again while in flight: its stand-in";
  const std::size_t f = *d.find(Config{{"A", 1}, {"B", 1}, {"C", 1}});
  auto after_b = ctx.evaluate(f);  // b (52 s) arrived when e took the last slot
  EXPECT_EQ(after_b->time_s, 52.0);
  ctx.finish();
  EXPECT_EQ(ctx.in_flight(), 0u);
  EXPECT_EQ(ctx.history()[1].time_s, 52.0);
  EXPECT_EQ(ctx.history()[2].status, Status::failed);
  EXPECT_EQ(ctx.history()[3].time_s, 2.0);
  EXPECT_FALSE(ctx.history()[4].pending);
  EXPECT_EQ(ctx.best()->candidate, a);
}

TEST(Strategies, UnknownNameIsAnErrorListingTheStrategies) {
  EXPECT_THROW_CONTAINING(make_strategy("magic"), ConfigError, {"magic", "random", "genetic"});
  EXPECT_NO_THROW(make_strategy(default_strategy_name()));
}

class EveryStrategy : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryStrategy, RespectsTheBudgetNeverRepeatsAndStaysInTheDomain) {
  const SearchSpace s = bowl_space();
  const SearchDomain d(s);
  for (std::size_t budget : {1u, 17u, 60u}) {
    int calls = 0;
    SearchContext ctx(d, bowl_objective(d, &calls), {.evaluations = budget}, 3);
    make_strategy(GetParam())->search(ctx);
    EXPECT_EQ(ctx.evaluations(), budget) << GetParam() << " stopped early";
    EXPECT_EQ(static_cast<std::size_t>(calls), budget) << GetParam() << " exceeded or repeated";
    std::set<std::size_t> seen;
    for (const auto& o : ctx.history()) {
      EXPECT_TRUE(seen.insert(o.candidate).second) << GetParam() << " evaluated a candidate twice";
      EXPECT_TRUE(s.is_valid(d.config(o.candidate))) << GetParam() << " left the valid space";
    }
  }
}

TEST_P(EveryStrategy, ASeededRunIsReproducible) {
  const SearchDomain d(bowl_space());
  auto run = [&](std::uint64_t seed) {
    SearchContext ctx(d, bowl_objective(d), {.evaluations = 40}, seed);
    make_strategy(GetParam())->search(ctx);
    std::vector<std::size_t> order;
    for (const auto& o : ctx.history()) order.push_back(o.candidate);
    return order;
  };
  EXPECT_EQ(run(11), run(11));
  if (GetParam() != "exhaustive") {
    EXPECT_NE(run(11), run(12)) << "the seed has no effect";
  }
}

TEST_P(EveryStrategy, HintsNeverChangeTheSearchAndMostlyComeTrue) {
  const SearchDomain d(bowl_space());
  auto run = [&](bool listen, std::vector<std::size_t>* hinted) {
    SearchContext ctx(d, bowl_objective(d), {.evaluations = 40}, 11);
    if (listen) ctx.set_lookahead([&](std::size_t c) { hinted->push_back(c); });
    make_strategy(GetParam())->search(ctx);
    std::vector<std::size_t> order;
    for (const auto& o : ctx.history()) order.push_back(o.candidate);
    return order;
  };
  std::vector<std::size_t> hinted;
  const auto order = run(true, &hinted);
  EXPECT_EQ(order, run(false, nullptr)) << "a look-ahead listener changed what was evaluated";
  if (GetParam() == "exhaustive" || GetParam() == "local" || GetParam() == "bayesian") {
    ASSERT_FALSE(hinted.empty()) << GetParam() << " gives no hints";
    const std::set<std::size_t> evaluated(order.begin(), order.end()), distinct(hinted.begin(), hinted.end());
    std::size_t came_true = 0;
    for (std::size_t c : distinct) came_true += evaluated.count(c);
    if (GetParam() == "exhaustive") {
      EXPECT_GE(came_true + 4, distinct.size()) << "exhaustive knows its next candidates exactly";
    }
    EXPECT_GT(came_true, 0u);
  }
}

TEST_P(EveryStrategy, FindsTheKnownOptimumInMostSeededRuns) {
  const SearchDomain d(bowl_space());
  const std::size_t optimum = *d.find(Config{{"A", 5}, {"B", 2}, {"C", 6}});
  // Budget: a third of the space (random search then succeeds in about a third of the runs);
  // exhaustive gets the whole space.
  const std::size_t budget = GetParam() == "exhaustive" ? d.size() : d.size() / 3;
  int found = 0;
  const int runs = 20;
  for (int seed = 1; seed <= runs; ++seed) {
    SearchContext ctx(d, bowl_objective(d), {.evaluations = budget}, static_cast<std::uint64_t>(seed));
    make_strategy(GetParam())->search(ctx);
    found += ctx.best() != nullptr && ctx.best()->candidate == optimum;
  }
  const int required = GetParam() == "random" ? 3 : runs * 3 / 4;
  EXPECT_GE(found, required) << GetParam() << " found the optimum in " << found << " of " << runs
                             << " runs with " << budget << " of " << d.size() << " evaluations";
}

// The bowl's objective, evaluated asynchronously: submitted candidates finish in the order given
// by `finish_order` ("fifo": first in, first out; "lifo": the newest first), as on ranks that
// take different times.
struct AsyncBowl {
  AsyncBowl(const SearchDomain& d, std::size_t slot_count, std::string order = "fifo")
      : domain(d), finish_order(std::move(order)), slots(slot_count) {}
  const SearchDomain& domain;
  std::string finish_order;
  std::size_t slots;
  std::vector<std::size_t> in_flight;
  std::size_t most_in_flight = 0, collected = 0;
  AsyncObjective objective() {
    return {.slots = slots,
            .submit = [this](std::size_t c) {
              in_flight.push_back(c);
              most_in_flight = std::max(most_in_flight, in_flight.size());
            },
            .collect = [this] {
              const auto at = finish_order == "fifo" ? in_flight.begin() : in_flight.end() - 1;
              const std::size_t c = *at;
              in_flight.erase(at);
              ++collected;
              Observation o = bowl_objective(domain)(c);
              o.candidate = c;
              return o;
            }};
  }
};

std::vector<std::size_t> order_of(const SearchContext& ctx) {
  std::vector<std::size_t> order;
  for (const auto& o : ctx.history()) order.push_back(o.candidate);
  return order;
}

TEST_P(EveryStrategy, OneSlotAsynchronouslyIsTheSameSearchAsThePlainObjective) {
  const SearchDomain d(bowl_space());
  SearchContext plain(d, bowl_objective(d), {.evaluations = 40}, 7);
  make_strategy(GetParam())->search(plain);
  AsyncBowl bowl(d, 1);
  SearchContext one_slot(d, bowl.objective(), {.evaluations = 40}, 7);
  make_strategy(GetParam())->search(one_slot);
  EXPECT_EQ(one_slot.in_flight(), 0u) << "one slot waits for every result";
  EXPECT_EQ(order_of(one_slot), order_of(plain));
  ASSERT_NE(plain.best(), nullptr);
  EXPECT_EQ(one_slot.best()->candidate, plain.best()->candidate);
}

TEST_P(EveryStrategy, SeveralSlotsKeepThemBusyAndEveryResultReplacesItsStandIn) {
  const SearchDomain d(bowl_space());
  for (const std::string order : {"fifo", "lifo"}) {
    AsyncBowl bowl(d, 4, order);
    SearchContext ctx(d, bowl.objective(), {.evaluations = 50}, 5);
    make_strategy(GetParam())->search(ctx);
    ctx.finish();
    EXPECT_EQ(ctx.in_flight(), 0u);
    EXPECT_EQ(ctx.evaluations(), 50u) << GetParam() << " " << order;
    EXPECT_EQ(bowl.collected, 50u) << "every submitted candidate evaluated once";
    EXPECT_EQ(bowl.most_in_flight, 4u) << GetParam() << ": the slots were not all used";
    std::set<std::size_t> seen;
    const Objective truth = bowl_objective(d);
    const Observation* best = nullptr;
    for (const auto& o : ctx.history()) {
      EXPECT_TRUE(seen.insert(o.candidate).second) << "evaluated twice";
      EXPECT_FALSE(o.pending);
      EXPECT_EQ(o.status, truth(o.candidate).status);
      EXPECT_EQ(o.time_s, truth(o.candidate).time_s) << "a stand-in was left in the history";
      if (o.status == Status::ok && (best == nullptr || o.time_s < best->time_s)) best = &o;
    }
    ASSERT_NE(ctx.best(), nullptr);
    EXPECT_EQ(ctx.best()->time_s, best->time_s) << "the best is the best real result";
  }
}

INSTANTIATE_TEST_SUITE_P(Tuner, EveryStrategy, ::testing::ValuesIn(strategy_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace gemmlab
