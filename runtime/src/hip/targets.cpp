// What AMD's documentation says of each target the kernels are compiled for: the limits their
// spaces are built from when no such device is present. The figures, with their sources, are the
// datasheet catalogue's (data/datasheets/devices.json, gpu_part); this turns a part into the
// description of a device.
#include <stdexcept>

#include "gemmlab/hip.hpp"

namespace gemmlab::hip {

DeviceInfo device_info_for_target(const std::string& target) {
  const GpuPart* part = nullptr;
  try {
    part = &gpu_part(target);
  } catch (const std::invalid_argument&) {
  }
  if (part == nullptr || part->vendor != "AMD") {
    std::string known;
    for (const GpuPart& p : gpu_parts())
      if (p.vendor == "AMD")
        for (const std::string& t : p.targets) known += (known.empty() ? "" : ", ") + t;
    throw std::invalid_argument("no description of AMD target '" + target + "' (known: " + known + ")");
  }
  const GpuLimits& g = part->limits;
  DeviceInfo d;
  d.backend = "hip";
  d.name = part->name;
  d.vendor = "AMD";
  d.cores = g.multiprocessors;
  d.simd_width_bits = g.warp_size * 32;
  d.features = {target, g.warp_size == 64 ? "wave64" : "wave32"};
  d.features.insert(d.features.end(), part->features.begin(), part->features.end());
  d.clock_ghz = part->clock_ghz;
  d.caches = {{.level = 2, .type = "Unified", .size_bytes = g.l2_bytes, .shared_by_cores = g.multiprocessors}};
  d.peak_gflops_fp32 = g.multiprocessors * part->fp32_flops_per_cu_per_clock * part->clock_ghz;
  d.peak_gflops_fp64 = g.multiprocessors * part->fp64_flops_per_cu_per_clock * part->clock_ghz;
  d.gpu = g;
  return d;
}

}  // namespace gemmlab::hip
