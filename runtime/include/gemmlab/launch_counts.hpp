// What a simulated device counted in a kernel launch (instructions by class, FLOPs by unit,
// memory traffic): a device that counts implements CountingDevice beside Device, and commands ask
// any device through last_launch_counts().
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gemmlab/device.hpp"

namespace gemmlab {

using LaunchCounts = std::vector<std::pair<std::string, double>>;  // by name, in order

class CountingDevice {
 public:
  virtual ~CountingDevice() = default;
  virtual LaunchCounts last_launch_counts() const = 0;
};

// The counts of the device's last launch; empty for a device that does not count.
inline LaunchCounts last_launch_counts(const Device& device) {
  const auto* counting = dynamic_cast<const CountingDevice*>(&device);
  return counting != nullptr ? counting->last_launch_counts() : LaunchCounts{};
}

// A device that executes kernels functionally on a simulator: results and counts, no time of
// its own (the PTX simulator's CUDA devices carry the feature "simulated").
inline bool functional_simulation(const DeviceInfo& device) { return device.has_feature("simulated"); }

}  // namespace gemmlab
