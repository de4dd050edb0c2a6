#include "kokkos_kernel.hpp"

namespace gemmlab::kokkos {

KokkosKernel::KokkosKernel(std::string name, std::string summary)
    : Kernel({.name = name,
              .backend = "kokkos",
              .summary = std::move(summary),
              .precisions = {Precision::fp32, Precision::fp64},
              .source_sha256 = embedded_sha256(embedded_files(), "kokkos", name + ".cpp")}) {}

SpaceLimits limits_of(const DeviceInfo& device) { return space_limits(device.index); }

void let_register_budget(SearchSpace& s, const DeviceInfo& device, const SpaceLimits& limits) {
  if (!limits.host) {
    s.let("register_budget", 64 * 4, "bytes of accumulators a thread may hold: 64 32-bit registers");
    return;
  }
  const int bits = std::max(128, device.simd_width_bits);
  const int total = bits >= 512 ? 32 : 16, registers = bits >= 512 ? 24 : 12;
  s.let("register_budget", std::int64_t{registers} * bits / 8,
        "bytes of accumulators a thread may hold: " + std::to_string(registers) + " of the " + std::to_string(total) +
            " " + std::to_string(bits) + "-bit vector registers, the rest for the operands");
}

void constrain_team(SearchSpace& s, const SpaceLimits& limits, const std::string& staged_elements, int views) {
  s.let("scratch0_max", limits.scratch_bytes_max, "team scratch bytes at level 0: TeamPolicy::scratch_size_max(0)")
      .let("scratch1_max", limits.scratch1_bytes_max, "team scratch bytes at level 1: TeamPolicy::scratch_size_max(1)")
      .let("view_align", 128, "bytes a scratch view may take beyond its elements, for alignment");
  s.derive("tile_m", "MT", "rows of C a team's staged tiles cover")
      .derive("tile_n", "NT", "columns of C a team's staged tiles cover")
      .derive("staged_bytes", "(" + staged_elements + ")*elem + " + std::to_string(views) + "*view_align",
              "team scratch bytes a team uses")
      .derive("scratch_size_max", "(LEVEL == 0)*scratch0_max + (LEVEL == 1)*scratch1_max",
              "team scratch bytes at LEVEL");
  s.require("staged_bytes <= scratch_size_max", "the staged tiles fit the team's scratch");
  if (!limits.host) {
    s.let("team_size_max", limits.team_size_max, "threads a team may have");
    s.require("TEAM*VEC <= team_size_max", "threads per team");
  }
}

}  // namespace gemmlab::kokkos
