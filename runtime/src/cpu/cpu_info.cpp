#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "gemmlab/cpu.hpp"

namespace gemmlab::cpu {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "48K", "2048K", "480M" -> bytes
std::int64_t parse_size(const std::string& text) {
  if (text.empty()) return 0;
  std::int64_t value = std::atoll(text.c_str());
  switch (text.back()) {
    case 'K': return value << 10;
    case 'M': return value << 20;
    case 'G': return value << 30;
    default: return value;
  }
}

// Number of CPUs listed in a sysfs list such as "0-3,8".
int count_cpu_list(const std::string& list) {
  int count = 0;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    auto dash = part.find('-');
    if (dash == std::string::npos) count += 1;
    else count += std::atoi(part.c_str() + dash + 1) - std::atoi(part.c_str()) + 1;
  }
  return count;
}

std::vector<CacheLevel> read_sysfs_caches() {
  std::vector<CacheLevel> caches;
  for (int index = 0; index < 16; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::string level = read_line(dir + "level");
    if (level.empty()) break;
    CacheLevel c;
    c.level = std::atoi(level.c_str());
    c.type = read_line(dir + "type");
    c.size_bytes = parse_size(read_line(dir + "size"));
    c.shared_by_cores = std::max(1, count_cpu_list(read_line(dir + "shared_cpu_list")));
    caches.push_back(c);
  }
  return caches;
}

std::vector<CacheLevel> read_cpuid_caches([[maybe_unused]] int cores) {
  std::vector<CacheLevel> caches;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  auto subleaves = [&](unsigned leaf) {
    for (unsigned sub = 0; sub < 16; ++sub) {
      __cpuid_count(leaf, sub, eax, ebx, ecx, edx);
      const auto cache = cache_from_cpuid_subleaf(eax, ebx, ecx);
      if (!cache) break;
      caches.push_back(*cache);
    }
  };
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  const unsigned max_extended = __get_cpuid_max(0x80000000u, nullptr);
  if (max_leaf >= 4) subleaves(4);
  if (caches.empty() && max_extended >= 0x8000001Du) {
    __cpuid(0x80000001u, eax, ebx, ecx, edx);
    const bool topology_extensions = (ecx >> 22) & 1u;  // AMD: leaf 0x8000001D is valid
    if (topology_extensions) subleaves(0x8000001Du);
  }
  if (caches.empty() && max_extended >= 0x80000006u) {
    unsigned ecx5 = 0, edx5 = 0, ecx6 = 0, edx6 = 0;
    __cpuid(0x80000005u, eax, ebx, ecx5, edx5);
    __cpuid(0x80000006u, eax, ebx, ecx6, edx6);
    caches = caches_from_amd_legacy_leaves(ecx5, edx5, ecx6, edx6, cores);
  }
  for (CacheLevel& c : caches) c.shared_by_cores = std::clamp(c.shared_by_cores, 1, std::max(1, cores));
#endif
  return caches;
}

// Field of /proc/cpuinfo for the first CPU ("model name", "vendor_id", "cpu MHz").
std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        return value;
      }
    }
  return {};
}

double clock_ghz() {
  // Highest frequency the kernel reports; virtual machines often only give the nominal one.
  std::string max_khz = read_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  if (!max_khz.empty()) return std::atof(max_khz.c_str()) * 1e-6;
  return std::atof(cpuinfo_field("cpu MHz").c_str()) * 1e-3;
}

bool disabled(const std::string& feature) {
  const char* env = std::getenv("GEMMLAB_CPU_DISABLE");
  if (env == nullptr) return false;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ','))
    if (item == feature) return true;
  return false;
}
}  // namespace

std::optional<CacheLevel> cache_from_cpuid_subleaf(unsigned eax, unsigned ebx, unsigned ecx) {
  const unsigned type = eax & 0x1fu;
  if (type == 0 || type > 3) return std::nullopt;
  CacheLevel c;
  c.type = type == 1 ? "Data" : type == 2 ? "Instruction" : "Unified";
  c.level = static_cast<int>((eax >> 5) & 0x7u);
  // Maximum number of logical processors sharing the cache, minus one: an upper bound on the
  // sharing, clamped to the cores present by the caller.
  c.shared_by_cores = static_cast<int>(((eax >> 14) & 0xfffu) + 1);
  const std::int64_t ways = ((ebx >> 22) & 0x3ffu) + 1;
  const std::int64_t partitions = ((ebx >> 12) & 0x3ffu) + 1;
  const std::int64_t line_bytes = (ebx & 0xfffu) + 1;
  const std::int64_t sets = static_cast<std::int64_t>(ecx) + 1;
  c.size_bytes = ways * partitions * line_bytes * sets;
  return c;
}

std::vector<CacheLevel> caches_from_amd_legacy_leaves(unsigned ecx5, unsigned edx5, unsigned ecx6,
                                                      unsigned edx6, int cores) {
  std::vector<CacheLevel> caches;
  auto add = [&](int level, const char* type, std::int64_t bytes, int shared) {
    if (bytes > 0) caches.push_back(CacheLevel{level, type, bytes, shared});
  };
  add(1, "Data", static_cast<std::int64_t>(ecx5 >> 24) << 10, 1);
  add(1, "Instruction", static_cast<std::int64_t>(edx5 >> 24) << 10, 1);
  add(2, "Unified", static_cast<std::int64_t>(ecx6 >> 16) << 10, 1);
  add(3, "Unified", static_cast<std::int64_t>(edx6 >> 18) * (512 << 10), std::max(1, cores));
  return caches;
}

namespace {
// The cores this process may run on: its CPU affinity (taskset, a batch system's binding, an
// MPI rank's share), else every online CPU.
int usable_cores() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0) return CPU_COUNT(&allowed);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}
}  // namespace

DeviceInfo detect() {
  DeviceInfo d;
  d.backend = "cpu";
  d.index = 0;
  d.host_memory = true;
  d.name = cpuinfo_field("model name");
  d.vendor = cpuinfo_field("vendor_id");
  d.cores = usable_cores();
  __builtin_cpu_init();
  // cpuid bits, checked with the OS's register-state support (libgcc tests XCR0 as well).
  const std::pair<const char*, bool> features[] = {
      {"sse2", __builtin_cpu_supports("sse2")},       {"avx", __builtin_cpu_supports("avx")},
      {"avx2", __builtin_cpu_supports("avx2")},       {"fma", __builtin_cpu_supports("fma")},
      {"avx512f", __builtin_cpu_supports("avx512f")},
  };
  for (auto [name, present] : features)
    if (present && !disabled(name)) d.features.emplace_back(name);
  d.simd_width_bits = d.has_feature("avx512f") ? 512 : d.has_feature("avx") ? 256 : 128;
  d.caches = read_sysfs_caches();
  if (d.caches.empty()) d.caches = read_cpuid_caches(d.cores);
  d.clock_ghz = clock_ghz();
  // Two vector FMA pipes per core from Haswell on (AVX2+FMA); Xeon cores with AVX-512 have two
  // 512-bit pipes, some client cores one: the measured FMA ceiling shows which.
  d.fma_units_per_core = d.has_feature("fma") ? 2 : 1;
  const double fma_flops = d.has_feature("fma") ? 2.0 : 1.0;  // without FMA: separate mul/add
  const double lanes32 = d.simd_width_bits / 32.0;
  d.peak_gflops_fp32 = d.cores * d.clock_ghz * d.fma_units_per_core * lanes32 * fma_flops;
  d.peak_gflops_fp64 = d.peak_gflops_fp32 / 2;
  return d;
}

}  // namespace gemmlab::cpu
