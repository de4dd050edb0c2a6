// Run-time compilation with NVRTC, and the cache of compiled modules.
#include <nvrtc.h>

#include <cstdlib>
#include <map>
#include <regex>

#include "gemmlab/cuda.hpp"
#include "module_cache.hpp"

#ifndef GEMMLAB_CUDA_INCLUDE_DIR
#define GEMMLAB_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace gemmlab::cuda {
namespace {

// NVRTC 12.9 and later keep a cache of their own where a CUDA driver is installed, and a module
// served from it comes without ptxas's resource report (registers, spills, shared memory), which
// the compile checks and the occupancy figures need. gemmlab's module cache (compile() below)
// keeps the report with the module, so NVRTC's is switched off, before main() and so before any
// thread can read the environment; a CUDA_CACHE_DISABLE set by the user is left as it is.
[[maybe_unused]] const bool nvrtc_cache_disabled = [] { return ::setenv("CUDA_CACHE_DISABLE", "1", 0) == 0; }();

void check(nvrtcResult result, const char* what) {
  if (result != NVRTC_SUCCESS) throw std::runtime_error(std::string(what) + ": " + nvrtcGetErrorString(result));
}

// Toolkit headers for the kernels' includes (cuda_fp16.h, mma.h): $CUDA_HOME/include, else the
// toolkit this program was built with.
std::string include_dir() {
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* home = std::getenv(variable); home != nullptr && home[0] != '\0') return std::string(home) + "/include";
  return GEMMLAB_CUDA_INCLUDE_DIR;
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
  check(nvrtcGetPTXSize(program, &size), "nvrtcGetPTXSize");
  module.ptx.resize(size);
  check(nvrtcGetPTX(program, module.ptx.data()), "nvrtcGetPTX");
  while (!module.ptx.empty() && module.ptx.back() == '\0') module.ptx.pop_back();
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
  std::string key_text = request.source + '\n' + request.arch + '\n' + nvrtc_version() + '\n' + include_dir();
  for (const auto& [name, text] : request.headers) key_text += '\n' + name + '\n' + text;
  for (const auto& o : request.options) key_text += '\n' + o;
  // The log and the PTX first: the image marks a complete entry.
  const CachedBuild built = cached_build("cuda-modules", key_text, {"log", "ptx", "cubin"}, [&] {
    CompiledModule module = run_nvrtc(request);
    return std::map<std::string, std::string>{
        {"log", std::move(module.log)}, {"ptx", std::move(module.ptx)}, {"cubin", std::move(module.image)}};
  });
  CompiledModule module{.image = built.parts.at("cubin"), .ptx = built.parts.at("ptx"), .log = built.parts.at("log"),
                        .usage = {}, .from_disk_cache = built.from_disk_cache};
  module.usage = parse_ptxas_report(module.log);
  return module;
}

}  // namespace gemmlab::cuda
