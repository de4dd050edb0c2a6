// Constraint expressions: the textual form of a search-space constraint, as given on the command
// line or in a file, e.g. "MC % MR == 0 && MR*NV + NV + 1 <= 32".
//
// Integer arithmetic over parameter names with C's operators and precedence (+ - * / % with
// truncating division, comparisons and && || ! yielding 0/1, && and || short-circuiting).
// Parsing errors point at the offending column; evaluation errors (division by zero, overflow,
// a name the configuration lacks) are ConfigErrors quoting the expression.
//
//   const Expression e = Expression::parse("MC % MR == 0");
//   space.constrain(e.text(), e.names(), [e](const Config& c) { return e.holds(c); });
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gemmlab/space.hpp"

namespace gemmlab {

// A malformed expression. what() reads
//   invalid expression: expected ')' at column 8 (to close the '(' at column 1)
//     (MR + 1
//            ^
// column() is 1-based; it is one past the last character when the expression ends too early.
// A long expression is shown as a window of about 100 characters around the column.
class ExpressionError : public ConfigError {
 public:
  // "invalid expression: <problem> at column <column> (<note>)", then the caret lines.
  ExpressionError(std::string_view problem, std::string_view text, std::size_t column,
                  std::string_view note = {});
  std::size_t column() const { return column_; }

 private:
  std::size_t column_;
};

class Expression {
 public:
  struct Node;  // the syntax tree, defined in expression.cpp

  // Throws ExpressionError for a malformed expression.
  static Expression parse(std::string_view text);

  // The value, with booleans as 0/1 as in C. Throws ConfigError on division or modulo by zero,
  // on integer overflow, and for a name that `config` does not define.
  ParamValue evaluate(const Config& config) const;
  bool holds(const Config& config) const { return evaluate(config) != 0; }

  // The distinct parameter names used, in order of first appearance.
  const std::vector<std::string>& names() const { return names_; }
  // The expression as given.
  const std::string& text() const { return text_; }

 private:
  Expression() = default;

  std::string text_;
  std::vector<std::string> names_;
  std::shared_ptr<const Node> root_;  // immutable and shared, so copies are cheap
};

}  // namespace gemmlab
