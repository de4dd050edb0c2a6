#include <algorithm>

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

}  // namespace gemmlab
