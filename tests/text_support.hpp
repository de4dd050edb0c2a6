// Helpers for tests that read multi-line text (error messages, command output).
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace gemmlab::testing {

// The lines of `text`, without their line breaks.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace gemmlab::testing
