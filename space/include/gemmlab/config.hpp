// Configurations: a value for each parameter of a search space, and the error for one that is not
// allowed. Shared by the expressions (expression.hpp) and the spaces (space.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace gemmlab {

using ParamValue = std::int64_t;

// A configuration: parameter name -> value. Ordered so that printing and hashing are stable.
using Config = std::map<std::string, ParamValue>;

std::string to_string(const Config& config);  // "KC=256 MC=96 ..."

// Thrown for an unknown parameter, a value outside the allowed set or a violated constraint.
// The message names what is wrong and what is allowed.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// "NAME=VALUE" -> (name, value); throws ConfigError with the offending text.
std::pair<std::string, ParamValue> parse_assignment(const std::string& text);

}  // namespace gemmlab
