#include "cpu_kernel.hpp"

namespace gemmlab::cpu {

Support CpuKernel::supported(const DeviceInfo& device) const {
  for (const auto& feature : required_features_)
    if (!device.has_feature(feature))
      return {false, "needs the " + feature + " instruction set, which this CPU (" + device.name +
                         ") does not report"};
  return {};
}

std::unique_ptr<Executable> CpuKernel::prepare(Device& device, const Problem& problem,
                                               const Config& config) const {
  check_device_and_problem(device.info(), problem);
  space(device.info(), problem.precision).check(config);
  return build(device.info(), problem, config);
}

std::string CpuKernel::source_hash() const {
  return embedded_sha256(embedded_files(), "cpu", name_ + ".cpp");
}

}  // namespace gemmlab::cpu
