// Running the `gemmlab` program from a test: its exit status, standard output and error.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#ifndef GEMMLAB_CLI
#error "GEMMLAB_CLI must be the path of the gemmlab program"
#endif

namespace gemmlab::testing {

struct CliResult {
  int status = -1;  // exit status; 128 + signal when killed
  std::string out, err;
};

inline std::ostream& operator<<(std::ostream& os, const CliResult& r) {
  return os << "exit status " << r.status << "\n--- stdout ---\n" << r.out << "\n--- stderr ---\n" << r.err;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The results cache `gemmlab tune` uses unless told otherwise: the tests' own, never the user's.
inline std::string default_cache_home() {
  return ::testing::TempDir() + "gemmlab-cli-cache-" + std::to_string(::getpid());
}

// Removes that cache home when the test program ends: each test process has its own.
class RemoveDefaultCacheHome : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(default_cache_home(), ignored);
  }
};
inline ::testing::Environment* const remove_default_cache_home =
    ::testing::AddGlobalTestEnvironment(new RemoveDefaultCacheHome);

// Runs `gemmlab <args>` with optional environment assignments in front (they win over the
// default XDG_CACHE_HOME above).
inline CliResult run_cli(const std::string& args, const std::string& env = "") {
  std::string err_path = ::testing::TempDir() + "gemmlab_cli_stderr_XXXXXX";
  const int fd = ::mkstemp(err_path.data());
  if (fd < 0) {
    ADD_FAILURE() << "mkstemp failed for " << err_path;
    return {};
  }
  ::close(fd);
  const std::string command = "XDG_CACHE_HOME='" + default_cache_home() + "' " + env + (env.empty() ? "" : " ") +
                              "'" GEMMLAB_CLI "' " + args + " 2>'" + err_path + "'";
  CliResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed: " << command;
    return result;
  }
  char chunk[4096];
  std::size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) result.out.append(chunk, got);
  const int raw = ::pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : -1;
  result.err = read_file(err_path);
  std::remove(err_path.c_str());
  return result;
}

// Parses stdout as one JSON document; fails the test (and returns null) when it is not.
inline nlohmann::json parse_json(const CliResult& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (const nlohmann::json::exception& e) {
    ADD_FAILURE() << "stdout is not a JSON document (" << e.what() << ")\n" << r;
    return nlohmann::json();
  }
}

// Runs `gemmlab <args>` and checks that it rejects them as bad input: exit status 2 and an error
// message on stderr that contains each of `words`.
inline ::testing::AssertionResult exits_2_saying(const std::string& args, const std::vector<std::string>& words = {},
                                                 const std::string& env = "") {
  const CliResult r = run_cli(args, env);
  if (r.status != 2) return ::testing::AssertionFailure() << "gemmlab " << args << ": expected exit status 2\n" << r;
  if (r.err.empty()) return ::testing::AssertionFailure() << "gemmlab " << args << ": no error message\n" << r;
  for (const std::string& w : words)
    if (r.err.find(w) == std::string::npos)
      return ::testing::AssertionFailure() << "gemmlab " << args << ": stderr should mention " << w << "\n" << r;
  return ::testing::AssertionSuccess();
}

}  // namespace gemmlab::testing
