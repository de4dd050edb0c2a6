// Helpers shared by the gemmlab unit tests.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>

#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/setup.hpp"
#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace gemmlab::testing {

// Number of maximal runs of `name` in `s` after the first `skip` characters: the blocks of one
// side of an alternating measurement whose runs each append their side's name to `s`.
inline int blocks_of(const std::string& s, char name, std::size_t skip = 0) {
  int blocks = 0;
  for (std::size_t i = skip; i < s.size(); ++i)
    if (s[i] == name && (i == skip || s[i - 1] != name)) ++blocks;
  return blocks;
}

// Sets an environment variable for the lifetime of the object (unset when `value` is null), then
// restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// A fresh directory per test (named after it and the process), removed afterwards.
class Scratch {
 public:
  Scratch() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) / ("gemmlab_" + std::string(info->test_suite_name()) + "_" +
                                                          info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

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

// The CPU device and OpenBLAS (the fp64 truth, and the timed reference where a test times one),
// opened once per test process and shared by the tests.
inline Device& cpu_device() {
  static const std::unique_ptr<Device> device = registry().backend("cpu").open(0);
  return *device;
}
inline Reference& openblas() {
  static const std::unique_ptr<Reference> reference = open_fp64_truth();
  return *reference;
}

// The entry of the datasheet catalogue (data/datasheets/devices.json as the source tree has it,
// read here rather than through the program's embedded copy) whose limits stand for `target`
// ("sm_90", "gfx90a"); null when none does.
inline nlohmann::json catalogue_part(const std::string& target) {
  std::ifstream in(GEMMLAB_DATASHEETS_FILE);
  const nlohmann::json catalogue = nlohmann::json::parse(in);
  for (const nlohmann::json& device : catalogue["devices"])
    if (device.contains("limits"))
      for (const nlohmann::json& t : device["limits"]["targets"])
        if (t == target) return device;
  return nullptr;
}

// Each field of `limits` against the catalogue entry's value (compute_capability 0 where the
// entry has none: AMD).
inline void expect_catalogue_limits(const GpuLimits& limits, const nlohmann::json& part) {
  ASSERT_TRUE(part.is_object()) << "no catalogue part";
  const nlohmann::json& v = part["limits"]["values"];
  const auto value = [&](const char* key) -> std::int64_t {
    return v.contains(key) ? v[key]["value"].get<std::int64_t>() : 0;
  };
  const std::string id = part["id"];
  EXPECT_EQ(limits.compute_capability, value("compute_capability")) << id;
  EXPECT_EQ(limits.multiprocessors, value("multiprocessors")) << id;
  EXPECT_EQ(limits.warp_size, value("warp_size")) << id;
  EXPECT_EQ(limits.max_threads_per_block, value("max_threads_per_block")) << id;
  EXPECT_EQ(limits.shared_bytes_per_block, value("shared_bytes_per_block")) << id;
  EXPECT_EQ(limits.shared_bytes_per_block_optin, value("shared_bytes_per_block_optin")) << id;
  EXPECT_EQ(limits.shared_bytes_per_sm, value("shared_bytes_per_sm")) << id;
  EXPECT_EQ(limits.registers_per_block, value("registers_per_block")) << id;
  EXPECT_EQ(limits.registers_per_sm, value("registers_per_sm")) << id;
  EXPECT_EQ(limits.max_registers_per_thread, value("max_registers_per_thread")) << id;
  EXPECT_EQ(limits.l2_bytes, value("l2_bytes")) << id;
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

// Skips the current test when the CPU kernel cannot run on this machine (05 and 06 need
// AVX-512F: an AVX2-only CPU runs the tests of the others).
#define SKIP_IF_UNSUPPORTED(kernel)                                                                  \
  do {                                                                                               \
    const ::gemmlab::Support support_ = (kernel).supported(::gemmlab::testing::cpu_device().info()); \
    if (!support_.ok) GTEST_SKIP() << (kernel).name() << ": " << support_.reason;                    \
  } while (0)
