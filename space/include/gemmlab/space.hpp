// Search spaces: the parameters a kernel exposes, their allowed values and the constraints
// between them. Kernels declare a space; the command line checks user configurations against it;
// the tuner enumerates it.
//
// A kernel declares each constraint once, as an expression (expression.hpp) over its parameters
// and named values: device limits and sizes given by let(), quantities computed from the
// parameters given by derive(). The text is what is evaluated and what `gemmlab kernels` prints.
//
//   SearchSpace s;
//   s.add("BM", {32, 64, 128}, "rows of the block tile")
//       .add("BN", {32, 64, 128}, "columns of the block tile")
//       .add("TM", {4, 8}, "rows of a thread's tile")
//       .add("TN", {4, 8}, "columns of a thread's tile");
//   s.let("max_threads_per_block", gpu.max_threads_per_block, "threads a block may have")
//       .derive("threads", "(BM/TM)*(BN/TN)", "threads per block");
//   s.require("threads % 32 == 0", "whole warps")
//       .require("threads <= max_threads_per_block", "threads per block");
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gemmlab/config.hpp"
#include "gemmlab/expression.hpp"

namespace gemmlab {

struct Parameter {
  std::string name;
  std::vector<ParamValue> values;  // allowed values, ascending
  std::string help;
};

// A name a space's constraints may use besides the parameters (let() and derive()).
struct NamedValue {
  std::string name;
  std::string definition;           // as written: "49152" for let(), "(BM/TM)*(BN/TN)" for derive()
  std::optional<ParamValue> value;  // when it reads no parameter: let(), or derive() of constants
  std::string help;
};

struct Constraint {
  std::string text;                         // the expression exactly as written: "MR*NV + NV + 1 <= 32"
  std::string why;                          // what it protects, briefly: "zmm registers"; may be empty
  std::vector<std::string> uses;            // parameters it reads, directly or through derived values
  Expression expression;                    // what is evaluated

  // Whether `config` (with every parameter in `uses`) satisfies it. An expression that cannot be
  // evaluated (division by zero, overflow) throws ConfigError.
  bool holds(const Config& config) const;
  // "text (why)", or the text alone when there is no why.
  std::string describe() const;
};

// Value lists.
std::vector<ParamValue> pow2_range(ParamValue lo, ParamValue hi);
std::vector<ParamValue> int_range(ParamValue lo, ParamValue hi, ParamValue step = 1);

class SearchSpace {
 public:
  // A parameter with its allowed values (sorted and deduplicated here). std::logic_error for an
  // empty list or a name already taken by a parameter or named value.
  SearchSpace& add(std::string name, std::vector<ParamValue> values, std::string help);

  // A named constant: a device limit, a cache size, the element size ("L1d", 49152).
  SearchSpace& let(std::string name, ParamValue value, std::string help);
  // A named quantity computed from the parameters and earlier named values ("threads",
  // "(BM/TM)*(BN/TN)"). Its parameters must be declared before it.
  SearchSpace& derive(std::string name, std::string expression, std::string help);
  // A constraint: `expression` over parameters and named values must be non-zero. `why` says
  // briefly what it protects ("zmm registers", "shared memory per block"). It is checked as soon
  // as the parameters it reads, directly or through derived values, are bound.
  //
  // let(), derive() and require() throw std::logic_error (a bug in the kernel declaring them)
  // for a malformed expression, a name that is neither a parameter nor a named value, and, for
  // let() and derive(), a name already taken.
  SearchSpace& require(std::string expression, std::string why = "");

  const std::vector<Parameter>& parameters() const { return parameters_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  // In declaration order.
  const std::vector<NamedValue>& named_values() const { return named_values_; }
  const Parameter* find(const std::string& name) const;
  const NamedValue* find_named_value(const std::string& name) const;

  // The value of a named value (or of a parameter) for `config`: nullopt when the space has no
  // such name. Throws ConfigError when `config` lacks a parameter it reads or it cannot be
  // evaluated. For callers that want what a kernel derives, such as the tile of C it stages.
  std::optional<ParamValue> value_of(const std::string& name, const Config& config) const;
  // `text` parsed with this space's named values, as require() would (names that are neither
  // parameters nor named values are left as parameters: compare names() with parameters()).
  // Throws ExpressionError when malformed. For checking user-written constraints before
  // require().
  Expression parse(const std::string& text) const;

  // Declares that parameter `name` came after configurations were stored without it, and that
  // those ran as `ran_as` does: upgraded() fills it in, so that a file written before that names
  // the kernel but not its source (a BLAS table) keeps its configurations. std::logic_error (a
  // bug in the kernel) when `name` is not a parameter or `ran_as` not one of its values.
  SearchSpace& added_later(const std::string& name, ParamValue ran_as);
  // `config` as stored earlier, brought to today's parameters: each parameter declared by
  // added_later() and missing from it set to the value it ran as. Nothing else is changed or
  // checked.
  Config upgraded(Config config) const;

  // Fills parameters missing from `partial` with `defaults`, then checks the result.
  Config complete(const Config& partial, const Config& defaults) const;
  // Throws ConfigError unless every parameter is present with an allowed value and every
  // constraint holds.
  void check(const Config& config) const;
  bool is_valid(const Config& config) const;
  // Size of the Cartesian product of the value lists.
  double raw_size() const;

  // Every valid configuration, in lexicographic order of the parameters (declaration order) and
  // their values. Depth-first over the parameters: each constraint is checked as soon as every
  // parameter it uses is bound, so a violated constraint prunes the whole subtree below it and
  // the cost follows the valid space, not the Cartesian product. A constraint that cannot be
  // evaluated (division by zero, overflow) counts as violated, as in is_valid(). Stops after
  // `limit` results.
  std::vector<Config> enumerate(std::size_t limit = static_cast<std::size_t>(-1)) const;
  // Number of valid configurations (the same traversal, nothing stored).
  std::size_t valid_size() const;
  // What that traversal costs: how many values it binds (nodes of the search tree) and how often
  // it evaluates each constraint (in declaration order), against the valid configurations it
  // finds. Shows how early the constraints prune (bench/space_bench prints it).
  struct EnumerationCost {
    std::uint64_t bindings = 0;
    std::vector<std::uint64_t> checks;  // per constraint
    std::uint64_t valid = 0;
  };
  EnumerationCost enumeration_cost() const;

  // `preferred` when it is valid; otherwise the valid configuration nearest to it. The distance
  // is the sum over the parameters of how many places apart, in the parameter's ascending list
  // of allowed values, the chosen value and the preferred one are: on a list of powers of two
  // that is |log2(chosen / preferred)|, and it treats enumerated values (0/1/2) alike. A
  // preferred value not in the list counts from where it would be inserted: both neighbours are
  // 1 away. A parameter missing from `preferred` counts from its smallest value. Among equally
  // near configurations, the first in enumerate()'s order. A branch-and-bound search (values
  // tried nearest first, constraints checked as in enumerate(), a branch dropped once it is
  // farther than the best found), fast on large spaces. Throws ConfigError for a parameter of
  // `preferred` that the space lacks, and when no configuration is valid.
  Config nearest_valid(const Config& preferred) const;

  // Valid configurations that differ from `config` in exactly one parameter: with `adjacent`,
  // that parameter moves to the next smaller or larger allowed value; with `any`, to any other
  // allowed value. For local search.
  enum class Neighbourhood { adjacent, any };
  std::vector<Config> neighbours(const Config& config, Neighbourhood kind) const;

  // Configurations that put each parameter in turn at its smallest and largest value, the others
  // at `defaults`. Where that breaks a constraint, one other parameter is moved to the nearest
  // value (from its default) that repairs it; extremes that cannot be repaired so are left out.
  // The defaults come first; no configuration is listed twice.
  std::vector<Config> extremes(const Config& defaults) const;

 private:
  Expression parse_declared(const std::string& text, const std::string& what) const;
  std::string values_compared(const Constraint& c, const Config& config) const;
  void check_new_name(const std::string& name) const;

  std::vector<Parameter> parameters_;
  Config ran_as_before_;  // added_later(): parameter -> the value configurations stored without it ran as
  std::vector<Constraint> constraints_;
  std::vector<NamedValue> named_values_;
  Definitions definitions_;  // the named values as expressions, for parsing
};

}  // namespace gemmlab
