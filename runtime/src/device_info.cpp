#include <algorithm>
#include <cstdio>

#include "gemmlab/device.hpp"

namespace gemmlab {

bool DeviceInfo::has_feature(const std::string& feature) const {
  return std::find(features.begin(), features.end(), feature) != features.end();
}

std::int64_t DeviceInfo::cache_bytes(int level) const {
  for (const auto& c : caches)
    if (c.level == level && c.type != "Instruction") return c.size_bytes;
  return 0;
}

std::string fingerprint(const DeviceInfo& d) {
  std::string text = d.backend + '|' + d.name + '|' + d.vendor + '|' + std::to_string(d.cores) + '|' +
                     std::to_string(d.simd_width_bits) + '|' + std::to_string(d.fma_units_per_core);
  for (const auto& f : d.features) text += '|' + f;
  for (const auto& c : d.caches)
    text += '|' + std::to_string(c.level) + c.type + std::to_string(c.size_bytes) + '/' + std::to_string(c.shared_by_cores);
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a: stable across builds and platforms
  for (unsigned char ch : text) hash = (hash ^ ch) * 1099511628211ull;
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(hash));
  return d.backend + ":" + d.name + " " + digits;
}

}  // namespace gemmlab
