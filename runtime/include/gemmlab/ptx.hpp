// PTX as the simulated CUDA device reads it: a module parsed into its kernels, each a flat list of
// instructions with their guards, opcodes, modifiers and operands, its parameters, and its
// register, shared and local declarations. The syntax follows NVIDIA's PTX ISA ("Syntax",
// "State Spaces, Types, and Variables", "Instruction Statements"): comments, directives,
// `[@[!]%p] opcode{.modifier} operand, ...;` statements, labels, and `{ }` blocks that open a
// scope (inline assembly declares its own registers in one). Names declared in the n-th nested
// block are renamed here to `name#n` (`t1#n` for t1 of `t<2>`), so that every register of a
// kernel has one name.
//
// parse() checks the syntax only; what an instruction means is the simulator's business, which
// reports any opcode or form it does not support by name.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gemmlab::ptx {

// A malformed module: the message names the line and what was expected there.
class ParseError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct Operand {
  enum class Kind {
    reg,        // %r5, %tid.x, a parameter or variable name used as a value (mov.u64 %rd1, shared_raw)
    immediate,  // 42, -1, 0x1F: `integer`; 0f3F800000 (fp32) and 0d3FF0000000000000 (fp64): `bits`
    address,    // [base+offset], [%rd4, {%r1, %r2}] (a tensor coordinate vector: `elements`)
    vector,     // {%f1, %f2, _}
    sink,       // _
  };
  Kind kind = Kind::reg;
  std::string name;            // reg: the register or symbol; address: the base ("" for [imm])
  bool negated = false;        // !%p
  std::string pair;            // setp's second destination: %p1|%p2
  std::int64_t integer = 0;    // immediate; address: the byte offset
  std::optional<std::uint64_t> bits;  // a floating-point immediate, as its IEEE bits
  bool fp64 = false;           // bits is 0d (else 0f)
  std::vector<Operand> elements;      // vector, or an address's coordinate vector
};

struct Instruction {
  std::string guard;           // predicate register, "" when unguarded
  bool guard_negated = false;  // @!%p
  std::string opcode;          // "ld", "mma", "cp"
  std::vector<std::string> modifiers;  // "global", "v4", "f32" ... in order; "shared::cta" kept whole
  std::vector<Operand> operands;
  int line = 0;                // in the module's text, for error messages
  std::string text;            // the statement as written (without the ';')

  // "ld.global.v4.f32": the opcode with its modifiers.
  std::string form() const;
  bool has(std::string_view modifier) const;
};

// A declared register or variable: `.reg .b32 %r<31>` declares %r0 ... %r30 (count 31).
struct Declaration {
  std::string space;           // "reg", "shared", "local", "param", "global", "const"
  std::string type;            // "b32", "pred", "f32", "b8" ...
  std::string name;
  int count = 0;               // the <n> of a parameterized register name; 0 for one name
  std::string suffix;          // "#2" when declared in nested block 2: the registers are name + suffix,
                               // or name + i + suffix for i < count
  std::int64_t array = -1;     // elements of name[n]; 0 for name[] (an extern array); -1 for a scalar
  int align = 0;
  bool external = false;       // .extern
  int line = 0;
};

struct Kernel {
  std::string name;
  bool entry = false;          // .entry (a kernel); else .func
  std::vector<Declaration> params;
  std::vector<Declaration> declarations;  // registers, shared and local variables, in order
  std::vector<Instruction> body;
  std::map<std::string, std::size_t> labels;  // label -> index in body of the next instruction
  std::map<std::string, std::vector<std::int64_t>> performance;  // ".maxntid" -> {384, 1, 1}
};

struct Module {
  std::string version;         // "9.0"
  std::vector<std::string> targets;  // "sm_90a"
  int address_size = 64;
  std::vector<Declaration> globals;  // module-scope .global / .shared / .const variables
  std::vector<Kernel> kernels;

  // Throws ParseError naming the kernels there are when there is no `name`.
  const Kernel& kernel(const std::string& name) const;
};

Module parse(std::string_view text);

}  // namespace gemmlab::ptx
