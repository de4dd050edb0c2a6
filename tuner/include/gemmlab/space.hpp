// Search spaces: the parameters a kernel exposes, their allowed values and the constraints
// between them. Kernels declare a space; the command line checks user configurations against it;
// the tuner enumerates it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gemmlab {

using ParamValue = std::int64_t;

// A configuration: parameter name -> value. Ordered so that printing and hashing are stable.
using Config = std::map<std::string, ParamValue>;

std::string to_string(const Config& config);  // "KC=256 MC=96 ..."

struct Parameter {
  std::string name;
  std::vector<ParamValue> values;  // allowed values, ascending
  std::string help;
};

struct Constraint {
  std::string text;                // human-readable, e.g. "MR*NV + NV + 1 <= 32 (zmm registers)"
  std::vector<std::string> uses;   // parameters it reads, so it can be checked once they are bound
  std::function<bool(const Config&)> holds;
};

// Thrown for an unknown parameter, a value outside the allowed set or a violated constraint.
// The message names what is wrong and what is allowed.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Value lists.
std::vector<ParamValue> pow2_range(ParamValue lo, ParamValue hi);
std::vector<ParamValue> int_range(ParamValue lo, ParamValue hi, ParamValue step = 1);

class SearchSpace {
 public:
  SearchSpace& add(std::string name, std::vector<ParamValue> values, std::string help);
  SearchSpace& constrain(std::string text, std::vector<std::string> uses,
                         std::function<bool(const Config&)> holds);

  const std::vector<Parameter>& parameters() const { return parameters_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  const Parameter* find(const std::string& name) const;

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
  // the cost follows the valid space, not the Cartesian product. Stops after `limit` results.
  std::vector<Config> enumerate(std::size_t limit = static_cast<std::size_t>(-1)) const;
  // Number of valid configurations (the same traversal, nothing stored).
  std::size_t valid_size() const;

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
  std::vector<Parameter> parameters_;
  std::vector<Constraint> constraints_;
};

// "NAME=VALUE" -> (name, value); throws ConfigError with the offending text.
std::pair<std::string, ParamValue> parse_assignment(const std::string& text);

}  // namespace gemmlab
