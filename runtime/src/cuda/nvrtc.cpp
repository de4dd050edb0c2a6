// Run-time compilation with NVRTC, and the cache of compiled modules.
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <condition_variable>
#include <mutex>
#include <set>
#include <regex>
#include <sstream>
#include <unistd.h>

#include "gemmlab/cuda.hpp"

#ifndef GEMMLAB_CUDA_INCLUDE_DIR
#define GEMMLAB_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace gemmlab::cuda {
namespace {

void check(nvrtcResult result, const char* what) {
  if (result != NVRTC_SUCCESS) throw std::runtime_error(std::string(what) + ": " + nvrtcGetErrorString(result));
}

// 128-bit FNV-1a (two 64-bit lanes with different offsets): a cache key, not a security measure.
std::string content_hash(const std::string& text) {
  std::uint64_t a = 14695981039346656037ull, b = 0x6c62272e07bb0142ull;
  for (unsigned char ch : text) {
    a = (a ^ ch) * 1099511628211ull;
    b = (b ^ ch) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
  }
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  return hex;
}

// Toolkit headers for the kernels' includes (cuda_fp16.h, mma.h): $CUDA_HOME/include, else the
// toolkit this program was built with.
std::string include_dir() {
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* home = std::getenv(variable); home != nullptr && home[0] != '\0') return std::string(home) + "/include";
  return GEMMLAB_CUDA_INCLUDE_DIR;
}

std::filesystem::path disk_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return std::filesystem::path(xdg) / "gemmlab" / "cuda-modules";
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0')
    return std::filesystem::path(home) / ".cache" / "gemmlab" / "cuda-modules";
  return {};
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Written to a temporary name and renamed: a concurrent reader sees the whole file or none.
void write_atomically(const std::filesystem::path& path, const std::string& bytes) {
  const std::filesystem::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return;  // a cache that cannot be written is only slower
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) std::filesystem::remove(tmp, error);
}

CompiledModule run_nvrtc(const CompileRequest& request) {
  nvrtcProgram program;
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : request.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  check(nvrtcCreateProgram(&program, request.source.c_str(), request.source_name.c_str(),
                           static_cast<int>(request.headers.size()), header_texts.data(), header_names.data()),
        "nvrtcCreateProgram");
  std::vector<std::string> options = request.options;
  options.push_back("-arch=" + request.arch);  // a real architecture: NVRTC produces a CUBIN
  options.push_back("-I" + include_dir());
  options.push_back("--std=c++17");
  options.push_back("--ptxas-options=-v");  // the resource report, read by parse_ptxas_report
  std::vector<const char*> pointers;
  for (const auto& o : options) pointers.push_back(o.c_str());
  const nvrtcResult result = nvrtcCompileProgram(program, static_cast<int>(pointers.size()), pointers.data());
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  CompiledModule module;
  module.log.resize(log_size);
  nvrtcGetProgramLog(program, module.log.data());
  while (!module.log.empty() && module.log.back() == '\0') module.log.pop_back();
  if (result != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&program);
    throw CompileError(request.source_name + " does not compile for " + request.arch + ": " + module.log);
  }
  std::size_t size = 0;
  check(nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
  module.image.resize(size);
  check(nvrtcGetCUBIN(program, module.image.data()), "nvrtcGetCUBIN");
  nvrtcDestroyProgram(&program);
  module.usage = parse_ptxas_report(module.log);
  return module;
}

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string arch_name(int compute_capability, bool arch_specific) {
  return "sm_" + std::to_string(compute_capability) + (arch_specific ? "a" : "");
}

ResourceUsage parse_ptxas_report(const std::string& log) {
  ResourceUsage usage;
  std::smatch m;
  if (std::regex_search(log, m, std::regex(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)"))) {
    usage.stack_bytes = std::stoll(m[1]);
    usage.spill_store_bytes = std::stoll(m[2]);
    usage.spill_load_bytes = std::stoll(m[3]);
    usage.known = true;
  }
  if (std::regex_search(log, m, std::regex(R"(Used (\d+) registers)"))) usage.registers = std::stoi(m[1]);
  else usage.known = false;
  if (std::regex_search(log, m, std::regex(R"((\d+) bytes smem)"))) usage.shared_bytes = std::stoll(m[1]);
  return usage;
}

CompiledModule compile(const CompileRequest& request) {
  // A request being compiled on another thread (the tuner's look-ahead) is waited for, not
  // compiled twice.
  static std::mutex in_flight_mutex;
  static std::condition_variable finished;
  static std::set<std::string> in_flight;
  static std::mutex mutex;
  static std::map<std::string, CompiledModule> in_memory;
  std::string key_text = request.source + '\n' + request.arch + '\n' + nvrtc_version() + '\n' + include_dir();
  for (const auto& [name, text] : request.headers) key_text += '\n' + name + '\n' + text;
  for (const auto& o : request.options) key_text += '\n' + o;
  const std::string key = content_hash(key_text);
  {
    std::unique_lock lock(in_flight_mutex);
    finished.wait(lock, [&] { return in_flight.count(key) == 0; });
    std::lock_guard memory_lock(mutex);
    if (auto found = in_memory.find(key); found != in_memory.end()) return found->second;
    in_flight.insert(key);
  }
  struct Done {  // however this ends, the request is no longer in flight
    const std::string& key;
    ~Done() {
      {
        std::lock_guard lock(in_flight_mutex);
        in_flight.erase(key);
      }
      finished.notify_all();
    }
  } done{key};
  const std::filesystem::path dir = disk_cache_dir();
  if (!dir.empty()) {
    const auto image = dir / (key + ".cubin"), log = dir / (key + ".log");
    std::error_code error;
    if (std::filesystem::exists(image, error) && std::filesystem::exists(log, error)) {
      CompiledModule module{.image = read_file(image), .log = read_file(log), .usage = {}, .from_disk_cache = true};
      module.usage = parse_ptxas_report(module.log);
      if (!module.image.empty()) {
        std::lock_guard lock(mutex);
        return in_memory.emplace(key, module).first->second;
      }
    }
  }
  CompiledModule module = run_nvrtc(request);  // outside the lock: compilations run in parallel
  if (!dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (!error) {
      write_atomically(dir / (key + ".log"), module.log);  // the log first: the image marks completion
      write_atomically(dir / (key + ".cubin"), module.image);
    }
  }
  std::lock_guard lock(mutex);
  return in_memory.emplace(key, std::move(module)).first->second;
}

}  // namespace gemmlab::cuda
