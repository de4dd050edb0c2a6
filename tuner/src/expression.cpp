// Constraint expressions: a recursive-descent parser to a small syntax tree, and its evaluator.
//
// Grammar, lowest precedence first (as in C); binary operators associate to the left:
//
//   expression := or
//   or         := and      { "||" and }
//   and        := equality { "&&" equality }
//   equality   := relation { ("==" | "!=") relation }
//   relation   := sum      { ("<" | "<=" | ">" | ">=") sum }
//   sum        := product  { ("+" | "-") product }
//   product    := unary    { ("*" | "/" | "%") unary }
//   unary      := { "!" | "-" } primary
//   primary    := integer | name | "(" expression ")"
//   integer    := [0-9]+                    decimal, fits in int64, no leading zero
//   name       := [A-Za-z_][A-Za-z0-9_]*    a parameter
//
// Spaces, tabs and newlines separate tokens. The levels "or" .. "product" share one function,
// parse_binary(level), driven by the operator table kBinaryOps.
//
// Evaluation follows C on int64: division truncates towards zero, comparisons and logical
// operators give 0 or 1, && and || do not evaluate their right side when the left decides.
// Where C has undefined behaviour (overflow, division by zero) evaluation throws ConfigError.
//
// Nesting is bounded (parentheses and tree depth) so that the recursive parser, evaluator and
// destructor cannot exhaust the stack on hostile input.
#include "gemmlab/expression.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <utility>

namespace gemmlab {

struct Expression::Node {
  enum class Kind { Literal, Name, Unary, Binary };
  enum class Op { Or, And, Eq, Ne, Lt, Le, Gt, Ge, Add, Sub, Mul, Div, Mod, Neg, Not };

  Kind kind = Kind::Literal;
  Op op = Op::Add;                      // Unary, Binary
  ParamValue value = 0;                 // Literal
  std::string name;                     // Name
  std::size_t column = 0;               // 1-based column of the literal, name or operator
  int depth = 1;                        // height of this subtree
  std::unique_ptr<const Node> lhs, rhs;  // Unary: lhs only
};

namespace {

using Node = Expression::Node;
using Op = Node::Op;

constexpr int kMaxParentheses = 100;  // nesting of "(": each level is 8 parser frames
constexpr int kMaxDepth = 1000;       // height of the syntax tree

struct BinaryOp {
  std::string_view symbol;
  Op op;
  int level;  // 0 = loosest (||)
};
constexpr BinaryOp kBinaryOps[] = {
    {"||", Op::Or, 0}, {"&&", Op::And, 1},                                      //
    {"==", Op::Eq, 2}, {"!=", Op::Ne, 2},                                       //
    {"<", Op::Lt, 3},  {"<=", Op::Le, 3}, {">", Op::Gt, 3}, {">=", Op::Ge, 3},  //
    {"+", Op::Add, 4}, {"-", Op::Sub, 4},                                       //
    {"*", Op::Mul, 5}, {"/", Op::Div, 5}, {"%", Op::Mod, 5}};
constexpr int kBinaryLevels = 6;

std::string_view symbol(Op op) {
  if (op == Op::Neg) return "-";
  if (op == Op::Not) return "!";
  for (const auto& b : kBinaryOps)
    if (b.op == op) return b.symbol;
  return "?";
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
bool is_printable(char c) { return c >= 0x20 && c <= 0x7e; }

// Concatenation by appending (which also avoids GCC 12's false -Wrestrict on "..." + string&&).
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}
std::string quote(std::string_view text) { return cat("'", text, "'"); }

// The expression as one line in which every byte takes one column, so a caret can sit under
// any of them: whitespace becomes a space, other non-printable bytes (and UTF-8) a '?'.
std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (!is_printable(c)) c = is_space(c) ? ' ' : '?';
  return out;
}

std::string describe_char(char c) {
  if (is_printable(c)) return cat("character ", quote(std::string_view(&c, 1)));
  constexpr char hex[] = "0123456789abcdef";
  const auto byte = static_cast<unsigned char>(c);
  return std::string("byte 0x") + hex[byte >> 4] + hex[byte & 15];
}

std::string error_message(std::string_view problem, std::string_view text, std::size_t column,
                          std::string_view note) {
  // A long expression is shown as a window of kShown characters around the column.
  constexpr std::size_t kShown = 100;
  const std::size_t index = std::min(column > 0 ? column - 1 : 0, text.size());
  std::size_t begin = 0;
  if (text.size() > kShown && index > kShown / 2) begin = std::min(index - kShown / 2, text.size() - kShown);
  const std::size_t end = std::min(text.size(), begin + kShown);
  const std::string_view before = begin > 0 ? "..." : "";
  return cat("invalid expression: ", problem, " at column ", std::to_string(column),
             note.empty() ? "" : cat(" (", note, ")"), "\n  ", before, one_line(text.substr(begin, end - begin)),
             end < text.size() ? "..." : "", "\n  ", std::string(before.size() + index - begin, ' '), "^");
}

enum class Tok { End, Number, Name, Operator, LParen, RParen };

struct Token {
  Tok kind = Tok::End;
  std::string_view text;  // empty for End
  std::size_t column = 1;
  ParamValue value = 0;   // Number
};

class Parser {
 public:
  Parser(std::string_view text, std::vector<std::string>& names) : text_(text), names_(names) {
    advance();
  }

  std::unique_ptr<const Node> parse() {
    if (tok_.kind == Tok::End) fail("empty expression", tok_.column);
    auto root = parse_binary(0);
    if (tok_.kind == Tok::RParen) fail("unmatched ')'", tok_.column);
    if (tok_.kind != Tok::End)
      fail(cat("unexpected ", describe(tok_)), tok_.column, "expected an operator or the end of the expression");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& problem, std::size_t column, std::string_view note = {}) const {
    throw ExpressionError(problem, text_, column, note);
  }

  static std::string describe(const Token& t) {
    return t.kind == Tok::End ? "end of expression" : quote(t.text);
  }

  // --- lexer: reads the next token into tok_ ---
  void advance() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
    const std::size_t start = pos_;
    tok_ = Token{Tok::End, {}, start + 1, 0};
    if (pos_ == text_.size()) return;

    const char c = text_[pos_];
    if (is_digit(c)) return lex_number();
    if (is_name_start(c)) {
      while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
      tok_ = Token{Tok::Name, text_.substr(start, pos_ - start), start + 1, 0};
      return;
    }
    for (std::string_view two : {"&&", "||", "==", "!=", "<=", ">="})
      if (text_.substr(pos_, 2) == two) {
        pos_ += 2;
        tok_ = Token{Tok::Operator, two, start + 1, 0};
        return;
      }
    switch (c) {
      case '(': tok_.kind = Tok::LParen; break;
      case ')': tok_.kind = Tok::RParen; break;
      case '+': case '-': case '*': case '/': case '%': case '<': case '>': case '!':
        tok_.kind = Tok::Operator;
        break;
      case '=': fail("unexpected '='", tok_.column, "did you mean '=='?");
      case '&': fail("unexpected '&'", tok_.column, "did you mean '&&'?");
      case '|': fail("unexpected '|'", tok_.column, "did you mean '||'?");
      default: fail(cat("unexpected ", describe_char(c)), tok_.column);
    }
    tok_.text = text_.substr(pos_++, 1);
  }

  void lex_number() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    const std::string_view literal = text_.substr(start, pos_ - start);
    const std::string quoted = quote(literal);
    if (!std::all_of(literal.begin(), literal.end(), is_digit))
      fail(cat("invalid number ", quoted), start + 1, "numbers are decimal integers");
    if (literal.size() > 1 && literal[0] == '0')
      fail(cat("invalid number ", quoted), start + 1, "leading zero; C would read it as octal");
    ParamValue value = 0;
    const auto [end, ec] = std::from_chars(literal.data(), literal.data() + literal.size(), value);
    if (ec != std::errc() || end != literal.data() + literal.size())
      fail(cat("number ", quoted, " too large"), start + 1,
           cat("the largest is ", std::to_string(std::numeric_limits<ParamValue>::max())));
    tok_ = Token{Tok::Number, literal, start + 1, value};
  }

  // --- parser ---
  bool is_operator(std::string_view symbol) const { return tok_.kind == Tok::Operator && tok_.text == symbol; }

  const BinaryOp* binary_operator(int level) const {
    if (tok_.kind != Tok::Operator) return nullptr;
    for (const auto& b : kBinaryOps)
      if (b.level == level && b.symbol == tok_.text) return &b;
    return nullptr;
  }

  std::unique_ptr<const Node> make(Node::Kind kind, Op op, std::size_t column, std::unique_ptr<const Node> lhs,
                                   std::unique_ptr<const Node> rhs = nullptr) const {
    auto node = std::make_unique<Node>();
    node->kind = kind;
    node->op = op;
    node->column = column;
    node->depth = 1 + std::max(lhs->depth, rhs ? rhs->depth : 0);
    if (node->depth > kMaxDepth)
      fail("expression nested too deeply", column, cat("more than ", std::to_string(kMaxDepth), " levels"));
    node->lhs = std::move(lhs);
    node->rhs = std::move(rhs);
    return node;
  }

  // or .. product: operand { operator-of-this-level operand }, left-associative.
  std::unique_ptr<const Node> parse_binary(int level) {
    if (level == kBinaryLevels) return parse_unary();
    auto lhs = parse_binary(level + 1);
    while (const BinaryOp* b = binary_operator(level)) {
      const std::size_t column = tok_.column;
      advance();
      lhs = make(Node::Kind::Binary, b->op, column, std::move(lhs), parse_binary(level + 1));
    }
    return lhs;
  }

  // { "!" | "-" } primary, as a loop so that "!!!!x" costs no recursion.
  std::unique_ptr<const Node> parse_unary() {
    std::vector<std::pair<Op, std::size_t>> prefix;
    while (is_operator("!") || is_operator("-")) {
      prefix.emplace_back(tok_.text == "!" ? Op::Not : Op::Neg, tok_.column);
      advance();
    }
    auto operand = parse_primary();
    for (auto it = prefix.rbegin(); it != prefix.rend(); ++it)
      operand = make(Node::Kind::Unary, it->first, it->second, std::move(operand));
    return operand;
  }

  std::unique_ptr<const Node> parse_primary() {
    auto node = std::make_unique<Node>();
    node->column = tok_.column;
    switch (tok_.kind) {
      case Tok::Number:
        node->kind = Node::Kind::Literal;
        node->value = tok_.value;
        advance();
        return node;
      case Tok::Name:
        node->kind = Node::Kind::Name;
        node->name = std::string(tok_.text);
        if (std::find(names_.begin(), names_.end(), node->name) == names_.end()) names_.push_back(node->name);
        advance();
        return node;
      case Tok::LParen: {
        const std::size_t open = tok_.column;
        if (++parentheses_ > kMaxParentheses)
          fail("parentheses nested too deeply", open, cat("more than ", std::to_string(kMaxParentheses), " levels"));
        advance();
        auto inner = parse_binary(0);
        if (tok_.kind != Tok::RParen)
          fail("expected ')'", tok_.column, cat("to close the '(' at column ", std::to_string(open)));
        --parentheses_;
        advance();
        return inner;
      }
      default:
        fail(cat("unexpected ", describe(tok_)), tok_.column, "expected a number, a parameter name or '('");
    }
  }

  std::string_view text_;
  std::vector<std::string>& names_;
  std::size_t pos_ = 0;
  Token tok_;
  int parentheses_ = 0;
};

// --- evaluation ---

class Evaluator {
 public:
  Evaluator(const Expression& expression, const Config& config) : expression_(expression), config_(config) {}

  ParamValue operator()(const Node& n) const {
    switch (n.kind) {
      case Node::Kind::Literal: return n.value;
      case Node::Kind::Name: {
        const auto it = config_.find(n.name);
        if (it == config_.end())
          fail(cat("unknown parameter ", quote(n.name), " at column ", std::to_string(n.column), " (",
                   known_names(), ")"));
        return it->second;
      }
      case Node::Kind::Unary: {
        const ParamValue v = (*this)(*n.lhs);
        if (n.op == Op::Not) return v == 0;
        ParamValue r = 0;
        if (__builtin_sub_overflow(ParamValue{0}, v, &r)) overflow(n, cat("-(", std::to_string(v), ")"));
        return r;
      }
      case Node::Kind::Binary: return binary(n);
    }
    throw std::logic_error("Expression: corrupt syntax tree");
  }

 private:
  ParamValue binary(const Node& n) const {
    if (n.op == Op::And) return (*this)(*n.lhs) != 0 && (*this)(*n.rhs) != 0;
    if (n.op == Op::Or) return (*this)(*n.lhs) != 0 || (*this)(*n.rhs) != 0;
    const ParamValue a = (*this)(*n.lhs);
    const ParamValue b = (*this)(*n.rhs);
    ParamValue r = 0;
    bool overflowed = false;
    switch (n.op) {
      case Op::Add: overflowed = __builtin_add_overflow(a, b, &r); break;
      case Op::Sub: overflowed = __builtin_sub_overflow(a, b, &r); break;
      case Op::Mul: overflowed = __builtin_mul_overflow(a, b, &r); break;
      case Op::Div:
      case Op::Mod:
        if (b == 0)
          fail(cat(n.op == Op::Div ? "division" : "modulo", " by zero at column ", std::to_string(n.column),
                   values()));
        if (b == -1) {  // INT64_MIN / -1 overflows; x % -1 is 0 (but undefined in C for INT64_MIN)
          if (n.op == Op::Mod) return 0;
          overflowed = __builtin_sub_overflow(ParamValue{0}, a, &r);
        } else {
          r = n.op == Op::Div ? a / b : a % b;
        }
        break;
      case Op::Eq: return a == b;
      case Op::Ne: return a != b;
      case Op::Lt: return a < b;
      case Op::Le: return a <= b;
      case Op::Gt: return a > b;
      case Op::Ge: return a >= b;
      default: throw std::logic_error("Expression: corrupt syntax tree");
    }
    if (overflowed)
      overflow(n, cat(std::to_string(a), " ", symbol(n.op), " ", std::to_string(b)));
    return r;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(cat("expression ", quote(expression_.text()), ": ", what));
  }
  [[noreturn]] void overflow(const Node& n, const std::string& operation) const {
    fail(cat("integer overflow in ", operation, " at column ", std::to_string(n.column), values()));
  }

  // " (MR=8 NV=0)": the values of the expression's parameters, for error messages.
  std::string values() const {
    Config used;
    for (const auto& name : expression_.names())
      if (const auto it = config_.find(name); it != config_.end()) used.insert(*it);
    return used.empty() ? "" : cat(" (", to_string(used), ")");
  }
  std::string known_names() const {
    if (config_.empty()) return "the configuration is empty";
    std::string out = "the configuration has";
    for (const auto& entry : config_) out.append(" ").append(entry.first);
    return out;
  }

  const Expression& expression_;
  const Config& config_;
};

}  // namespace

ExpressionError::ExpressionError(std::string_view problem, std::string_view text, std::size_t column,
                                 std::string_view note)
    : ConfigError(error_message(problem, text, column, note)), column_(column) {}

Expression Expression::parse(std::string_view text) {
  Expression e;
  e.text_ = std::string(text);
  e.root_ = Parser(text, e.names_).parse();
  return e;
}

ParamValue Expression::evaluate(const Config& config) const { return Evaluator(*this, config)(*root_); }

}  // namespace gemmlab
