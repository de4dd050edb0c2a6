#include "cpu_kernel.hpp"

namespace gemmlab::cpu {

CpuKernel::CpuKernel(std::string name, std::string summary, std::vector<std::string> required_features)
    : Kernel({.name = name,
              .backend = "cpu",
              .summary = std::move(summary),
              .precisions = {Precision::fp32, Precision::fp64},
              .source_sha256 = embedded_sha256(embedded_files(), "cpu", name + ".cpp")}),
      required_features_(std::move(required_features)) {}

Support CpuKernel::supported(const DeviceInfo& device) const {
  for (const auto& feature : required_features_)
    if (!device.has_feature(feature))
      return {false, "needs the " + feature + " instruction set, which this CPU (" + device.name +
                         ") does not report"};
  return {};
}

std::int64_t let_cache(SearchSpace& s, const DeviceInfo& device, const std::string& name, int level,
                       std::int64_t assumed) {
  const std::int64_t reported = device.cache_bytes(level);
  const std::string cache = level == 1 ? "L1 data cache" : "L" + std::to_string(level) + " cache";
  s.let(name, reported > 0 ? reported : assumed,
        "bytes of the " + cache + (reported > 0 ? "" : ", assumed: the OS reports none"));
  return reported > 0 ? reported : assumed;
}

bool uses_avx512(const DeviceInfo& device) { return device.has_feature("avx512f"); }

Support avx512_or_avx2(const DeviceInfo& device) {
  if (uses_avx512(device) || (device.has_feature("avx2") && device.has_feature("fma"))) return {};
  return {false, "needs the avx512f instruction set, or avx2 and fma, which this CPU (" + device.name +
                     ") does not report"};
}

std::string let_vector_registers(SearchSpace& s, const DeviceInfo& device) {
  const bool avx512 = uses_avx512(device);
  const std::string name = avx512 ? "zmm_registers" : "ymm_registers";
  s.let(name, avx512 ? 32 : 16, avx512 ? "AVX-512 vector registers" : "AVX2 vector registers");
  return name;
}

}  // namespace gemmlab::cpu
