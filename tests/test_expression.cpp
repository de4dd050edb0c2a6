// Constraint expressions: C precedence and integer semantics, short-circuiting, the names an
// expression uses, evaluation errors, malformed input reported at its column, and use as a
// SearchSpace constraint.
#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemmlab/expression.hpp"
#include "gemmlab/space.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

constexpr ParamValue kMax = std::numeric_limits<ParamValue>::max();
constexpr ParamValue kMin = std::numeric_limits<ParamValue>::min();

ParamValue eval(const std::string& text, const Config& config = {}) {
  return Expression::parse(text).evaluate(config);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// --- precedence, associativity and C semantics ---

TEST(ExpressionPrecedence, MultiplicationBindsTighterThanAddition) {
  EXPECT_EQ(eval("2+3*4"), 14);
  EXPECT_EQ(eval("(2+3)*4"), 20);
  EXPECT_EQ(eval("2*3+4"), 10);
  EXPECT_EQ(eval("2*3%4"), 2);  // (2*3)%4, left to right
  EXPECT_EQ(eval("1 + 10 % 4"), 3);
}

TEST(ExpressionPrecedence, BinaryOperatorsAssociateToTheLeft) {
  EXPECT_EQ(eval("10-4-3"), 3);
  EXPECT_EQ(eval("100/10/5"), 2);
  EXPECT_EQ(eval("3 > 2 > 1"), 0);  // (3 > 2) > 1 == 1 > 1, as in C
  EXPECT_EQ(eval("2 == 2 == 1"), 1);
}

TEST(ExpressionPrecedence, DivisionAndModuloTruncateTowardsZeroAsInC) {
  EXPECT_EQ(eval("20/3"), 6);
  EXPECT_EQ(eval("-7/2"), -3);
  EXPECT_EQ(eval("7/-2"), -3);
  EXPECT_EQ(eval("-7 % 3"), -1);
  EXPECT_EQ(eval("7 % -3"), 1);
  EXPECT_EQ(eval("-7 % -3"), -1);
}

TEST(ExpressionPrecedence, UnaryOperatorsBindTightest) {
  EXPECT_EQ(eval("!0"), 1);
  EXPECT_EQ(eval("!5"), 0);
  EXPECT_EQ(eval("!!7"), 1);
  EXPECT_EQ(eval("-2*-3"), 6);
  EXPECT_EQ(eval("- -3"), 3);
  EXPECT_EQ(eval("1 - -1"), 2);
  EXPECT_EQ(eval("-(2+3)"), -5);
  EXPECT_EQ(eval("!1 == 0"), 1);  // (!1) == 0
  EXPECT_EQ(eval("-2 * 3 + 1"), -5);
}

TEST(ExpressionPrecedence, ComparisonsBindTighterThanEqualityAndLogicalOperatorsLoosest) {
  EXPECT_EQ(eval("1 < 2 == 1"), 1);  // (1 < 2) == 1
  EXPECT_EQ(eval("2 == 1 < 2"), 0);  // 2 == (1 < 2)
  EXPECT_EQ(eval("1 + 2 < 4"), 1);
  EXPECT_EQ(eval("1 || 0 && 0"), 1);  // 1 || (0 && 0)
  EXPECT_EQ(eval("(1 || 0) && 0"), 0);
  EXPECT_EQ(eval("1 == 1 && 2 != 3"), 1);
  EXPECT_EQ(eval("4 <= 4 && 4 >= 5"), 0);
}

TEST(ExpressionPrecedence, ComparisonsAndLogicalOperatorsYieldZeroOrOne) {
  EXPECT_EQ(eval("5 > 2"), 1);
  EXPECT_EQ(eval("5 < 2"), 0);
  EXPECT_EQ(eval("7 && 9"), 1);
  EXPECT_EQ(eval("0 || -4"), 1);
  EXPECT_EQ(eval("0 || 0"), 0);
  EXPECT_EQ(eval("42"), 42);
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

// --- as a SearchSpace constraint ---

TEST(ExpressionConstraint, ConstrainsASearchSpaceThroughTheExistingApi) {
  SearchSpace space;
  space.add("MC", {48, 96}, "rows of the A block")
      .add("MR", {4, 6, 8, 12, 14, 16}, "rows of the micro-tile")
      .add("NV", {1, 2, 3, 4}, "vectors per row");
  const Expression expr = Expression::parse("MC % MR == 0 && MR*NV + NV + 1 <= 32");
  space.constrain(expr.text(), expr.names(), [expr](const Config& c) { return expr.holds(c); });

  ASSERT_EQ(space.constraints().size(), 1u);
  EXPECT_EQ(space.constraints()[0].uses, (std::vector<std::string>{"MC", "MR", "NV"}));
  EXPECT_TRUE(space.is_valid({{"MC", 96}, {"MR", 12}, {"NV", 2}}));
  EXPECT_TRUE(space.is_valid({{"MC", 48}, {"MR", 6}, {"NV", 4}}));
  EXPECT_FALSE(space.is_valid({{"MC", 96}, {"MR", 14}, {"NV", 2}}));  // 96 % 14 != 0
  EXPECT_FALSE(space.is_valid({{"MC", 48}, {"MR", 16}, {"NV", 2}}));  // 16*2 + 2 + 1 > 32
  EXPECT_THROW_CONTAINING(space.check({{"MC", 96}, {"MR", 16}, {"NV", 2}}), ConfigError,
                          {"MC % MR == 0 && MR*NV + NV + 1 <= 32"});
}

TEST(ExpressionConstraint, AnExpressionNamingAnUnknownParameterIsRejectedByConstrain) {
  SearchSpace space;
  space.add("MR", {4, 8}, "rows");
  const Expression expr = Expression::parse("MR * NX <= 32");
  EXPECT_THROW(space.constrain(expr.text(), expr.names(), [expr](const Config& c) { return expr.holds(c); }),
               std::logic_error);
}

}  // namespace
}  // namespace gemmlab
