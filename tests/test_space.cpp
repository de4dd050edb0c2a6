// SearchSpace: checking configurations, completing them, sizes, the extremes used by
// verification, and the NAME=VALUE parser.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/space.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

// A space shaped like 05's register tile: MR x NV with the zmm-register constraint.
SearchSpace tile_space() {
  SearchSpace s;
  s.add("MR", {4, 6, 8, 12, 14, 16}, "rows of the micro-tile")
      .add("NV", {1, 2, 3, 4}, "vectors per row");
  s.constrain("MR*NV + NV + 1 <= 32", {"MR", "NV"},
              [](const Config& c) { return c.at("MR") * c.at("NV") + c.at("NV") + 1 <= 32; });
  return s;
}
const Config tile_defaults{{"MR", 14}, {"NV", 2}};

std::string describe(const std::vector<Config>& configs) {
  std::ostringstream out;
  for (const auto& c : configs) out << "{" << to_string(c) << "} ";
  return out.str();
}

TEST(SearchSpaceCheck, AcceptsAConfigurationWithAllowedValuesThatSatisfiesTheConstraints) {
  EXPECT_NO_THROW(tile_space().check(tile_defaults));
  EXPECT_NO_THROW(tile_space().check({{"MR", 4}, {"NV", 4}}));
}

TEST(SearchSpaceCheck, UnknownParameterThrowsNamingItAndTheKnownParameters) {
  Config c = tile_defaults;
  c["FOO"] = 1;
  EXPECT_THROW_MENTIONING(tile_space().check(c), ConfigError, {"FOO", "MR", "NV"});
}

TEST(SearchSpaceCheck, ValueOutsideTheAllowedSetThrowsNamingParameterValueAndAllowedValues) {
  const Config c{{"MR", 5}, {"NV", 2}};
  EXPECT_THROW_MENTIONING(tile_space().check(c), ConfigError, {"MR", "5"});
  EXPECT_THROW_CONTAINING(tile_space().check(c), ConfigError, {"4, 6, 8, 12, 14, 16"});
  const Config d{{"MR", 8}, {"NV", 0}};
  EXPECT_THROW_MENTIONING(tile_space().check(d), ConfigError, {"NV", "0"});
  EXPECT_THROW_CONTAINING(tile_space().check(d), ConfigError, {"1, 2, 3, 4"});
}

TEST(SearchSpaceCheck, ViolatedConstraintThrowsQuotingTheConstraint) {
  const Config c{{"MR", 16}, {"NV", 4}};
  EXPECT_THROW_CONTAINING(tile_space().check(c), ConfigError, {"MR*NV + NV + 1 <= 32", "MR=16", "NV=4"});
}

TEST(SearchSpaceCheck, MissingParameterThrowsNamingIt) {
  EXPECT_THROW_MENTIONING(tile_space().check({{"MR", 8}}), ConfigError, {"NV"});
}

TEST(SearchSpaceCheck, ConfigErrorIsAnInvalidArgument) {
  EXPECT_THROW(tile_space().check({{"MR", 5}, {"NV", 1}}), std::invalid_argument);
}

TEST(SearchSpaceIsValid, AgreesWithCheck) {
  const SearchSpace s = tile_space();
  int valid = 0;
  for (const auto& p0 : s.parameters()[0].values)
    for (const auto& p1 : s.parameters()[1].values) {
      const Config c{{"MR", p0}, {"NV", p1}};
      const bool expected = p0 * p1 + p1 + 1 <= 32;
      EXPECT_EQ(s.is_valid(c), expected) << to_string(c);
      valid += expected;
    }
  EXPECT_GT(valid, 0);
  EXPECT_FALSE(s.is_valid({{"MR", 5}, {"NV", 1}}));
  EXPECT_FALSE(s.is_valid({{"MR", 4}}));
  EXPECT_FALSE(s.is_valid({{"MR", 4}, {"NV", 1}, {"X", 1}}));
}

TEST(SearchSpaceComplete, FillsMissingParametersFromTheDefaults) {
  const Config c = tile_space().complete({{"MR", 8}}, tile_defaults);
  EXPECT_EQ(c, (Config{{"MR", 8}, {"NV", 2}})) << "got " << to_string(c);
  const Config all = tile_space().complete({}, tile_defaults);
  EXPECT_EQ(all, tile_defaults) << "got " << to_string(all);
  const Config given = tile_space().complete({{"MR", 4}, {"NV", 4}}, tile_defaults);
  EXPECT_EQ(given, (Config{{"MR", 4}, {"NV", 4}})) << "got " << to_string(given);
}

TEST(SearchSpaceComplete, ChecksTheCompletedConfiguration) {
  EXPECT_THROW_MENTIONING(tile_space().complete({{"MR", 5}}, tile_defaults), ConfigError, {"MR"});
  EXPECT_THROW_MENTIONING(tile_space().complete({{"FOO", 1}}, tile_defaults), ConfigError, {"FOO"});
  // NV=4 is allowed alone, but with the default MR=14 breaks the register constraint.
  EXPECT_THROW_CONTAINING(tile_space().complete({{"NV", 4}}, tile_defaults), ConfigError,
                          {"MR*NV + NV + 1 <= 32"});
}

TEST(SearchSpaceDefinition, ValuesAreSortedAndDeduplicated) {
  SearchSpace s;
  s.add("X", {8, 4, 4, 16, 8}, "x");
  ASSERT_NE(s.find("X"), nullptr);
  EXPECT_EQ(s.find("X")->values, (std::vector<ParamValue>{4, 8, 16}));
  EXPECT_EQ(s.find("X")->help, "x");
  EXPECT_EQ(s.find("Y"), nullptr);
}

TEST(SearchSpaceDefinition, EmptyValueListAndConstraintOnUnknownParameterAreProgrammingErrors) {
  SearchSpace s;
  EXPECT_THROW(s.add("X", {}, "none"), std::logic_error);
  s.add("X", {1}, "one");
  EXPECT_THROW(s.constrain("Y > 0", {"Y"}, [](const Config&) { return true; }), std::logic_error);
}

TEST(SearchSpaceRawSize, IsTheProductOfTheValueCounts) {
  EXPECT_EQ(tile_space().raw_size(), 24.0);
  EXPECT_EQ(SearchSpace{}.raw_size(), 1.0) << "the empty space has one (empty) configuration";
  SearchSpace big;
  for (int i = 0; i < 8; ++i) {
    std::string name = "P";
    name += std::to_string(i);
    big.add(name, int_range(1, 1000), "");
  }
  EXPECT_DOUBLE_EQ(big.raw_size(), 1e24) << "raw_size must not overflow an integer type";
}

// The properties every list of extremes must have.
void expect_extremes_properties(const SearchSpace& s, const Config& defaults, const std::string& what) {
  const std::vector<Config> list = s.extremes(defaults);
  SCOPED_TRACE(what + ": extremes = " + describe(list));
  ASSERT_FALSE(list.empty());
  if (s.is_valid(defaults)) {
    EXPECT_EQ(list.front(), defaults) << "the defaults must come first";
  }
  const std::set<Config> unique(list.begin(), list.end());
  EXPECT_EQ(unique.size(), list.size()) << "a configuration is listed twice";
  for (const Config& c : list) EXPECT_TRUE(s.is_valid(c)) << "invalid configuration listed: " << to_string(c);

  for (const Parameter& p : s.parameters()) {
    for (ParamValue extreme : {p.values.front(), p.values.back()}) {
      // Repairable: valid as is, or after moving one other parameter to some value.
      Config base = defaults;
      base[p.name] = extreme;
      bool repairable = s.is_valid(base);
      for (const Parameter& q : s.parameters()) {
        if (q.name == p.name || repairable) continue;
        for (ParamValue v : q.values) {
          Config fixed = base;
          fixed[q.name] = v;
          if (s.is_valid(fixed)) {
            repairable = true;
            break;
          }
        }
      }
      const bool listed = std::any_of(list.begin(), list.end(),
                                      [&](const Config& c) { return c.at(p.name) == extreme; });
      if (repairable)
        EXPECT_TRUE(listed) << p.name << "=" << extreme << " is repairable but no listed configuration has it";
      else
        EXPECT_FALSE(listed) << p.name << "=" << extreme << " cannot be repaired yet is listed";
    }
  }
  // Every listed configuration differs from the defaults in at most two parameters.
  for (const Config& c : list) {
    int changed = 0;
    for (const auto& [name, value] : c) changed += defaults.count(name) == 0 || defaults.at(name) != value;
    EXPECT_LE(changed, 2) << to_string(c) << " moves more than an extreme and one repair";
  }
}

TEST(SearchSpaceExtremes, ListsDefaultsThenEachExtremeRepairedToTheNearestValue) {
  const std::vector<Config> list = tile_space().extremes(tile_defaults);
  // MR=4: valid. MR=16 (NV=2 breaks): NV nearest to 2 that repairs is 1. NV=1: valid.
  // NV=4 (MR=14 breaks): MR nearest to 14 that repairs is 6 (12, 16, 8 do not).
  const std::vector<Config> expected{tile_defaults,
                                     {{"MR", 4}, {"NV", 2}},
                                     {{"MR", 16}, {"NV", 1}},
                                     {{"MR", 14}, {"NV", 1}},
                                     {{"MR", 6}, {"NV", 4}}};
  EXPECT_EQ(std::set<Config>(list.begin(), list.end()), std::set<Config>(expected.begin(), expected.end()))
      << "expected " << describe(expected) << "\ngot      " << describe(list);
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list.front(), tile_defaults);
  expect_extremes_properties(tile_space(), tile_defaults, "tile space");
}

TEST(SearchSpaceExtremes, UnrepairableExtremesAreLeftOut) {
  SearchSpace s;
  s.add("A", {1, 2, 3}, "").add("B", {1, 2}, "");
  s.constrain("A <= 2", {"A"}, [](const Config& c) { return c.at("A") <= 2; });
  const Config defaults{{"A", 2}, {"B", 1}};
  const std::vector<Config> list = s.extremes(defaults);
  for (const Config& c : list) EXPECT_NE(c.at("A"), 3) << "A=3 violates A <= 2 whatever B is";
  const std::set<Config> expected{{{"A", 2}, {"B", 1}}, {{"A", 1}, {"B", 1}}, {{"A", 2}, {"B", 2}}};
  EXPECT_EQ(std::set<Config>(list.begin(), list.end()), expected) << "got " << describe(list);
  expect_extremes_properties(s, defaults, "A <= 2 space");
}

TEST(SearchSpaceExtremes, DefaultsAtAnExtremeAreNotListedTwice) {
  SearchSpace s;
  s.add("A", {1, 2}, "").add("B", {5}, "");
  const std::vector<Config> list = s.extremes({{"A", 1}, {"B", 5}});
  EXPECT_EQ(list, (std::vector<Config>{{{"A", 1}, {"B", 5}}, {{"A", 2}, {"B", 5}}})) << "got " << describe(list);
}

TEST(SearchSpaceExtremes, EmptySpaceHasOnlyTheEmptyConfiguration) {
  const std::vector<Config> list = SearchSpace{}.extremes({});
  ASSERT_EQ(list.size(), 1u);
  EXPECT_TRUE(list.front().empty());
}

TEST(SearchSpaceExtremes, EveryCpuKernelSpaceHasWellFormedExtremes) {
  const DeviceInfo info = cpu::detect();
  for (const Kernel* k : registry().kernels("cpu"))
    for (Precision p : k->precisions()) {
      const SearchSpace s = k->space(info, p);
      const Config defaults = k->default_config(info, p);
      EXPECT_TRUE(s.is_valid(defaults)) << k->name() << " " << to_string(p)
                                        << ": the default configuration {" << to_string(defaults)
                                        << "} is not valid in its own space";
      expect_extremes_properties(s, defaults, std::string(k->name()) + " " + std::string(to_string(p)));
    }
}

TEST(ParseAssignment, SplitsNameAndIntegerValue) {
  EXPECT_EQ(parse_assignment("MR=16"), (std::pair<std::string, ParamValue>{"MR", 16}));
  EXPECT_EQ(parse_assignment("threads=1"), (std::pair<std::string, ParamValue>{"threads", 1}));
  EXPECT_EQ(parse_assignment("X=-3"), (std::pair<std::string, ParamValue>{"X", -3}));
  EXPECT_EQ(parse_assignment("KC=0384"), (std::pair<std::string, ParamValue>{"KC", 384}));
}

TEST(ParseAssignment, MalformedTextThrowsConfigErrorQuotingIt) {
  EXPECT_THROW_CONTAINING(parse_assignment("MR"), ConfigError, {"MR"});
  EXPECT_THROW_CONTAINING(parse_assignment("=5"), ConfigError, {"=5"});
  EXPECT_THROW_CONTAINING(parse_assignment("MR=abc"), ConfigError, {"abc"});
  EXPECT_THROW_CONTAINING(parse_assignment("MR=5x"), ConfigError, {"5x"});
  EXPECT_THROW_CONTAINING(parse_assignment("MR=1.5"), ConfigError, {"1.5"});
  EXPECT_THROW_CONTAINING(parse_assignment("MR=99999999999999999999"), ConfigError, {"99999999999999999999"});
  EXPECT_THROW(parse_assignment("MR="), ConfigError);
  EXPECT_THROW(parse_assignment(""), ConfigError);
}

TEST(ValueRanges, Pow2RangeListsPowersOfTwoFromLoUpToHi) {
  EXPECT_EQ(pow2_range(8, 64), (std::vector<ParamValue>{8, 16, 32, 64}));
  EXPECT_EQ(pow2_range(8, 100), (std::vector<ParamValue>{8, 16, 32, 64}));
  EXPECT_EQ(pow2_range(1, 1), (std::vector<ParamValue>{1}));
  EXPECT_TRUE(pow2_range(16, 8).empty());
  EXPECT_THROW(pow2_range(0, 8), std::invalid_argument);   // would never reach 8
  EXPECT_THROW(pow2_range(-2, 8), std::invalid_argument);
}

TEST(ValueRanges, IntRangeListsValuesWithStepUpToHiInclusive) {
  EXPECT_EQ(int_range(1, 4), (std::vector<ParamValue>{1, 2, 3, 4}));
  EXPECT_EQ(int_range(1, 10, 3), (std::vector<ParamValue>{1, 4, 7, 10}));
  EXPECT_EQ(int_range(1, 9, 3), (std::vector<ParamValue>{1, 4, 7}));
  EXPECT_EQ(int_range(5, 5), (std::vector<ParamValue>{5}));
  EXPECT_TRUE(int_range(3, 2).empty());
  EXPECT_THROW(int_range(1, 4, 0), std::invalid_argument);  // would never reach 4
  EXPECT_THROW(int_range(1, 4, -1), std::invalid_argument);
}

TEST(ConfigToString, ListsNameValuePairsInNameOrder) {
  EXPECT_EQ(to_string(Config{{"MC", 96}, {"KC", 256}}), "KC=256 MC=96");
  EXPECT_EQ(to_string(Config{}), "");
}

}  // namespace
}  // namespace gemmlab

// --- enumeration of the valid space and neighbourhoods --------------------------------------

namespace gemmlab {
namespace {

// Every configuration of the Cartesian product that satisfies all constraints, by brute force.
std::vector<Config> brute_force(const SearchSpace& space) {
  std::vector<Config> all{Config{}};
  for (const auto& p : space.parameters()) {
    std::vector<Config> next;
    for (const auto& partial : all)
      for (ParamValue v : p.values) {
        Config c = partial;
        c[p.name] = v;
        next.push_back(std::move(c));
      }
    all = std::move(next);
  }
  std::vector<Config> valid;
  for (const auto& c : all)
    if (space.is_valid(c)) valid.push_back(c);
  return valid;
}

SearchSpace tiling_space() {
  SearchSpace s;
  s.add("MR", {4, 6, 8, 12, 14}, "").add("NV", {1, 2, 3, 4}, "").add("MC", {16, 24, 48, 56, 96}, "");
  s.constrain("MR*NV + NV + 1 <= 32", {"MR", "NV"},
              [](const Config& c) { return c.at("MR") * c.at("NV") + c.at("NV") + 1 <= 32; });
  s.constrain("MC % MR == 0", {"MC", "MR"}, [](const Config& c) { return c.at("MC") % c.at("MR") == 0; });
  return s;
}

TEST(SpaceEnumeration, ListsExactlyTheValidConfigurationsInLexicographicOrder) {
  const SearchSpace s = tiling_space();
  const std::vector<Config> expected = brute_force(s);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(s.enumerate(), expected);
  EXPECT_EQ(s.valid_size(), expected.size());
  EXPECT_LT(s.valid_size(), static_cast<std::size_t>(s.raw_size()));
}

TEST(SpaceEnumeration, StopsAtTheLimit) {
  const SearchSpace s = tiling_space();
  const std::vector<Config> all = s.enumerate();
  const std::vector<Config> first3 = s.enumerate(3);
  ASSERT_EQ(first3.size(), 3u);
  EXPECT_TRUE(std::equal(first3.begin(), first3.end(), all.begin()));
  EXPECT_TRUE(s.enumerate(0).empty());
}

TEST(SpaceEnumeration, AnEmptySpaceHasOneConfigurationAndAnUnsatisfiableOneNone) {
  EXPECT_EQ(SearchSpace{}.enumerate(), std::vector<Config>{Config{}});
  SearchSpace none;
  none.add("A", {1, 2}, "").constrain("A > 5", {"A"}, [](const Config& c) { return c.at("A") > 5; });
  EXPECT_EQ(none.valid_size(), 0u);
}

// 10^8 raw points, 10^4 valid: each constraint pairs two parameters. Checking a constraint as
// soon as its parameters are bound keeps the work near the size of the valid space; filtering
// the Cartesian product would evaluate constraints 4 x 10^8 times.
TEST(SpaceEnumeration, PrunesAsSoonAsAConstraintsParametersAreBound) {
  // Names p0..p7 and texts "p1 == p0", ...: built with snprintf, since GCC 12 warns falsely
  // (-Wrestrict) on std::string concatenations of this kind.
  auto name = [](int i) {
    char text[8];
    std::snprintf(text, sizeof text, "p%d", i);
    return std::string(text);
  };
  SearchSpace s;
  for (int i = 0; i < 8; ++i) s.add(name(i), int_range(0, 9), "");
  auto evaluations = std::make_shared<long>(0);
  for (int i = 0; i < 8; i += 2) {
    const std::string a = name(i), b = name(i + 1);
    char text[32];
    std::snprintf(text, sizeof text, "p%d == p%d", i + 1, i);
    s.constrain(text, {a, b}, [a, b, evaluations](const Config& c) {
      ++*evaluations;
      return c.at(a) == c.at(b);
    });
  }
  ASSERT_EQ(s.raw_size(), 1e8);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(s.valid_size(), 10000u);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("enumeration_seconds", std::to_string(seconds));
  // Level by level: 10^1, 10^2, 10^3, 10^4 pairs checked, each 10 values deep: ~1.1 x 10^5.
  EXPECT_LE(*evaluations, 120000) << "constraints were evaluated " << *evaluations
                                  << " times: the enumeration does not prune early";
}

TEST(SpaceEnumeration, AConstraintReadingAnUnlistedParameterIsReportedAsADeclarationError) {
  SearchSpace s;
  s.add("A", {1, 2}, "").add("B", {1, 2}, "");
  s.constrain("A < B", {"A"}, [](const Config& c) { return c.at("A") < c.at("B"); });  // forgot B
  EXPECT_THROW_CONTAINING(s.enumerate(), std::logic_error, {"A < B"});
}

TEST(SpaceNeighbours, AdjacentMovesOneParameterToTheNextValidValueEitherSide) {
  const SearchSpace s = tiling_space();
  const Config c{{"MR", 6}, {"NV", 2}, {"MC", 48}};
  ASSERT_TRUE(s.is_valid(c));
  const std::vector<Config> n = s.neighbours(c, SearchSpace::Neighbourhood::adjacent);
  // MR 4 (48 % 4 == 0) and 8 (48 % 8 == 0); NV 1 and 3 (6*3+4 = 22); MC 24 (24 % 6 == 0) but not 56.
  const std::vector<Config> expected{{{"MR", 4}, {"NV", 2}, {"MC", 48}}, {{"MR", 8}, {"NV", 2}, {"MC", 48}},
                                     {{"MR", 6}, {"NV", 1}, {"MC", 48}}, {{"MR", 6}, {"NV", 3}, {"MC", 48}},
                                     {{"MR", 6}, {"NV", 2}, {"MC", 24}}};
  EXPECT_EQ(n, expected);
}

TEST(SpaceNeighbours, AnyMovesOneParameterToEveryOtherValidValue) {
  const SearchSpace s = tiling_space();
  const Config c{{"MR", 6}, {"NV", 2}, {"MC", 48}};
  const std::vector<Config> n = s.neighbours(c, SearchSpace::Neighbourhood::any);
  for (const Config& x : n) {
    EXPECT_TRUE(s.is_valid(x)) << to_string(x);
    int differing = 0;
    for (const auto& [name, value] : c) differing += x.at(name) != value;
    EXPECT_EQ(differing, 1) << to_string(x);
  }
  // Brute force: every valid configuration at Hamming distance 1.
  std::size_t expected = 0;
  for (const Config& x : brute_force(s)) {
    int differing = 0;
    for (const auto& [name, value] : c) differing += x.at(name) != value;
    expected += differing == 1;
  }
  EXPECT_EQ(n.size(), expected);
  EXPECT_GT(n.size(), s.neighbours(c, SearchSpace::Neighbourhood::adjacent).size());
}

}  // namespace
}  // namespace gemmlab
