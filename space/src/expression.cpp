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
//   name       := [A-Za-z_][A-Za-z0-9_]*    a defined name or a parameter
//
// Spaces, tabs and newlines separate tokens. The levels "or" .. "product" share one function,
// parse_binary(level), driven by the operator table kBinaryOps.
//
// The tree is built for evaluating many configurations: a defined name becomes a copy of its
// definition's tree, so evaluation never looks a definition up; a parameter becomes its index in
// names(), so evaluate(span) reads values by position; an operator whose operands are all
// literals becomes the literal it computes (constant folding), so "MR*KC*elem <= L1d / 2" is
// evaluated as "MR*KC*4 <= 24576".
//
// Evaluation follows C on int64: division truncates towards zero, comparisons and logical
// operators give 0 or 1, && and || do not evaluate their right side when the left decides.
// Where C has undefined behaviour (overflow, division by zero) evaluation throws ConfigError.
//
// Nesting is bounded (parentheses and tree depth, counted as written, before folding and with
// each definition at its own depth) so that the recursive parser, evaluator and destructor
// cannot exhaust the stack on hostile input.
#include "gemmlab/expression.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace gemmlab {

namespace {
// Where a node copied from a definition came from, for evaluation errors ("at column 4 of
// threads = BM/TM").
struct Origin {
  std::string name, text;
};
}  // namespace

struct Expression::Node {
  enum class Kind { Literal, Name, Unary, Binary };
  enum class Op { Or, And, Eq, Ne, Lt, Le, Gt, Ge, Add, Sub, Mul, Div, Mod, Neg, Not };

  Kind kind = Kind::Literal;
  Op op = Op::Add;                       // Unary, Binary
  ParamValue value = 0;                  // Literal
  std::size_t slot = 0;                  // Name: the parameter's index in names()
  std::size_t column = 0;                // 1-based column of the literal, name or operator
  std::shared_ptr<const Origin> origin;  // the definition whose text `column` is in; null: the expression's
  int depth = 1;                         // height of this subtree as written (before folding)
  std::unique_ptr<const Node> lhs, rhs;  // Unary: lhs only

  // The tree of an expression (a nested class may read its enclosing class's private members).
  static const Node& root(const Expression& e) { return *e.root_; }
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

// a op b (a op, for the unary operators) on int64 as in C, with C's undefined cases reported
// instead of computed. && and || here take both operands already evaluated.
enum class Fault { none, division_by_zero, overflow };
Fault apply(Op op, ParamValue a, ParamValue b, ParamValue& r) {
  switch (op) {
    case Op::Or: r = a != 0 || b != 0; return Fault::none;
    case Op::And: r = a != 0 && b != 0; return Fault::none;
    case Op::Eq: r = a == b; return Fault::none;
    case Op::Ne: r = a != b; return Fault::none;
    case Op::Lt: r = a < b; return Fault::none;
    case Op::Le: r = a <= b; return Fault::none;
    case Op::Gt: r = a > b; return Fault::none;
    case Op::Ge: r = a >= b; return Fault::none;
    case Op::Add: return __builtin_add_overflow(a, b, &r) ? Fault::overflow : Fault::none;
    case Op::Sub: return __builtin_sub_overflow(a, b, &r) ? Fault::overflow : Fault::none;
    case Op::Mul: return __builtin_mul_overflow(a, b, &r) ? Fault::overflow : Fault::none;
    case Op::Div:
    case Op::Mod:
      if (b == 0) return Fault::division_by_zero;
      if (b == -1) {  // INT64_MIN / -1 overflows; x % -1 is 0 (but undefined in C for INT64_MIN)
        if (op == Op::Mod) {
          r = 0;
          return Fault::none;
        }
        return __builtin_sub_overflow(ParamValue{0}, a, &r) ? Fault::overflow : Fault::none;
      }
      r = op == Op::Div ? a / b : a % b;
      return Fault::none;
    case Op::Neg: return __builtin_sub_overflow(ParamValue{0}, a, &r) ? Fault::overflow : Fault::none;
    case Op::Not: r = a == 0; return Fault::none;
  }
  throw std::logic_error("Expression: corrupt syntax tree");
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
  // Names found are added to `names` (parameters) and `defined_names` (names in `definitions`).
  Parser(std::string_view text, const Definitions& definitions, std::vector<std::string>& names,
         std::vector<std::string>& defined_names)
      : text_(text), definitions_(definitions), names_(names), defined_names_(defined_names) {
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

  // An operator node, or the literal it computes when its operands are literals (and computing
  // it raises no fault, which evaluation is left to report). A literal keeps the depth the
  // operator had, so the nesting limit applies to the text as written.
  std::unique_ptr<const Node> make(Node::Kind kind, Op op, std::size_t column, std::unique_ptr<const Node> lhs,
                                   std::unique_ptr<const Node> rhs = nullptr) const {
    const int depth = 1 + std::max(lhs->depth, rhs ? rhs->depth : 0);
    if (depth > kMaxDepth)
      fail("expression nested too deeply", column, cat("more than ", std::to_string(kMaxDepth), " levels"));
    auto node = std::make_unique<Node>();
    node->column = column;
    node->depth = depth;
    ParamValue folded = 0;
    if (lhs->kind == Node::Kind::Literal && (!rhs || rhs->kind == Node::Kind::Literal) &&
        apply(op, lhs->value, rhs ? rhs->value : 0, folded) == Fault::none) {
      node->kind = Node::Kind::Literal;
      node->value = folded;
      return node;
    }
    node->kind = kind;
    node->op = op;
    node->lhs = std::move(lhs);
    node->rhs = std::move(rhs);
    return node;
  }

  // The index of parameter `name` in names_, adding it if new.
  std::size_t slot(std::string_view name) {
    const auto it = std::find(names_.begin(), names_.end(), name);
    if (it != names_.end()) return static_cast<std::size_t>(it - names_.begin());
    names_.emplace_back(name);
    return names_.size() - 1;
  }

  // A copy of a definition's tree, its parameters renumbered as slots of this expression and its
  // own nodes marked as coming from the definition (nodes it copied from earlier definitions keep
  // theirs).
  std::unique_ptr<const Node> copy(const Node& n, const Expression& definition,
                                   const std::shared_ptr<const Origin>& origin) {
    auto node = std::make_unique<Node>();
    node->kind = n.kind;
    node->op = n.op;
    node->value = n.value;
    node->column = n.column;
    node->origin = n.origin ? n.origin : origin;
    node->depth = n.depth;
    if (n.kind == Node::Kind::Name) node->slot = slot(definition.names()[n.slot]);
    if (n.lhs) node->lhs = copy(*n.lhs, definition, origin);
    if (n.rhs) node->rhs = copy(*n.rhs, definition, origin);
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
      case Tok::Name: {
        const std::string_view name = tok_.text;
        advance();
        if (const auto it = definitions_.find(name); it != definitions_.end()) {
          if (std::find(defined_names_.begin(), defined_names_.end(), name) == defined_names_.end())
            defined_names_.emplace_back(name);
          const Expression& definition = it->second;
          for (const auto& parameter : definition.names()) slot(parameter);  // in the definition's order
          const auto origin = std::make_shared<const Origin>(Origin{it->first, definition.text()});
          return copy(Node::root(definition), definition, origin);
        }
        node->kind = Node::Kind::Name;
        node->slot = slot(name);
        return node;
      }
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
  const Definitions& definitions_;
  std::vector<std::string>& names_;
  std::vector<std::string>& defined_names_;
  std::size_t pos_ = 0;
  Token tok_;
  int parentheses_ = 0;
};

// --- evaluation ---

// Parameter values by position (evaluate(span)): no lookup, no failure.
struct ValuesByPosition {
  std::span<const ParamValue> values;
  const std::vector<std::string>& names;

  ParamValue operator()(const Node& n) const { return values[n.slot]; }
  Config used() const {
    Config out;
    for (std::size_t i = 0; i < names.size(); ++i) out[names[i]] = values[i];
    return out;
  }
};

// Parameter values looked up by name (evaluate(Config)): a name the configuration lacks is found
// only when evaluation reaches it, so "0 && UNBOUND" is 0.
struct ValuesByName {
  const Config& config;
  const std::vector<std::string>& names;

  const ParamValue* find(const Node& n) const {
    const auto it = config.find(names[n.slot]);
    return it == config.end() ? nullptr : &it->second;
  }
  Config used() const {
    Config out;
    for (const auto& name : names)
      if (const auto it = config.find(name); it != config.end()) out.insert(*it);
    return out;
  }
  // What the configuration has instead, for the message about a name it lacks.
  std::string known() const {
    if (config.empty()) return "the configuration is empty";
    std::string out = "the configuration has";
    for (const auto& entry : config) out.append(" ").append(entry.first);
    return out;
  }
};

template <class Values>
class Evaluator {
 public:
  Evaluator(const std::string& text, Values values) : text_(text), values_(values) {}

  ParamValue operator()(const Node& n) const {
    switch (n.kind) {
      case Node::Kind::Literal: return n.value;
      case Node::Kind::Name: return name(n);
      case Node::Kind::Unary: return compute(n, (*this)(*n.lhs), 0);
      case Node::Kind::Binary:
        // && and || decide on the left operand where they can, as in C.
        if (n.op == Op::And) return (*this)(*n.lhs) != 0 && (*this)(*n.rhs) != 0;
        if (n.op == Op::Or) return (*this)(*n.lhs) != 0 || (*this)(*n.rhs) != 0;
        return compute(n, (*this)(*n.lhs), (*this)(*n.rhs));
    }
    throw std::logic_error("Expression: corrupt syntax tree");
  }

 private:
  ParamValue name(const Node& n) const {
    if constexpr (std::is_same_v<Values, ValuesByName>) {
      const ParamValue* value = values_.find(n);
      if (value == nullptr)
        fail(cat("unknown parameter ", quote(values_.names[n.slot]), " ", where(n), " (", values_.known(), ")"));
      return *value;
    } else {
      return values_(n);
    }
  }

  ParamValue compute(const Node& n, ParamValue a, ParamValue b) const {
    ParamValue r = 0;
    switch (apply(n.op, a, b, r)) {
      case Fault::none: return r;
      case Fault::division_by_zero:
        fail(cat(n.op == Op::Div ? "division" : "modulo", " by zero ", where(n), used()));
      case Fault::overflow:
        fail(cat("integer overflow in ",
                 n.kind == Node::Kind::Unary ? cat("-(", std::to_string(a), ")")
                                             : cat(std::to_string(a), " ", symbol(n.op), " ", std::to_string(b)),
                 " ", where(n), used()));
    }
    throw std::logic_error("Expression: corrupt syntax tree");
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(cat("expression ", quote(text_), ": ", what));
  }

  // "at column 4", and " of threads = BM/TM" when the node came from a definition.
  static std::string where(const Node& n) {
    return cat("at column ", std::to_string(n.column),
               n.origin ? cat(" of ", n.origin->name, " = ", n.origin->text) : std::string());
  }
  // " (MR=8 NV=0)": the values of the expression's parameters, for error messages.
  std::string used() const {
    const Config config = values_.used();
    return config.empty() ? "" : cat(" (", to_string(config), ")");
  }

  const std::string& text_;
  Values values_;
};

}  // namespace

ExpressionError::ExpressionError(std::string_view problem, std::string_view text, std::size_t column,
                                 std::string_view note)
    : ConfigError(error_message(problem, text, column, note)), column_(column) {}

Expression Expression::parse(std::string_view text) { return parse(text, Definitions{}); }

Expression Expression::parse(std::string_view text, const Definitions& definitions) {
  Expression e;
  e.text_ = std::string(text);
  e.root_ = Parser(text, definitions, e.names_, e.defined_names_).parse();
  return e;
}

Expression Expression::constant(ParamValue value) {
  Expression e;
  e.text_ = std::to_string(value);
  auto node = std::make_shared<Node>();
  node->value = value;
  node->column = 1;
  e.root_ = std::move(node);
  return e;
}

std::optional<ParamValue> Expression::constant_value() const {
  if (root_->kind == Node::Kind::Literal) return root_->value;
  return std::nullopt;
}

ParamValue Expression::evaluate(const Config& config) const {
  return Evaluator<ValuesByName>(text_, ValuesByName{config, names_})(*root_);
}

ParamValue Expression::evaluate(std::span<const ParamValue> values) const {
  if (values.size() < names_.size())
    throw std::invalid_argument(cat("expression ", quote(text_), ": ", std::to_string(values.size()),
                                    " values for ", std::to_string(names_.size()), " parameters"));
  return Evaluator<ValuesByPosition>(text_, ValuesByPosition{values, names_})(*root_);
}

}  // namespace gemmlab
