// Compiling HIP kernels with hipcc (a child process), the cache of what it produced, and reading
// the resources and instructions of a kernel from its assembly listing.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "gemmlab/hip.hpp"
#include "module_cache.hpp"

extern char** environ;

#ifndef GEMMLAB_HIPCC
#define GEMMLAB_HIPCC "hipcc"
#endif
#ifndef GEMMLAB_HIP_TARGETS
#define GEMMLAB_HIP_TARGETS "gfx90a,gfx940,gfx1100"
#endif
#ifndef GEMMLAB_HIP_DEVICE_LIB_PATH
#define GEMMLAB_HIP_DEVICE_LIB_PATH ""
#endif

namespace gemmlab::hip {
namespace {

// A directory of its own for one compilation, removed afterwards.
class WorkDir {
 public:
  WorkDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("gemmlab-hipcc-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~WorkDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The environment hipcc runs in: ours, plus DEVICE_LIB_PATH where this build made a directory of
// device libraries (Debian's lack the one for gfx1100; see cmake/HipTargets.cmake) and the user
// has not chosen one.
std::vector<std::string> hipcc_environment() {
  std::vector<std::string> env;
  bool has_device_libs = false;
  for (char** e = environ; *e != nullptr; ++e) {
    env.emplace_back(*e);
    has_device_libs = has_device_libs || env.back().rfind("DEVICE_LIB_PATH=", 0) == 0;
  }
  std::string libs = GEMMLAB_HIP_DEVICE_LIB_PATH;
  if (const char* chosen = std::getenv("GEMMLAB_HIP_DEVICE_LIB_PATH"); chosen != nullptr) libs = chosen;
  if (!has_device_libs && !libs.empty()) env.push_back("DEVICE_LIB_PATH=" + libs);
  return env;
}

struct ProcessResult {
  int status = -1;
  std::string output;  // stdout and stderr together
};

ProcessResult run_process(const std::vector<std::string>& args, const std::filesystem::path& output_file) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env = hipcc_environment();
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int error = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0)
    throw CompileError("cannot run " + args.front() + " (" + std::strerror(error) +
                       "); install hipcc (Debian: apt-get install hipcc libamdhip64-dev) or set GEMMLAB_HIPCC");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1, .output = read_file(output_file)};
}

// Runs hipcc on the request in a fresh directory; `mode` is the output kind's options, the product
// is read from `product`.
struct HipccOutput {
  std::string product, log;
};
HipccOutput run_hipcc(const CompileRequest& request, const std::vector<std::string>& mode, const std::string& product) {
  WorkDir dir;
  write_file(dir.path() / request.source_name, request.source);
  for (const auto& [name, text] : request.headers) write_file(dir.path() / name, text);
  std::vector<std::string> args = {hipcc_path(), "--offload-arch=" + request.target, "-O3", "-x", "hip",
                                   "-I" + dir.path().string()};
  args.insert(args.end(), mode.begin(), mode.end());
  args.insert(args.end(), request.options.begin(), request.options.end());
  args.push_back((dir.path() / request.source_name).string());
  args.push_back("-o");
  args.push_back((dir.path() / product).string());
  ProcessResult result = run_process(args, dir.path() / "hipcc.log");
  if (result.status != 0)
    throw CompileError(request.source_name + " does not compile for " + request.target + ":\n" + result.output);
  return {.product = read_file(dir.path() / product), .log = std::move(result.output)};
}

std::string key_text(const CompileRequest& request, const std::string& kind) {
  std::string text = kind + '\n' + request.source + '\n' + request.target + '\n' + hipcc_version() + '\n' +
                     hipcc_path();
  for (const auto& [name, header] : request.headers) text += '\n' + name + '\n' + header;
  for (const auto& o : request.options) text += '\n' + o;
  return text;
}

std::string instruction_class(const std::string& m) {
  auto starts = [&](const char* prefix) { return m.rfind(prefix, 0) == 0; };
  if (starts("v_mfma") || starts("v_wmma") || starts("v_smfmac")) return "matrix";
  if (starts("ds_")) return "lds";
  if (starts("global_") || starts("buffer_") || starts("flat_") || starts("scratch_")) return "global_memory";
  if (starts("s_load") || starts("s_buffer_load") || starts("s_store")) return "scalar_memory";
  if (starts("s_waitcnt")) return "wait";
  if (starts("s_cbranch") || starts("s_branch") || starts("s_setpc") || starts("s_endpgm")) return "branch";
  if (starts("s_")) return "salu";
  if (starts("v_")) return "valu";
  return "other";
}

}  // namespace

std::string hipcc_path() {
  if (const char* chosen = std::getenv("GEMMLAB_HIPCC"); chosen != nullptr && chosen[0] != '\0') return chosen;
  return GEMMLAB_HIPCC;
}

std::string hipcc_version() {
  static const std::string version = [] {
    WorkDir dir;
    const ProcessResult result = run_process({hipcc_path(), "--version"}, dir.path() / "version.log");
    if (result.status != 0) throw CompileError(hipcc_path() + " --version failed:\n" + result.output);
    std::string lines;
    std::istringstream in(result.output);
    for (std::string line; std::getline(in, line);)
      if (line.find("HIP version") != std::string::npos || line.find("clang version") != std::string::npos)
        lines += (lines.empty() ? "" : "; ") + line;
    return lines;
  }();
  return version;
}

std::vector<std::string> configured_targets() {
  std::vector<std::string> targets;
  std::istringstream in(GEMMLAB_HIP_TARGETS);
  for (std::string t; std::getline(in, t, ',');)
    if (!t.empty()) targets.push_back(t);
  return targets;
}

IsaReport parse_isa(const std::string& assembly) {
  IsaReport r;
  auto field = [&](const char* name, std::int64_t& value) {
    std::smatch m;
    if (!std::regex_search(assembly, m, std::regex(std::string(R"(\.)") + name + R"(:\s+(\d+))"))) return false;
    value = std::stoll(m[1]);
    return true;
  };
  std::int64_t vgprs = 0, agprs = 0, sgprs = 0, wave = 0;
  r.known = field("vgpr_count", vgprs) && field("sgpr_count", sgprs) &&
            field("group_segment_fixed_size", r.lds_bytes) && field("private_segment_fixed_size", r.scratch_bytes);
  field("agpr_count", agprs);
  field("wavefront_size", wave);
  r.vgprs = static_cast<int>(vgprs);
  r.agprs = static_cast<int>(agprs);
  r.sgprs = static_cast<int>(sgprs);
  r.wavefront_size = static_cast<int>(wave);
  // The body: instruction lines (a tab, then a lower-case mnemonic) between the kernel's label and
  // the end of its function.
  std::istringstream in(assembly);
  bool in_body = false;
  const std::regex label(R"(^[A-Za-z_][A-Za-z0-9_]*:)");
  const std::regex instruction(R"(^\s+([a-z][a-z0-9_]*)(\s|$))");
  for (std::string line; std::getline(in, line);) {
    if (!in_body) {
      in_body = std::regex_search(line, label);
      continue;
    }
    if (line.rfind(".Lfunc_end", 0) == 0) break;
    std::smatch m;
    if (!std::regex_search(line, m, instruction)) continue;
    const std::string mnemonic = m[1];
    const std::string kind = instruction_class(mnemonic);
    ++r.instruction_classes[kind];
    if (kind == "matrix") ++r.matrix_instructions[mnemonic];
  }
  return r;
}

CompiledAssembly compile_assembly(const CompileRequest& request) {
  const CachedBuild built = cached_build("hip-modules", key_text(request, "assembly"), {"log", "s"}, [&] {
    HipccOutput out = run_hipcc(request, {"--cuda-device-only", "-S"}, "kernel.s");
    return std::map<std::string, std::string>{{"log", std::move(out.log)}, {"s", std::move(out.product)}};
  });
  CompiledAssembly result{.assembly = built.parts.at("s"), .report = {}, .log = built.parts.at("log")};
  result.report = parse_isa(result.assembly);
  return result;
}

std::string compile_code_object(const CompileRequest& request) {
  const CachedBuild built = cached_build("hip-modules", key_text(request, "code object"), {"log", "hsaco"}, [&] {
    HipccOutput out = run_hipcc(request, {"--genco"}, "kernel.hsaco");
    return std::map<std::string, std::string>{{"log", std::move(out.log)}, {"hsaco", std::move(out.product)}};
  });
  return built.parts.at("hsaco");
}

}  // namespace gemmlab::hip
