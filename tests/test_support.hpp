// Helpers shared by the gemmlab unit tests.
#pragma once

#include <memory>

#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
#include <gtest/gtest.h>

#include <exception>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace gemmlab::testing {

// Whether `text` contains `word` delimited by non-identifier characters ("A" in "A is null",
// not in "NaN"; "lda" in "lda=5 is ...").
inline bool mentions_word(const std::string& text, const std::string& word) {
  std::string escaped;
  for (char ch : word) {
    if (std::string_view("\\^$.|?*+()[]{}").find(ch) != std::string_view::npos) escaped += '\\';
    escaped += ch;
  }
  return std::regex_search(text, std::regex("(^|[^A-Za-z0-9_])" + escaped + "($|[^A-Za-z0-9_])"));
}

inline bool contains(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

// Runs `f` and checks it throws `Ex` whose message mentions every one of `words` (as whole
// words when `whole_words`, else as substrings).
template <class Ex, class F>
::testing::AssertionResult throws_mentioning(const char* exception_name, F&& f,
                                             const std::vector<std::string>& words,
                                             bool whole_words = true) {
  try {
    f();
  } catch (const Ex& e) {
    const std::string message = e.what();
    for (const auto& w : words) {
      const bool found = whole_words ? mentions_word(message, w) : contains(message, w);
      if (!found)
        return ::testing::AssertionFailure()
               << "expected a " << exception_name << " whose message mentions '" << w
               << "', got the message: \"" << message << "\"";
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "expected a " << exception_name
                                         << ", got another exception: \"" << e.what() << "\"";
  } catch (...) {
    return ::testing::AssertionFailure() << "expected a " << exception_name
                                         << ", got a non-standard exception";
  }
  return ::testing::AssertionFailure() << "expected a " << exception_name
                                       << " mentioning the bad field, nothing was thrown";
}

// The CPU device and OpenBLAS, opened once per test process and shared by the tests.
inline Device& cpu_device() {
  static const std::unique_ptr<Device> device = registry().backend("cpu").open(0);
  return *device;
}
inline Reference& openblas() {
  static const std::unique_ptr<Reference> reference = cpu::load_cblas("openblas");
  return *reference;
}

}  // namespace gemmlab::testing

// EXPECT_THROW_MENTIONING(statement, ExceptionType, {"word", ...}): the statement throws
// ExceptionType (or a subclass) and its message names each word.
#define EXPECT_THROW_MENTIONING(statement, Ex, ...)                                           \
  EXPECT_TRUE((::gemmlab::testing::throws_mentioning<Ex>(#Ex, [&] { (void)(statement); }, \
                                                          __VA_ARGS__)))                    \
      << "statement: " #statement
#define EXPECT_THROW_CONTAINING(statement, Ex, ...)                                           \
  EXPECT_TRUE((::gemmlab::testing::throws_mentioning<Ex>(#Ex, [&] { (void)(statement); }, \
                                                          __VA_ARGS__, false)))             \
      << "statement: " #statement
