#include "kokkos_kernel.hpp"

namespace gemmlab::kokkos {

Support KokkosKernel::supported(const DeviceInfo& device) const {
  if (device.backend != "kokkos") return {false, "runs on kokkos devices, not " + device.backend};
  return {};
}

std::unique_ptr<Executable> KokkosKernel::prepare(Device& device, const Problem& problem, const Config& config) const {
  if (auto s = supported(device.info()); !s.ok) throw Unsupported(name_ + ": " + s.reason);
  validate(problem);
  if (!supports(problem.precision))
    throw std::invalid_argument(name_ + " has no " + std::string(to_string(problem.precision)) +
                                " variant; precisions: fp32, fp64");
  space(device.info(), problem.precision).check(config);
  return build(device.info(), problem, config);
}

std::string KokkosKernel::source_hash() const {
  const auto found = embedded_files().find(name_ + ".cpp");
  if (found == embedded_files().end()) throw std::logic_error("no embedded source kernels/kokkos/" + name_ + ".cpp");
  return std::string(found->second.sha256);
}

SpaceLimits limits_of(const DeviceInfo& device) { return space_limits(device.index); }

std::int64_t register_budget_bytes(const DeviceInfo& device, const SpaceLimits& limits) {
  if (!limits.host) return 64 * 4;
  const int bits = std::max(128, device.simd_width_bits);
  const int registers = bits >= 512 ? 24 : 12;
  return std::int64_t{registers} * bits / 8;
}

}  // namespace gemmlab::kokkos
