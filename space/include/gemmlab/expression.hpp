// Constraint expressions: the textual form of a search-space constraint, as a kernel declares it
// or a user gives it on the command line, e.g. "MC % MR == 0 && MR*NV + NV + 1 <= 32".
//
// Integer arithmetic over names with C's operators and precedence (+ - * / % with truncating
// division, comparisons and && || ! yielding 0/1, && and || short-circuiting). A name is either
// defined (see Definitions: a constant such as a device limit, or an expression over parameters
// such as a derived tile size) or a parameter, whose value comes from the configuration at
// evaluation. Parsing errors point at the offending column; evaluation errors (division by zero,
// overflow, a parameter the configuration lacks) are ConfigErrors quoting the expression.
//
//   Definitions defs;
//   defs.emplace("lanes", Expression::constant(16));
//   defs.emplace("NR", Expression::parse("NV*lanes", defs));
//   const Expression e = Expression::parse("MC % MR == 0 && NC % NR == 0", defs);
//   e.names();                                             // {"MC", "MR", "NC", "NV"}
//   e.holds({{"MC", 96}, {"MR", 12}, {"NC", 64}, {"NV", 2}});  // true: 96 % 12 == 0, 64 % 32 == 0
//
// Most code does not use this header directly: SearchSpace::let/derive/require (space.hpp) keep
// the definitions and parse the constraints.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gemmlab/config.hpp"

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

class Expression;

// Names an expression may use besides the parameters, each standing for an expression: a
// constant (Expression::constant) or one over parameters and earlier names (a derived quantity).
// A parse replaces each defined name by its definition, so the result reads only parameters.
using Definitions = std::map<std::string, Expression, std::less<>>;

class Expression {
 public:
  struct Node;  // the syntax tree, defined in expression.cpp

  // Throws ExpressionError for a malformed expression. Names in `definitions` stand for their
  // definitions; every other name is a parameter. Subexpressions of constants alone are computed
  // here, once ("L1d / 2" becomes 24576), except where that would divide by zero or overflow:
  // those stay, to fail at evaluation as they would unfolded.
  static Expression parse(std::string_view text);
  static Expression parse(std::string_view text, const Definitions& definitions);
  // The expression "<value>", for a constant definition.
  static Expression constant(ParamValue value);

  // The value, with booleans as 0/1 as in C. Throws ConfigError on division or modulo by zero,
  // on integer overflow, and for a parameter that `config` does not define.
  ParamValue evaluate(const Config& config) const;
  bool holds(const Config& config) const { return evaluate(config) != 0; }
  // The same with the parameters given by position: values[i] is the value of names()[i]. No
  // lookup by name, for code that evaluates many configurations (the space's enumeration).
  ParamValue evaluate(std::span<const ParamValue> values) const;

  // The distinct parameters read, in order of first appearance, including those read through
  // defined names ("threads <= 1024" with threads = (BM/TM)*(BN/TN) reads BM, TM, BN, TN).
  const std::vector<std::string>& names() const { return names_; }
  // The distinct defined names the text itself uses, in order of first appearance.
  const std::vector<std::string>& defined_names() const { return defined_names_; }
  // The value when the expression reads no parameter and was computed at parse time.
  std::optional<ParamValue> constant_value() const;
  // The expression as given.
  const std::string& text() const { return text_; }

 private:
  Expression() = default;

  std::string text_;
  std::vector<std::string> names_;
  std::vector<std::string> defined_names_;
  std::shared_ptr<const Node> root_;  // immutable and shared, so copies are cheap
};

}  // namespace gemmlab
