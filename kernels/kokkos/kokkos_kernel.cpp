#include "kokkos_kernel.hpp"

namespace gemmlab::kokkos {

Support KokkosKernel::supported(const DeviceInfo& device) const {
  if (device.backend != "kokkos") return {false, "runs on kokkos devices, not " + device.backend};
  return {};
}

std::unique_ptr<Executable> KokkosKernel::prepare(Device& device, const Problem& problem, const Config& config) const {
  check_device_and_problem(device.info(), problem);
  space(device.info(), problem.precision).check(config);
  return build(device.info(), problem, config);
}

std::string KokkosKernel::source_hash() const {
  return embedded_sha256(embedded_files(), "kokkos", name_ + ".cpp");
}

SpaceLimits limits_of(const DeviceInfo& device) { return space_limits(device.index); }

std::int64_t register_budget_bytes(const DeviceInfo& device, const SpaceLimits& limits) {
  if (!limits.host) return 64 * 4;
  const int bits = std::max(128, device.simd_width_bits);
  const int registers = bits >= 512 ? 24 : 12;
  return std::int64_t{registers} * bits / 8;
}

void constrain_team(SearchSpace& s, const SpaceLimits& limits, std::int64_t element_bytes, const std::string& staged_text,
                    std::int64_t overhead, std::function<std::int64_t(const Config&)> staged_elements,
                    const std::vector<std::string>& also_uses) {
  const std::int64_t scratch0 = limits.scratch_bytes_max, scratch1 = limits.scratch1_bytes_max;
  std::vector<std::string> uses = {"MT", "NT", "KT", "LEVEL"};
  uses.insert(uses.end(), also_uses.begin(), also_uses.end());
  s.constrain(staged_text + " * " + std::to_string(element_bytes) + " + " + std::to_string(overhead) +
                  " <= scratch_size_max(LEVEL) (" + std::to_string(scratch0) + " B, " + std::to_string(scratch1) + " B)",
              uses, [=](const Config& c) {
                const std::int64_t bytes = staged_elements(c) * element_bytes + overhead;
                return bytes <= (c.at("LEVEL") == 0 ? scratch0 : scratch1);
              });
  if (!limits.host)
    s.constrain("TEAM * VEC <= " + std::to_string(limits.team_size_max) + " (threads per team)", {"TEAM", "VEC"},
                [=](const Config& c) { return c.at("TEAM") * c.at("VEC") <= limits.team_size_max; });
}

}  // namespace gemmlab::kokkos
