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
  if (auto s = supported(device.info()); !s.ok) throw Unsupported(name_ + ": " + s.reason);
  validate(problem);
  if (!supports(problem.precision))
    throw std::invalid_argument(name_ + " has no " + std::string(to_string(problem.precision)) +
                                " variant; precisions: fp32, fp64");
  space(device.info(), problem.precision).check(config);
  return build(device.info(), problem, config);
}

std::string CpuKernel::source_hash() const {
  const auto found = embedded_files().find(name_ + ".cpp");
  if (found == embedded_files().end()) throw std::logic_error("no embedded source kernels/cpu/" + name_ + ".cpp");
  return std::string(found->second.sha256);
}

}  // namespace gemmlab::cpu
