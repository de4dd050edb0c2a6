// Constraint expressions: C precedence and integer semantics, short-circuiting, the names an
// expression uses, evaluation errors, malformed input reported at its column, and use as a
// SearchSpace constraint.
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemmlab/expression.hpp"
#include "gemmlab/space.hpp"
#include "test_support.hpp"
#include "text_support.hpp"

namespace gemmlab {
namespace {

constexpr ParamValue kMax = std::numeric_limits<ParamValue>::max();
constexpr ParamValue kMin = std::numeric_limits<ParamValue>::min();

ParamValue eval(const std::string& text, const Config& config = {}) {
  return Expression::parse(text).evaluate(config);
}

// (expression, value) pairs, checked in turn.
void expect_values(std::initializer_list<std::pair<const char*, ParamValue>> cases) {
  for (const auto& [text, value] : cases) EXPECT_EQ(eval(text), value) << text;
}

std::vector<std::string> lines(const std::string& text) { return testing::lines_of(text); }

// --- precedence, associativity and C semantics ---

TEST(ExpressionPrecedence, MultiplicationBindsTighterThanAddition) {
  expect_values({{"2+3*4", 14},
                 {"(2+3)*4", 20},
                 {"2*3+4", 10},
                 {"2*3%4", 2},  // (2*3)%4, left to right
                 {"1 + 10 % 4", 3}});
}

TEST(ExpressionPrecedence, BinaryOperatorsAssociateToTheLeft) {
  expect_values({{"10-4-3", 3},
                 {"100/10/5", 2},
                 {"3 > 2 > 1", 0},  // (3 > 2) > 1 == 1 > 1, as in C
                 {"2 == 2 == 1", 1}});
}

TEST(ExpressionPrecedence, DivisionAndModuloTruncateTowardsZeroAsInC) {
  expect_values({{"20/3", 6},
                 {"-7/2", -3},
                 {"7/-2", -3},
                 {"-7 % 3", -1},
                 {"7 % -3", 1},
                 {"-7 % -3", -1}});
}

TEST(ExpressionPrecedence, UnaryOperatorsBindTightest) {
  expect_values({{"!0", 1},
                 {"!5", 0},
                 {"!!7", 1},
                 {"-2*-3", 6},
                 {"- -3", 3},
                 {"1 - -1", 2},
                 {"-(2+3)", -5},
                 {"!1 == 0", 1},  // (!1) == 0
                 {"-2 * 3 + 1", -5}});
}

TEST(ExpressionPrecedence, ComparisonsBindTighterThanEqualityAndLogicalOperatorsLoosest) {
  expect_values({{"1 < 2 == 1", 1},  // (1 < 2) == 1
                 {"2 == 1 < 2", 0},  // 2 == (1 < 2)
                 {"1 + 2 < 4", 1},
                 {"1 || 0 && 0", 1},  // 1 || (0 && 0)
                 {"(1 || 0) && 0", 0},
                 {"1 == 1 && 2 != 3", 1},
                 {"4 <= 4 && 4 >= 5", 0}});
}

TEST(ExpressionPrecedence, ComparisonsAndLogicalOperatorsYieldZeroOrOne) {
  expect_values({{"5 > 2", 1}, {"5 < 2", 0}, {"7 && 9", 1}, {"0 || -4", 1}, {"0 || 0", 0}, {"42", 42}});
}

TEST(ExpressionEvaluate, LogicalOperatorsShortCircuit) {
  EXPECT_EQ(eval("0 && 1/0"), 0);
  EXPECT_EQ(eval("1 || 1/0"), 1);
  EXPECT_EQ(eval("0 && UNBOUND"), 0);
  EXPECT_THROW(eval("1 && 1/0"), ConfigError);
  EXPECT_THROW(eval("0 || 1/0"), ConfigError);
}

// --- names, text, configurations ---

TEST(ExpressionNames, DistinctInOrderOfFirstAppearance) {
  EXPECT_EQ(Expression::parse("MC % MR == 0 && MR*NV + NV + 1 <= 32").names(),
            (std::vector<std::string>{"MC", "MR", "NV"}));
  EXPECT_EQ(Expression::parse("b + a + b_1 + a*b + _x9").names(),
            (std::vector<std::string>{"b", "a", "b_1", "_x9"}));
  EXPECT_TRUE(Expression::parse("1 + 2").names().empty());
}

TEST(ExpressionNames, TextIsKeptAsGiven) {
  const std::string text = "  MR*NV +\tNV + 1 <= 32 ";
  EXPECT_EQ(Expression::parse(text).text(), text);
}

TEST(ExpressionEvaluate, ReadsParameterValuesFromTheConfiguration) {
  const Expression e = Expression::parse("MC % MR == 0 && MR*NV + NV + 1 <= 32");
  EXPECT_EQ(e.evaluate({{"MC", 96}, {"MR", 12}, {"NV", 2}}), 1);
  EXPECT_TRUE(e.holds({{"MC", 96}, {"MR", 12}, {"NV", 2}}));
  EXPECT_FALSE(e.holds({{"MC", 96}, {"MR", 14}, {"NV", 2}}));  // 96 % 14 != 0
  EXPECT_FALSE(e.holds({{"MC", 96}, {"MR", 16}, {"NV", 2}}));  // 16*2 + 2 + 1 > 32
  EXPECT_EQ(eval("KC * 2 - MR", {{"KC", 256}, {"MR", 6}, {"OTHER", 1}}), 506);
}

TEST(ExpressionEvaluate, CopiesAreIndependentOfTheOriginal) {
  std::vector<Expression> kept;
  {
    const Expression e = Expression::parse("A * 2 + 1");
    kept.push_back(e);
  }
  EXPECT_EQ(kept.front().evaluate({{"A", 20}}), 41);
  EXPECT_EQ(kept.front().text(), "A * 2 + 1");
}

TEST(ExpressionParse, AcceptsWhitespaceAnywhereBetweenTokens) {
  EXPECT_EQ(eval("\tA\n+ 1 <=\r\n2", {{"A", 1}}), 1);
  EXPECT_EQ(eval("(((A)))", {{"A", 7}}), 7);
}

TEST(ExpressionParse, AcceptsTheLargestInt64Literal) {
  EXPECT_EQ(eval("9223372036854775807"), kMax);
  EXPECT_EQ(eval("-9223372036854775807 - 1"), kMin);
  EXPECT_EQ(eval("0"), 0);
}

// --- evaluation errors ---

TEST(ExpressionEvaluate, DivisionByZeroThrowsQuotingTheExpression) {
  const Config c{{"MR", 8}, {"NV", 0}};
  EXPECT_THROW_CONTAINING(eval("MR / NV", c), ConfigError, {"division by zero", "'MR / NV'", "NV=0"});
  EXPECT_THROW_CONTAINING(eval("MR % NV", c), ConfigError, {"modulo by zero", "'MR % NV'"});
  EXPECT_THROW_CONTAINING(eval("1 / (2 - 2)"), ConfigError, {"division by zero", "column 3"});
}

TEST(ExpressionEvaluate, IntegerOverflowThrows) {
  EXPECT_THROW_CONTAINING(eval("9223372036854775807 + 1"), ConfigError, {"overflow"});
  EXPECT_THROW_CONTAINING(eval("A * B", {{"A", kMax / 2 + 1}, {"B", 2}}), ConfigError, {"overflow", "'A * B'"});
  EXPECT_THROW_CONTAINING(eval("-9223372036854775807 - 2"), ConfigError, {"overflow"});
  EXPECT_THROW_CONTAINING(eval("-A", {{"A", kMin}}), ConfigError, {"overflow"});
  EXPECT_THROW_CONTAINING(eval("A / -1", {{"A", kMin}}), ConfigError, {"overflow"});
  EXPECT_EQ(eval("A % -1", {{"A", kMin}}), 0);  // the remainder is 0; no overflow
  EXPECT_EQ(eval("A / -1", {{"A", kMax}}), -kMax);
}

TEST(ExpressionEvaluate, UnknownParameterThrowsNamingIt) {
  EXPECT_THROW_MENTIONING(eval("MR + XY", {{"MR", 1}, {"NV", 2}}), ConfigError, {"XY", "MR", "NV"});
  EXPECT_THROW_MENTIONING(eval("XY"), ConfigError, {"XY"});
}

// --- malformed expressions ---

struct Malformed {
  std::string text;
  std::size_t column;
  std::string says;  // a fragment of the first line of the message
};

TEST(ExpressionErrors, MalformedInputIsReportedAtItsColumnWithACaret) {
  const std::vector<Malformed> cases = {
      {"MR +", 5, "unexpected end of expression"},
      {"(MR + 1", 8, "expected ')'"},
      {"MR + 1)", 7, "unmatched ')'"},
      {"MR $ 2", 4, "unexpected character '$'"},
      {"MR = 2", 4, "did you mean '=='?"},
      {"MR & NV", 4, "did you mean '&&'?"},
      {"MR | NV", 4, "did you mean '||'?"},
      {"", 1, "empty expression"},
      {"   ", 4, "empty expression"},
      {"99999999999999999999", 1, "too large"},
      {"MR + 9223372036854775808", 6, "too large"},
      {"MR NV", 4, "unexpected 'NV'"},
      {"* 2", 1, "unexpected '*'"},
      {"()", 2, "unexpected ')'"},
      {"2MR", 1, "invalid number '2MR'"},
      {"010", 1, "octal"},
      {"(MR + (NV * 2) <= 32", 21, "to close the '(' at column 1"},
      {"MR <= ", 7, "unexpected end of expression"},
      {"MR + 1 \x01", 8, "byte 0x01"},
  };
  for (const auto& m : cases) {
    SCOPED_TRACE("expression \"" + m.text + "\"");
    try {
      (void)Expression::parse(m.text);
      ADD_FAILURE() << "parsed without error";
    } catch (const ExpressionError& e) {
      const std::string message = e.what();
      EXPECT_EQ(e.column(), m.column) << message;
      const auto l = lines(message);
      ASSERT_EQ(l.size(), 3u) << message;
      EXPECT_TRUE(testing::contains(l[0], "at column " + std::to_string(m.column))) << message;
      EXPECT_TRUE(testing::contains(l[0], m.says)) << message;
      // Second line: the expression; third: a caret under the offending column.
      const std::string shown = m.text.find('\x01') == std::string::npos ? m.text : "MR + 1 ?";
      EXPECT_EQ(l[1], "  " + shown) << message;
      EXPECT_EQ(l[2], std::string(2 + m.column - 1, ' ') + "^") << message;
    }
  }
}

TEST(ExpressionErrors, MessageMatchesTheDocumentedForm) {
  try {
    (void)Expression::parse("(MR + 1");
    FAIL() << "parsed without error";
  } catch (const ExpressionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "invalid expression: expected ')' at column 8 (to close the '(' at column 1)\n"
              "  (MR + 1\n"
              "         ^");
  }
}

TEST(ExpressionErrors, ExpressionErrorIsAConfigErrorAndAnInvalidArgument) {
  EXPECT_THROW((void)Expression::parse("MR +"), ConfigError);
  EXPECT_THROW((void)Expression::parse("MR +"), std::invalid_argument);
}

TEST(ExpressionErrors, MultiLineInputKeepsTheCaretAligned) {
  try {
    (void)Expression::parse("MR\n+ $");
    FAIL() << "parsed without error";
  } catch (const ExpressionError& e) {
    const auto l = lines(e.what());
    ASSERT_EQ(l.size(), 3u);
    EXPECT_EQ(l[1], "  MR + $");
    EXPECT_EQ(l[2], "       ^");
    EXPECT_EQ(e.column(), 6u);
  }
}

TEST(ExpressionErrors, LongExpressionsAreShownAsAWindowAroundTheCaret) {
  std::string text = "A";
  for (int i = 0; i < 150; ++i) text += " + A";
  const std::string bad = text + " $" + text;  // '$' at column 603
  try {
    (void)Expression::parse(bad);
    FAIL() << "parsed without error";
  } catch (const ExpressionError& e) {
    EXPECT_EQ(e.column(), 603u);
    const auto l = lines(e.what());
    ASSERT_EQ(l.size(), 3u);
    EXPECT_LT(l[1].size(), 120u);
    EXPECT_EQ(l[1].substr(0, 5), "  ...");
    EXPECT_EQ(l[1].substr(l[1].size() - 3), "...");
    ASSERT_EQ(l[2].back(), '^');
    EXPECT_EQ(l[1][l[2].size() - 1], '$');
  }
  try {
    (void)Expression::parse(text + " +");  // end of expression: the caret after the last character
    FAIL() << "parsed without error";
  } catch (const ExpressionError& e) {
    const auto l = lines(e.what());
    ASSERT_EQ(l.size(), 3u);
    EXPECT_EQ(l[1].substr(l[1].size() - 4), " A +");
    EXPECT_EQ(l[2].size(), l[1].size() + 1);
  }
}

TEST(ExpressionErrors, DeepNestingIsAnErrorNotACrash) {
  EXPECT_EQ(eval(std::string(50, '(') + "1" + std::string(50, ')')), 1);
  EXPECT_EQ(eval(std::string(500, '-') + "1"), 1);
  std::string sum = "1";
  for (int i = 0; i < 500; ++i) sum += "+1";
  EXPECT_EQ(eval(sum), 501);

  EXPECT_THROW_CONTAINING((void)Expression::parse(std::string(100000, '(') + "1"), ExpressionError,
                          {"nested too deeply"});
  EXPECT_THROW_CONTAINING((void)Expression::parse(std::string(100000, '!') + "1"), ExpressionError,
                          {"nested too deeply"});
  std::string long_sum = "1";
  for (int i = 0; i < 100000; ++i) long_sum += "+1";
  EXPECT_THROW_CONTAINING((void)Expression::parse(long_sum), ExpressionError, {"nested too deeply"});
}

// --- defined names: constants and derived quantities ---

// A GPU-like set of definitions: device limits, then quantities derived from the parameters.
Definitions gpu_definitions() {
  Definitions d;
  d.emplace("max_threads_per_block", Expression::constant(1024));
  d.emplace("elem", Expression::constant(4));
  d.emplace("threads", Expression::parse("(BM/TM)*(BN/TN)", d));
  d.emplace("V", Expression::parse("TM*TN + TM + TN", d));
  d.emplace("registers", Expression::parse("threads * (3*V/2 + 16)", d));  // derived of derived
  return d;
}

TEST(ExpressionDefinitions, ConstantsStandForTheirValues) {
  const Definitions d = gpu_definitions();
  const Expression e = Expression::parse("BM*BK*elem <= 48 * 1024", d);
  EXPECT_EQ(e.names(), (std::vector<std::string>{"BM", "BK"}));
  EXPECT_EQ(e.defined_names(), (std::vector<std::string>{"elem"}));
  EXPECT_TRUE(e.holds({{"BM", 128}, {"BK", 96}}));  // 49152 bytes
  EXPECT_FALSE(e.holds({{"BM", 128}, {"BK", 97}}));
  EXPECT_EQ(e.text(), "BM*BK*elem <= 48 * 1024");
}

TEST(ExpressionDefinitions, DerivedNamesStandForTheirExpressionsAndReadTheirParameters) {
  const Definitions d = gpu_definitions();
  const Expression e = Expression::parse("threads <= max_threads_per_block && threads % 32 == 0", d);
  // The parameters read through `threads`, in order of first appearance; the defined names apart.
  EXPECT_EQ(e.names(), (std::vector<std::string>{"BM", "TM", "BN", "TN"}));
  EXPECT_EQ(e.defined_names(), (std::vector<std::string>{"threads", "max_threads_per_block"}));
  EXPECT_TRUE(e.holds({{"BM", 128}, {"BN", 128}, {"TM", 8}, {"TN", 8}}));   // 256 threads
  EXPECT_FALSE(e.holds({{"BM", 128}, {"BN", 128}, {"TM", 2}, {"TN", 2}}));  // 4096 threads
  EXPECT_FALSE(e.holds({{"BM", 32}, {"BN", 16}, {"TM", 8}, {"TN", 8}}));    // 8 threads: not a whole warp
}

TEST(ExpressionDefinitions, DerivedOfDerivedReadsTheParametersOfBoth) {
  const Definitions d = gpu_definitions();
  const Expression e = Expression::parse("registers <= 65536", d);
  EXPECT_EQ(e.names(), (std::vector<std::string>{"BM", "TM", "BN", "TN"}));
  EXPECT_EQ(e.defined_names(), (std::vector<std::string>{"registers"}));
  // 256 threads * (3*(64 + 8 + 8)/2 + 16) = 256 * 136 = 34816
  const Config c{{"BM", 128}, {"BN", 128}, {"TM", 8}, {"TN", 8}};
  EXPECT_EQ(Expression::parse("registers", d).evaluate(c), 34816);
  EXPECT_TRUE(e.holds(c));
  EXPECT_TRUE(e.holds({{"BM", 128}, {"BN", 128}, {"TM", 4}, {"TN", 8}}));   // 512 * (3*44/2 + 16) = 41984
  EXPECT_FALSE(e.holds({{"BM", 128}, {"BN", 128}, {"TM", 2}, {"TN", 4}}));  // 2048 * (3*14/2 + 16) = 75776
}

TEST(ExpressionDefinitions, ANameInADerivedQuantityComesFirstWhereTheQuantityIsUsed) {
  Definitions d;
  d.emplace("lanes", Expression::constant(16));
  d.emplace("NR", Expression::parse("NV*lanes", d));
  const Expression e = Expression::parse("MC % MR == 0 && NC % NR == 0", d);
  EXPECT_EQ(e.names(), (std::vector<std::string>{"MC", "MR", "NC", "NV"}));
  EXPECT_TRUE(e.holds({{"MC", 96}, {"MR", 12}, {"NC", 64}, {"NV", 2}}));
  EXPECT_FALSE(e.holds({{"MC", 96}, {"MR", 12}, {"NC", 48}, {"NV", 2}}));  // 48 % 32
}

TEST(ExpressionDefinitions, ConstantSubexpressionsAreComputedAtParseTime) {
  Definitions d;
  d.emplace("L1d", Expression::constant(49152));
  EXPECT_EQ(Expression::parse("L1d / 2", d).constant_value(), 24576);
  EXPECT_EQ(Expression::parse("2*3 + 4 < 11", d).constant_value(), 1);
  EXPECT_EQ(Expression::constant(-7).constant_value(), -7);
  EXPECT_EQ(Expression::constant(-7).text(), "-7");
  EXPECT_EQ(Expression::parse("MR + 1").constant_value(), std::nullopt);
  // What cannot be computed is left to evaluation, which reports it as before.
  const Expression zero = Expression::parse("1 / (L1d - 49152)", d);
  EXPECT_EQ(zero.constant_value(), std::nullopt);
  EXPECT_THROW_CONTAINING((void)zero.evaluate(Config{}), ConfigError, {"division by zero", "column 3"});
}

TEST(ExpressionDefinitions, AnErrorInsideADefinitionNamesTheDefinition) {
  const Definitions d = gpu_definitions();
  const Expression e = Expression::parse("threads <= max_threads_per_block", d);
  EXPECT_THROW_CONTAINING((void)e.evaluate({{"BM", 64}, {"BN", 64}, {"TM", 0}, {"TN", 8}}), ConfigError,
                          {"'threads <= max_threads_per_block'",
                           "division by zero at column 4 of threads = (BM/TM)*(BN/TN)", "TM=0"});
  EXPECT_THROW_CONTAINING((void)e.evaluate({{"BM", 64}, {"TM", 8}, {"TN", 8}}), ConfigError,
                          {"unknown parameter 'BN' at column 10 of threads = (BM/TM)*(BN/TN)"});
}

TEST(ExpressionDefinitions, ParseErrorsStillPointAtTheColumnOfTheText) {
  const Definitions d = gpu_definitions();
  try {
    (void)Expression::parse("threads <= (max_threads_per_block", d);
    FAIL() << "parsed without error";
  } catch (const ExpressionError& e) {
    EXPECT_EQ(e.column(), 34u) << e.what();  // one past the end
  }
}

TEST(ExpressionDefinitions, NestingThroughADefinitionCountsTowardsTheLimit) {
  std::string sum = "1";
  for (int i = 0; i < 600; ++i) sum += "+1";
  Definitions d;
  d.emplace("deep", Expression::parse(sum));  // 601 levels as written, one literal once folded
  EXPECT_EQ(d.at("deep").constant_value(), 601);
  std::string more = "deep";
  for (int i = 0; i < 300; ++i) more += "+1";
  EXPECT_EQ(Expression::parse(more, d).constant_value(), 901);
  for (int i = 0; i < 300; ++i) more += "+1";
  EXPECT_THROW_CONTAINING((void)Expression::parse(more, d), ExpressionError, {"nested too deeply"});
}

TEST(ExpressionEvaluate, ByPositionAgreesWithByName) {
  const Definitions d = gpu_definitions();
  const Expression e = Expression::parse("registers + BK * elem", d);
  ASSERT_EQ(e.names(), (std::vector<std::string>{"BM", "TM", "BN", "TN", "BK"}));
  const Config c{{"BM", 64}, {"BN", 128}, {"TM", 4}, {"TN", 8}, {"BK", 16}};
  const std::vector<ParamValue> values{64, 4, 128, 8, 16};
  EXPECT_EQ(e.evaluate(values), e.evaluate(c));
  EXPECT_EQ(e.evaluate(values), 256 * (3 * (32 + 4 + 8) / 2 + 16) + 64);
  const std::vector<ParamValue> too_few{64, 4};
  EXPECT_THROW((void)e.evaluate(too_few), std::invalid_argument);
  EXPECT_THROW_CONTAINING((void)Expression::parse("A / B").evaluate(std::vector<ParamValue>{1, 0}),
                          ConfigError, {"division by zero", "A=1 B=0"});
}

// --- as a SearchSpace constraint ---

TEST(ExpressionConstraint, ConstrainsASearchSpaceThroughRequire) {
  SearchSpace space;
  space.add("MC", {48, 96}, "rows of the A block")
      .add("MR", {4, 6, 8, 12, 14, 16}, "rows of the micro-tile")
      .add("NV", {1, 2, 3, 4}, "vectors per row");
  space.require("MC % MR == 0 && MR*NV + NV + 1 <= 32");

  ASSERT_EQ(space.constraints().size(), 1u);
  EXPECT_EQ(space.constraints()[0].uses, (std::vector<std::string>{"MC", "MR", "NV"}));
  EXPECT_TRUE(space.is_valid({{"MC", 96}, {"MR", 12}, {"NV", 2}}));
  EXPECT_TRUE(space.is_valid({{"MC", 48}, {"MR", 6}, {"NV", 4}}));
  EXPECT_FALSE(space.is_valid({{"MC", 96}, {"MR", 14}, {"NV", 2}}));  // 96 % 14 != 0
  EXPECT_FALSE(space.is_valid({{"MC", 48}, {"MR", 16}, {"NV", 2}}));  // 16*2 + 2 + 1 > 32
  EXPECT_THROW_CONTAINING(space.check({{"MC", 96}, {"MR", 16}, {"NV", 2}}), ConfigError,
                          {"MC % MR == 0 && MR*NV + NV + 1 <= 32"});
}

TEST(ExpressionConstraint, AnExpressionNamingAnUnknownParameterIsRejectedByRequire) {
  SearchSpace space;
  space.add("MR", {4, 8}, "rows");
  EXPECT_THROW(space.require("MR * NX <= 32"), std::logic_error);
}

}  // namespace
}  // namespace gemmlab
