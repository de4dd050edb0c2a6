// The PTX parser (gemmlab/ptx.hpp): a tokenizer, then one recursive-descent pass over the module.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <utility>

#include "gemmlab/ptx.hpp"

namespace gemmlab::ptx {

std::string Instruction::form() const {
  std::string out = opcode;
  for (const auto& m : modifiers) out += "." + m;
  return out;
}

bool Instruction::has(std::string_view modifier) const {
  for (const auto& m : modifiers)
    if (m == modifier) return true;
  return false;
}

const Kernel& Module::kernel(const std::string& name) const {
  std::string names;
  for (const Kernel& k : kernels) {
    if (k.name == name) return k;
    names += (names.empty() ? "" : ", ") + k.name;
  }
  throw ParseError("the module has no kernel " + name + "; it has: " + (names.empty() ? "none" : names));
}

namespace {

struct Token {
  enum class Kind { word, number, string, punct, end };
  Kind kind = Kind::end;
  std::string text;
  int line = 0;
  std::size_t offset = 0;  // in the text, for the statement's source
};

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}

// Words: names, directives, opcodes with their modifiers ("ld.global.v4.f32", "shared::cta");
// numbers: anything that starts with a digit ("42", "0x1F", "0f3F800000", "9.0", "1U").
std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> out;
  int line = 1;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t end = s.find("*/", i + 2);
      if (end == std::string_view::npos) throw ParseError("line " + std::to_string(line) + ": unterminated comment");
      for (std::size_t j = i; j < end; ++j) line += s[j] == '\n';
      i = end + 2;
    } else if (c == '"') {
      const std::size_t end = s.find('"', i + 1);
      if (end == std::string_view::npos) throw ParseError("line " + std::to_string(line) + ": unterminated string");
      out.push_back({Token::Kind::string, std::string(s.substr(i + 1, end - i - 1)), line, i});
      i = end + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' || s[j] == '_')) ++j;
      out.push_back({Token::Kind::number, std::string(s.substr(i, j - i)), line, i});
      i = j;
    } else if (word_char(c)) {
      std::size_t j = i;
      while (j < s.size()) {
        if (word_char(s[j])) ++j;
        else if (s[j] == ':' && j + 1 < s.size() && s[j + 1] == ':') j += 2;  // shared::cta
        else break;
      }
      out.push_back({Token::Kind::word, std::string(s.substr(i, j - i)), line, i});
      i = j;
    } else if (std::strchr("{}()[],;:@!|+-<>=", c) != nullptr) {
      out.push_back({Token::Kind::punct, std::string(1, c), line, i});
      ++i;
    } else {
      throw ParseError("line " + std::to_string(line) + ": unexpected character '" + std::string(1, c) + "'");
    }
  }
  out.push_back({Token::Kind::end, "", line, s.size()});
  return out;
}

// 42, 0x1F, 0b101, 017 (octal), with an optional U suffix.
std::int64_t parse_integer(const std::string& text, int line) {
  std::string digits = text;
  if (!digits.empty() && (digits.back() == 'U' || digits.back() == 'u')) digits.pop_back();
  int base = 10;
  std::size_t start = 0;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) base = 16, start = 2;
  else if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'b' || digits[1] == 'B')) base = 2, start = 2;
  else if (digits.size() > 1 && digits[0] == '0') base = 8, start = 1;
  std::uint64_t value = 0;
  if (start == digits.size()) throw ParseError("line " + std::to_string(line) + ": malformed number " + text);
  for (std::size_t i = start; i < digits.size(); ++i) {
    const char d = static_cast<char>(std::tolower(static_cast<unsigned char>(digits[i])));
    const int v = std::isdigit(static_cast<unsigned char>(d)) ? d - '0' : (d >= 'a' && d <= 'f') ? d - 'a' + 10 : 99;
    if (v >= base) throw ParseError("line " + std::to_string(line) + ": malformed number " + text);
    const std::uint64_t next = value * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(v);
    if (next / static_cast<std::uint64_t>(base) != value) throw ParseError("line " + std::to_string(line) + ": number " + text + " overflows 64 bits");
    value = next;
  }
  return static_cast<std::int64_t>(value);
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text), tokens_(tokenize(text)) {}

  Module module() {
    Module m;
    while (!at_end()) {
      const Token& t = peek();
      if (t.text == ".version") {
        next();
        m.version = expect_kind(Token::Kind::number, "a version number").text;
      } else if (t.text == ".target") {
        next();
        m.targets.push_back(expect_kind(Token::Kind::word, "a target").text);
        while (accept(",")) m.targets.push_back(expect_kind(Token::Kind::word, "a target").text);
      } else if (t.text == ".address_size") {
        next();
        m.address_size = static_cast<int>(number("an address size"));
      } else if (t.text == ".file" || t.text == ".loc") {
        skip_line();
      } else if (t.text == ".pragma") {
        skip_statement();
      } else {
        top_level(m);
      }
    }
    return m;
  }

 private:
  // --- tokens ---
  const Token& peek(std::size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  bool at_end() const { return peek().kind == Token::Kind::end; }
  const Token& next() {
    const Token& t = peek();
    if (!at_end()) ++pos_;
    return t;
  }
  bool accept(std::string_view text) {
    if (peek().kind != Token::Kind::string && peek().text == text && !at_end()) {
      ++pos_;
      return true;
    }
    return false;
  }
  [[noreturn]] void fail(const std::string& expected) const {
    const Token& t = peek();
    throw ParseError("line " + std::to_string(t.line) + ": expected " + expected + ", found " +
                     (t.kind == Token::Kind::end ? std::string("the end of the module") : "'" + t.text + "'"));
  }
  void expect(std::string_view text) {
    if (!accept(text)) fail("'" + std::string(text) + "'");
  }
  const Token& expect_kind(Token::Kind kind, const std::string& what) {
    if (peek().kind != kind) fail(what);
    return next();
  }
  // The next token as an integer; ParseError naming `what` and its line otherwise.
  std::int64_t number(const std::string& what) {
    const Token& t = expect_kind(Token::Kind::number, what);
    return parse_integer(t.text, t.line);
  }
  void skip_line() {
    const int line = next().line;
    while (!at_end() && peek().line == line) next();
  }
  void skip_statement() {
    while (!at_end() && !accept(";")) next();
  }

  // --- module level ---
  void top_level(Module& m) {
    Declaration d;
    bool function = false, entry = false;
    while (peek().kind == Token::Kind::word && peek().text.starts_with(".")) {
      const std::string& w = peek().text;
      if (w == ".visible" || w == ".weak") next();
      else if (w == ".extern") next(), d.external = true;
      else if (w == ".entry" || w == ".func") {
        entry = w == ".entry";
        function = true;
        next();
        break;
      } else break;
    }
    if (function) {
      m.kernels.push_back(kernel(entry));
      return;
    }
    if (!variable(d)) fail("a directive, a variable or a kernel");
    if (accept("=")) skip_initializer();
    expect(";");
    m.globals.push_back(std::move(d));
  }

  void skip_initializer() {
    int depth = 0;
    while (!at_end()) {
      if (peek().text == ";" && depth == 0) return;
      if (peek().text == "{") ++depth;
      if (peek().text == "}") --depth;
      next();
    }
  }

  // `.shared .align 16 .b8 name[4096]`, `.reg .b32 %r<31>`: the space, then .align, .v2/.v4 and
  // the type in any order, then one name. False when the next word is not a state space.
  bool variable(Declaration& d) {
    static const char* const spaces[] = {".reg", ".shared", ".local", ".param", ".global", ".const"};
    const std::string& w = peek().text;
    bool is_space = false;
    for (const char* s : spaces) is_space = is_space || w == s;
    if (!is_space) return false;
    d.line = peek().line;
    d.space = next().text.substr(1);
    while (peek().kind == Token::Kind::word && peek().text.starts_with(".")) {
      const std::string word = next().text;
      if (word == ".align") d.align = static_cast<int>(number("an alignment"));
      else if (word == ".v2" || word == ".v4" || word == ".ptr" || word.starts_with(".shared::")) continue;
      else d.type = word.substr(1);
    }
    if (d.type.empty()) fail("a type for the " + d.space + " declaration");
    d.name = expect_kind(Token::Kind::word, "a name").text;
    if (accept("<")) {
      d.count = static_cast<int>(number("a register count"));
      expect(">");
    }
    if (accept("[")) {
      d.array = 0;
      if (peek().kind == Token::Kind::number) d.array = number("an array size");
      expect("]");
    }
    return true;
  }

  // --- kernels ---
  Kernel kernel(bool entry) {
    Kernel k;
    k.entry = entry;
    if (!entry && peek().text == "(") {  // a .func's return value: (.param .b32 retval)
      next();
      skip_parenthesised();
    }
    k.name = expect_kind(Token::Kind::word, "the kernel's name").text;
    if (accept("(")) {
      if (!accept(")")) {
        do {
          Declaration p;
          if (!variable(p) || p.space != "param") fail("a .param declaration");
          k.params.push_back(std::move(p));
        } while (accept(","));
        expect(")");
      }
    }
    while (peek().kind == Token::Kind::word && peek().text.starts_with(".")) {
      const std::string directive = next().text;
      std::vector<std::int64_t> values;
      if (peek().kind == Token::Kind::number) {
        values.push_back(number("a number"));
        while (accept(",")) values.push_back(number("a number"));
      }
      k.performance[directive] = std::move(values);
    }
    if (accept(";")) return k;  // a declaration without a body
    expect("{");
    scopes_.assign(1, {});
    scope_ids_.clear();
    blocks_ = 0;
    body(k);
    return k;
  }

  void skip_parenthesised() {
    int depth = 1;
    while (!at_end() && depth > 0) {
      if (peek().text == "(") ++depth;
      if (peek().text == ")") --depth;
      next();
    }
  }

  // Statements up to the '}' that closes the block just opened.
  void body(Kernel& k) {
    while (true) {
      if (at_end()) fail("'}' closing the body of " + k.name);
      if (accept("}")) {
        scopes_.pop_back();
        if (scopes_.empty()) return;
        scope_ids_.pop_back();
        continue;
      }
      if (accept("{")) {
        scopes_.push_back({});
        scope_ids_.push_back(++blocks_);
        continue;
      }
      const Token& t = peek();
      if (t.text == ".pragma") {
        skip_statement();
        continue;
      }
      if (t.text == ".loc" || t.text == ".file") {
        skip_line();
        continue;
      }
      if (t.kind == Token::Kind::word && peek(1).text == ":" && !t.text.starts_with(".")) {
        k.labels[t.text] = k.body.size();
        next();
        next();
        continue;
      }
      Declaration d;
      if (variable(d)) {
        std::vector<Declaration> names{d};
        while (accept(",")) {  // .reg .pred p, q;
          Declaration more = d;
          more.name = expect_kind(Token::Kind::word, "a name").text;
          more.count = 0;
          if (accept("<")) {
            more.count = static_cast<int>(number("a count"));
            expect(">");
          }
          names.push_back(std::move(more));
        }
        expect(";");
        for (Declaration& one : names) declare(k, std::move(one));
        continue;
      }
      k.body.push_back(instruction());
    }
  }

  // A name declared in a nested block gets "#<block>" appended; references resolve innermost first.
  void declare(Kernel& k, Declaration d) {
    if (scopes_.size() > 1) {
      d.suffix = "#" + std::to_string(scope_ids_.back());
      scopes_.back()[d.name] = {d.suffix, d.count};
    }
    k.declarations.push_back(std::move(d));
  }

  std::string resolve(const std::string& name) const {
    for (std::size_t depth = scopes_.size(); depth-- > 1;) {
      const auto& scope = scopes_[depth];
      if (const auto it = scope.find(name); it != scope.end() && it->second.second == 0) return name + it->second.first;
      // %t3 declared by `.reg .b32 %t<4>` in this block
      for (const auto& [declared, entry] : scope) {
        if (entry.second == 0 || !name.starts_with(declared) || name.size() == declared.size()) continue;
        const std::string index = name.substr(declared.size());
        if (index.size() < 10 && index.find_first_not_of("0123456789") == std::string::npos &&
            std::stoll(index) < entry.second)
          return name + entry.first;
      }
    }
    return name;
  }

  Instruction instruction() {
    Instruction in;
    const Token& first = peek();
    in.line = first.line;
    const std::size_t start = first.offset;
    if (accept("@")) {
      in.guard_negated = accept("!");
      in.guard = resolve(expect_kind(Token::Kind::word, "a guard predicate").text);
    }
    const std::string form = expect_kind(Token::Kind::word, "an instruction").text;
    if (form.starts_with(".")) {
      fail("an instruction (directive " + form + " is not supported in a kernel body)");
    }
    std::size_t dot = form.find('.');
    in.opcode = form.substr(0, dot);
    while (dot != std::string::npos) {
      std::size_t end = form.find('.', dot + 1);
      in.modifiers.push_back(form.substr(dot + 1, end == std::string::npos ? std::string::npos : end - dot - 1));
      dot = end;
    }
    if (!accept(";")) {
      do in.operands.push_back(operand());
      while (accept(","));
      if (peek().text != ";") fail("',' or ';' after an operand of " + in.form());
      in.text = std::string(text_.substr(start, peek().offset - start));
      next();
    } else {
      in.text = in.form();
    }
    return in;
  }

  // A vector operand is a brace-enclosed list of scalars ({%r1, %r2}; PTX ISA, "Instruction
  // Operands", vectors as operands): one level, so nesting is an error (and the recursion stays
  // one deep).
  Operand operand(bool in_vector = false) {
    Operand o;
    if (peek().text == "{" && in_vector) fail("a vector operand inside a vector operand");
    if (accept("{")) {
      o.kind = Operand::Kind::vector;
      if (!accept("}")) {
        do o.elements.push_back(operand(true));
        while (accept(","));
        expect("}");
      }
      return o;
    }
    if (accept("[")) {
      o.kind = Operand::Kind::address;
      if (peek().kind == Token::Kind::number) {
        o.integer = number("a number");
      } else {
        o.name = resolve(expect_kind(Token::Kind::word, "an address").text);
        if (accept("+")) {
          const bool negative = accept("-");
          o.integer = number("an offset");
          if (negative) o.integer = -o.integer;
        } else if (accept("-")) {
          o.integer = -number("an offset");
        } else if (accept(",")) {  // a tensor map and its coordinates: [%rd4, {%r1, %r2}]
          const Operand coordinates = operand();
          if (coordinates.kind != Operand::Kind::vector) fail("a vector of coordinates");
          o.elements = coordinates.elements;
        }
      }
      expect("]");
      return o;
    }
    if (accept("!")) {
      o.negated = true;
      o.name = resolve(expect_kind(Token::Kind::word, "a predicate after '!'").text);
      return o;
    }
    const bool negative = accept("-");
    if (peek().kind == Token::Kind::number) {
      o.kind = Operand::Kind::immediate;
      const Token& t = next();
      const std::string& x = t.text;
      if (x.size() > 2 && x[0] == '0' && (x[1] == 'f' || x[1] == 'F' || x[1] == 'd' || x[1] == 'D')) {
        o.fp64 = x[1] == 'd' || x[1] == 'D';
        const std::size_t digits = o.fp64 ? 16 : 8;
        if (x.size() != 2 + digits) throw ParseError("line " + std::to_string(t.line) + ": malformed floating-point constant " + x);
        o.bits = static_cast<std::uint64_t>(parse_integer("0x" + x.substr(2), t.line));
        if (negative) o.bits = *o.bits ^ (o.fp64 ? 0x8000000000000000ull : 0x80000000ull);
      } else {
        o.integer = parse_integer(x, t.line);
        if (negative) o.integer = -o.integer;
      }
      return o;
    }
    if (negative) fail("a number after '-'");
    const std::string name = expect_kind(Token::Kind::word, "an operand").text;
    if (name == "_") {
      o.kind = Operand::Kind::sink;
      return o;
    }
    o.name = resolve(name);
    if (accept("|")) o.pair = resolve(expect_kind(Token::Kind::word, "a second predicate after '|'").text);
    if (accept("+")) o.integer = number("an offset");
    return o;
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  // Names declared in each open block (the body is the first): name -> (its suffix, count).
  std::vector<std::map<std::string, std::pair<std::string, int>>> scopes_;
  std::vector<int> scope_ids_;
  int blocks_ = 0;
};

}  // namespace

Module parse(std::string_view text) { return Parser(text).module(); }

}  // namespace gemmlab::ptx
