// libFuzzer target for the constraint-expression parser and evaluator (built with clang only;
// see tests/CMakeLists.txt). Any input may be rejected with a ConfigError (ExpressionError when
// parsing); anything else is a finding: a crash, a sanitizer report, another exception (libFuzzer
// reports it as a crash), a hang, or a broken invariant below (__builtin_trap).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gemmlab/expression.hpp"
#include "gemmlab/space.hpp"
#include "fuzz_support.hpp"

using gemmlab::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const gemmlab::Expression e = gemmlab::Expression::parse(text);
    check(e.text() == text);
    gemmlab::Config config;
    for (const auto& name : e.names()) {
      check(!name.empty() && config.count(name) == 0);  // distinct
      check(text.find(name) != std::string_view::npos);
      config[name] = 3;
    }
    const gemmlab::Expression copy = e;  // copies share the tree
    const std::vector<gemmlab::ParamValue> by_position(e.names().size(), 3);
    try {
      const gemmlab::ParamValue value = e.evaluate(config);
      check(copy.evaluate(config) == value);
      check(e.holds(config) == (value != 0));
      check(e.evaluate(by_position) == value);  // by position as by name
    } catch (const gemmlab::ConfigError&) {
      // division by zero or overflow: fine, as long as a copy agrees
      bool copy_threw = false;
      try {
        (void)copy.evaluate(config);
      } catch (const gemmlab::ConfigError&) {
        copy_threw = true;
      }
      check(copy_threw);
    }
  } catch (const gemmlab::ExpressionError& err) {
    // Malformed: the column lies within the text or just past its end, and the message says so.
    check(err.column() >= 1 && err.column() <= size + 1);
    check(std::string_view(err.what()).find("at column " + std::to_string(err.column())) !=
          std::string_view::npos);
  }
  return 0;
}
