// SearchSpace: checking configurations, completing them, sizes, the extremes used by
// verification, and the NAME=VALUE parser.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
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
  s.require("MR*NV + NV + 1 <= 32");
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

// A parameter added after configurations were stored: what was stored without it ran as one of
// its values, and reads back as that; what names it, or is not from before it, is left alone.
TEST(SearchSpaceAddedLater, FillsTheValueStoredConfigurationsRanAsAndNothingElse) {
  SearchSpace s = tile_space();
  s.add("PACK", {0, 1}, "pack the broadcast side").added_later("PACK", 1);
  EXPECT_EQ(s.upgraded({{"MR", 8}, {"NV", 2}}), (Config{{"MR", 8}, {"NV", 2}, {"PACK", 1}}));
  EXPECT_TRUE(s.is_valid(s.upgraded({{"MR", 8}, {"NV", 2}})));
  EXPECT_FALSE(s.is_valid({{"MR", 8}, {"NV", 2}})) << "upgraded() fills it in, check() does not";
  EXPECT_EQ(s.upgraded({{"MR", 8}, {"NV", 2}, {"PACK", 0}}), (Config{{"MR", 8}, {"NV", 2}, {"PACK", 0}}));
  // Only parameters declared added later: a missing MR stays missing (and invalid).
  EXPECT_EQ(s.upgraded({{"NV", 2}}), (Config{{"NV", 2}, {"PACK", 1}}));
  EXPECT_EQ(tile_space().upgraded({{"NV", 2}}), (Config{{"NV", 2}}));
  // Declaring it for a name that is not a parameter, or with a value it cannot take, is a bug.
  EXPECT_THROW(tile_space().added_later("PACK", 1), std::logic_error);
  SearchSpace t = tile_space();
  t.add("PACK", {0, 1}, "pack the broadcast side");
  EXPECT_THROW(t.added_later("PACK", 2), std::logic_error);
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
  EXPECT_THROW(s.require("Y > 0"), std::logic_error);
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
  s.require("A <= 2");
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
  s.require("MR*NV + NV + 1 <= 32");
  s.require("MC % MR == 0");
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
  none.add("A", {1, 2}, "").require("A > 5");
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
  for (int i = 0; i < 8; i += 2) {
    char text[32];
    std::snprintf(text, sizeof text, "p%d == p%d", i + 1, i);
    s.require(text);
  }
  ASSERT_EQ(s.raw_size(), 1e8);
  const SearchSpace::EnumerationCost cost = s.enumeration_cost();
  EXPECT_EQ(cost.valid, 10000u);
  EXPECT_EQ(s.valid_size(), 10000u);
  // Level by level: 10^1, 10^2, 10^3, 10^4 pairs checked, each 10 values deep: ~1.1 x 10^5.
  std::uint64_t evaluations = 0;
  for (std::uint64_t checks : cost.checks) evaluations += checks;
  EXPECT_LE(evaluations, 120000u) << "constraints were evaluated " << evaluations
                                  << " times: the enumeration does not prune early";
  // Each pair's constraint is checked 10 times below each valid prefix: 10, 100, 1000, 10^4 prefixes.
  EXPECT_EQ(cost.checks, (std::vector<std::uint64_t>{100, 1000, 10000, 100000}));
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

// --- named values, require(), value_of() and nearest_valid() ---------------------------------

namespace gemmlab {
namespace {

// A block tile of BM x BN computed by threads with TM x TN each, as CUDA 05 declares it.
SearchSpace block_space() {
  SearchSpace s;
  s.add("BM", {32, 64, 128}, "rows of the block tile")
      .add("BN", {32, 64, 128}, "columns of the block tile")
      .add("TM", {2, 4, 8}, "rows of a thread's tile")
      .add("TN", {2, 4, 8}, "columns of a thread's tile");
  s.let("max_threads_per_block", 256, "threads a block may have")
      .let("elem", 4, "bytes per element")
      .derive("threads", "(BM/TM)*(BN/TN)", "threads per block")
      .derive("tile_m", "BM", "rows of the block of C staged")
      .derive("half_warp", "32 / 2", "lanes in half a warp");
  s.require("threads % 32 == 0", "whole warps")
      .require("threads <= max_threads_per_block", "threads per block");
  return s;
}

TEST(SearchSpaceNamedValues, AreListedWithTheirDefinitionsAndConstantValues) {
  const SearchSpace s = block_space();
  const auto& v = s.named_values();
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0].name, "max_threads_per_block");
  EXPECT_EQ(v[0].definition, "256");
  EXPECT_EQ(v[0].value, 256);
  EXPECT_EQ(v[0].help, "threads a block may have");
  EXPECT_EQ(v[2].name, "threads");
  EXPECT_EQ(v[2].definition, "(BM/TM)*(BN/TN)");
  EXPECT_EQ(v[2].value, std::nullopt) << "it reads parameters";
  EXPECT_EQ(v[4].definition, "32 / 2");
  EXPECT_EQ(v[4].value, 16) << "derived from constants alone: computed once";
  ASSERT_NE(s.find_named_value("elem"), nullptr);
  EXPECT_EQ(s.find_named_value("elem")->value, 4);
  EXPECT_EQ(s.find_named_value("BM"), nullptr) << "a parameter is not a named value";
}

TEST(SearchSpaceRequire, AConstraintKeepsItsTextAndWhyAndReadsParametersThroughDerivedValues) {
  const SearchSpace s = block_space();
  ASSERT_EQ(s.constraints().size(), 2u);
  const Constraint& c = s.constraints()[1];
  EXPECT_EQ(c.text, "threads <= max_threads_per_block");
  EXPECT_EQ(c.why, "threads per block");
  EXPECT_EQ(c.describe(), "threads <= max_threads_per_block (threads per block)");
  EXPECT_EQ(c.uses, (std::vector<std::string>{"BM", "TM", "BN", "TN"}));
  EXPECT_TRUE(c.holds({{"BM", 64}, {"BN", 64}, {"TM", 4}, {"TN", 4}}));   // 256 threads
  EXPECT_FALSE(c.holds({{"BM", 64}, {"BN", 64}, {"TM", 2}, {"TN", 4}}));  // 512
  // Brute force agrees with the enumeration.
  std::size_t valid = 0;
  for (ParamValue bm : {32, 64, 128})
    for (ParamValue bn : {32, 64, 128})
      for (ParamValue tm : {2, 4, 8})
        for (ParamValue tn : {2, 4, 8}) {
          const ParamValue threads = (bm / tm) * (bn / tn);
          valid += threads % 32 == 0 && threads <= 256;
        }
  EXPECT_EQ(s.valid_size(), valid);
  EXPECT_GT(valid, 0u);
}

TEST(SearchSpaceRequire, AViolationShowsTheWhyAndTheNamedValuesItCompared) {
  EXPECT_THROW_CONTAINING(block_space().check({{"BM", 128}, {"BN", 128}, {"TM", 2}, {"TN", 2}}), ConfigError,
                          {"violates constraint threads <= max_threads_per_block (threads per block)",
                           "with threads = 4096, max_threads_per_block = 256"});
}

TEST(SearchSpaceRequire, ANameThatIsNeitherParameterNorNamedValueIsADeclarationError) {
  SearchSpace s = block_space();
  EXPECT_THROW_CONTAINING(
      s.require("threads <= max_threads", "threads per block"), std::logic_error,
      {"constraint 'threads <= max_threads'", "max_threads", "BM, BN, TM, TN", "max_threads_per_block"});
  EXPECT_THROW_CONTAINING(s.derive("blocks", "M / BM", "blocks down C"), std::logic_error, {"blocks", "M"});
  EXPECT_THROW_CONTAINING(s.require("threads <= (256", ""), std::logic_error, {"threads <= (256", "column"});
  EXPECT_THROW(s.let("threads", 1, ""), std::logic_error) << "taken by a named value";
  EXPECT_THROW(s.let("BM", 1, ""), std::logic_error) << "taken by a parameter";
  EXPECT_THROW(s.add("elem", {1}, ""), std::logic_error) << "taken by a named value";
  EXPECT_THROW(s.add("BM", {1}, ""), std::logic_error) << "declared twice";
  EXPECT_THROW(s.let("L1 size", 1, ""), std::logic_error) << "no expression could read it";
  EXPECT_THROW(s.derive("2BM", "2*BM", ""), std::logic_error) << "no expression could read it";
  EXPECT_EQ(s.constraints().size(), 2u) << "nothing was added";
}

TEST(SearchSpaceRequire, AConstraintOnADerivedValueIsCheckedOnceItsParametersAreBound) {
  // BM, BN, TM, TN, then X with 100 values. The checks of a constraint on X, declared first, count
  // how often the walk binds X: only below tiles that satisfy the threads constraints if those are
  // checked as soon as TN is bound; below all 81 tiles if they waited for X.
  SearchSpace s;
  s.add("BM", {32, 64, 128}, "")
      .add("BN", {32, 64, 128}, "")
      .add("TM", {2, 4, 8}, "")
      .add("TN", {2, 4, 8}, "");
  s.add("X", int_range(1, 100), "a parameter after the tile");
  s.require("X > 0");
  s.derive("threads", "(BM/TM)*(BN/TN)", "threads per block");
  s.require("threads % 32 == 0", "whole warps").require("threads <= 256", "threads per block");
  const std::size_t tiles = block_space().valid_size();
  ASSERT_LT(tiles, 81u);
  const SearchSpace::EnumerationCost cost = s.enumeration_cost();
  EXPECT_EQ(cost.valid, tiles * 100);
  EXPECT_EQ(cost.checks.front(), tiles * 100) << "X was bound below tiles the threads constraints rule out";
}

TEST(SearchSpaceRequire, AConstraintThatCannotBeEvaluatedCountsAsViolated) {
  SearchSpace s;
  s.add("A", {0, 1, 2}, "").add("B", {4}, "");
  s.require("B / A >= 2", "");
  EXPECT_EQ(s.enumerate(), (std::vector<Config>{{{"A", 1}, {"B", 4}}, {{"A", 2}, {"B", 4}}}));
  EXPECT_FALSE(s.is_valid({{"A", 0}, {"B", 4}}));
  EXPECT_THROW_CONTAINING(s.check({{"A", 0}, {"B", 4}}), ConfigError, {"division by zero"});
}

TEST(SearchSpaceValueOf, EvaluatesADerivedTileForAConfiguration) {
  const SearchSpace s = block_space();
  const Config c{{"BM", 64}, {"BN", 128}, {"TM", 4}, {"TN", 8}};
  EXPECT_EQ(s.value_of("tile_m", c), 64);
  EXPECT_EQ(s.value_of("threads", c), 256);
  EXPECT_EQ(s.value_of("elem", c), 4);
  EXPECT_EQ(s.value_of("BN", c), 128) << "a parameter is its own value";
  EXPECT_EQ(s.value_of("tile_n", c), std::nullopt) << "this space declares no tile_n";
  EXPECT_THROW_MENTIONING((void)s.value_of("threads", {{"BM", 64}}), ConfigError, {"BN"});
}

TEST(SearchSpaceParse, UsesTheSpacesNamedValues) {
  const Expression e = block_space().parse("threads >= half_warp && Z == 1");
  EXPECT_EQ(e.names(), (std::vector<std::string>{"BM", "TM", "BN", "TN", "Z"})) << "Z is left to the caller";
  EXPECT_THROW((void)block_space().parse("threads >="), ExpressionError);
}

// X in {1, 2, 4, 8, 16, 32} (positions 0..5) and an enumerated Y in {0, 1, 2}.
SearchSpace xy_space(const std::string& constraint) {
  SearchSpace s;
  s.add("X", pow2_range(1, 32), "").add("Y", {0, 1, 2}, "");
  s.require(constraint, "");
  return s;
}

TEST(SearchSpaceNearestValid, AValidPreferenceIsReturnedAsIs) {
  const SearchSpace s = xy_space("X * (Y + 1) <= 24");
  EXPECT_EQ(s.nearest_valid({{"X", 8}, {"Y", 2}}), (Config{{"X", 8}, {"Y", 2}}));
  const SearchSpace t = tile_space();
  EXPECT_EQ(t.nearest_valid(tile_defaults), tile_defaults);
}

TEST(SearchSpaceNearestValid, TakesTheLeastSumOfPositionDistances) {
  // Preferred X=32 (position 5), Y=2 (position 2): X*(Y+1) = 96 > 24. By hand, the valid
  // configurations and their distances: (16,0): 1+2 = 3, (8,1): 2+1 = 3, (8,2): 2+0 = 2,
  // (4,2): 3+0 = 3, (16,1) = 32 > 24 is not valid. The nearest: X=8, Y=2, at 2 (log2(32/8)).
  const SearchSpace s = xy_space("X * (Y + 1) <= 24");
  EXPECT_EQ(s.nearest_valid({{"X", 32}, {"Y", 2}}), (Config{{"X", 8}, {"Y", 2}}));
}

TEST(SearchSpaceNearestValid, TiesGoToTheFirstInEnumerationOrder) {
  // From X=32, Y=2 under X*(Y+1) <= 16: (16,0), (8,1) and (4,2) are all 3 away; (4,2) comes
  // first (X ascending, then Y).
  EXPECT_EQ(xy_space("X * (Y + 1) <= 16").nearest_valid({{"X", 32}, {"Y", 2}}), (Config{{"X", 4}, {"Y", 2}}));
}

TEST(SearchSpaceNearestValid, APreferredValueOutsideTheListCountsFromWhereItWouldBeInserted) {
  // X=12 would go between 8 and 16: both 1 away, 4 and 32 are 2 away. Under X*(Y+1) <= 48 with
  // Y=2: (8,2) and (16,2) are both 1 away; (8,2) comes first.
  EXPECT_EQ(xy_space("X * (Y + 1) <= 48").nearest_valid({{"X", 12}, {"Y", 2}}), (Config{{"X", 8}, {"Y", 2}}));
  // Under X*(Y+1) <= 24 only (8,2) is 1 away ((16,2) = 48 is not valid).
  EXPECT_EQ(xy_space("X * (Y + 1) <= 24").nearest_valid({{"X", 12}, {"Y", 2}}), (Config{{"X", 8}, {"Y", 2}}));
  // Beyond the largest value: the largest is 1 away. Y=5 would be inserted after 2.
  EXPECT_EQ(xy_space("X * (Y + 1) <= 100").nearest_valid({{"X", 1000}, {"Y", 5}}),
            (Config{{"X", 32}, {"Y", 2}}));
}

TEST(SearchSpaceNearestValid, AMissingParameterCountsFromItsSmallestValue) {
  // Y missing: as if Y=0. (16, 0) is valid and 0 away.
  EXPECT_EQ(xy_space("X * (Y + 1) <= 24").nearest_valid({{"X", 16}}), (Config{{"X", 16}, {"Y", 0}}));
  // Nothing given: the first valid configuration at the smallest values.
  EXPECT_EQ(xy_space("X >= 4").nearest_valid({}), (Config{{"X", 4}, {"Y", 0}}));
}

TEST(SearchSpaceNearestValid, NoValidConfigurationOrAnUnknownParameterIsAConfigError) {
  EXPECT_THROW_CONTAINING(xy_space("X > 100").nearest_valid({{"X", 8}, {"Y", 1}}), ConfigError,
                          {"no configuration satisfies every constraint", "X > 100"});
  EXPECT_THROW_MENTIONING(xy_space("X > 1").nearest_valid({{"X", 8}, {"Z", 1}}), ConfigError,
                          {"Z", "X", "Y"});
}

// The documented distance, computed directly, for checking nearest_valid against every valid
// configuration.
std::size_t distance(const SearchSpace& s, const Config& from, const Config& to) {
  std::size_t sum = 0;
  for (const Parameter& p : s.parameters()) {
    const auto& v = p.values;
    const auto j = static_cast<std::size_t>(std::find(v.begin(), v.end(), to.at(p.name)) - v.begin());
    const auto it = from.find(p.name);
    if (it == from.end()) {
      sum += j;
      continue;
    }
    const auto at = static_cast<std::size_t>(std::lower_bound(v.begin(), v.end(), it->second) - v.begin());
    const bool listed = at < v.size() && v[at] == it->second;
    sum += j < at ? at - j : j - at + (listed ? 0 : 1);
  }
  return sum;
}

TEST(SearchSpaceNearestValid, AgreesWithAnExhaustiveSearch) {
  const SearchSpace s = tiling_space();  // MR {4..14}, NV {1..4}, MC {16..96}, two constraints
  const std::vector<Config> valid = s.enumerate();
  int checked = 0;
  for (ParamValue mr : {3, 4, 5, 8, 14, 20})
    for (ParamValue nv : {0, 1, 3, 4, 9})
      for (ParamValue mc : {-1, 16, 50, 96, 200}) {
        Config preferred{{"MR", mr}, {"NV", nv}, {"MC", mc}};
        if (mc < 0) preferred.erase("MC");
        std::optional<Config> best;
        for (const Config& c : valid)  // in enumeration order: the first of equals stays
          if (!best || distance(s, preferred, c) < distance(s, preferred, *best)) best = c;
        const Config got = s.nearest_valid(preferred);
        if (s.is_valid(preferred)) {
          EXPECT_EQ(got, preferred);
        } else {
          EXPECT_EQ(got, *best) << "from " << to_string(preferred) << ": got " << to_string(got) << " at "
                                << distance(s, preferred, got) << ", expected " << to_string(*best) << " at "
                                << distance(s, preferred, *best);
        }
        ++checked;
      }
  EXPECT_EQ(checked, 150);
}

TEST(SearchSpaceNearestValid, IsFastOnALargeSpace) {
  // 10^8 raw points, 10^4 valid (pairs p0 == p1, ...): preferred values that no pair satisfies.
  SearchSpace s;
  const char* names[] = {"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"};
  for (const char* name : names) s.add(name, int_range(0, 9), "");
  s.require("p0 == p1").require("p2 == p3").require("p4 == p5").require("p6 == p7");
  Config preferred;
  for (int i = 0; i < 8; ++i) preferred[names[i]] = i % 2 == 0 ? 2 : 5;
  const auto start = std::chrono::steady_clock::now();
  const Config got = s.nearest_valid(preferred);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("nearest_valid_seconds", std::to_string(seconds));
  // Each pair is 3 away whatever it takes between 2 and 5; the first in order takes 2.
  for (const char* name : names) EXPECT_EQ(got.at(name), 2) << to_string(got);
  EXPECT_LT(seconds, 1.0) << "the search did not prune";
}

}  // namespace
}  // namespace gemmlab

namespace gemmlab {
namespace {

// Every builtin kernel's space (on this machine's first device of its backend, or a blank one):
// from every parameter at its largest value, nearest_valid finds what an exhaustive search finds,
// quickly on the largest (OpenCL 03: 273k valid configurations).
TEST(SearchSpaceNearestValid, AgreesWithAnExhaustiveSearchOnEveryBuiltinSpace) {
  for (const Kernel* k : registry().kernels("")) {
    auto devices = registry().backend(std::string(k->backend())).devices();
    const DeviceInfo info = devices.empty() ? DeviceInfo{} : devices.front();
    const SearchSpace s = k->space(info, k->precisions().front());
    Config largest;
    for (const Parameter& p : s.parameters()) largest[p.name] = p.values.back();
    const auto start = std::chrono::steady_clock::now();
    std::optional<Config> got;
    try {
      got = s.nearest_valid(largest);
    } catch (const ConfigError&) {
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::vector<Config> valid = s.enumerate();
    SCOPED_TRACE(std::string(k->backend()) + "/" + std::string(k->name()) + ", " + std::to_string(valid.size()) +
                 " valid configurations, nearest_valid took " + std::to_string(seconds) + " s");
    EXPECT_LT(seconds, 1.0) << "the search did not prune (it takes milliseconds on 273k valid configurations)";
    if (valid.empty()) {
      EXPECT_FALSE(got.has_value());
      continue;
    }
    ASSERT_TRUE(got.has_value());
    std::optional<Config> best;
    for (const Config& c : valid)
      if (!best || distance(s, largest, c) < distance(s, largest, *best)) best = c;
    EXPECT_EQ(*got, *best) << to_string(*got) << " vs " << to_string(*best);
  }
}

}  // namespace
}  // namespace gemmlab
