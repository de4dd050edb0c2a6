// What AMD's documentation says of each target the kernels are compiled for: the limits their
// spaces are built from when no such device is present.
#include <stdexcept>

#include "gemmlab/hip.hpp"

namespace gemmlab::hip {

DeviceInfo device_info_for_target(const std::string& target) {
  struct Part {
    const char* name;
    int compute_units;
    double clock_ghz;
    int wave;
    int vgprs_per_simd_lane;  // register file of one SIMD, in registers per lane
    int max_vgprs_per_lane;   // what the compiler gives one wave's lane
    int simds_per_cu;
    int fp32_flops_per_cu_clock, fp64_flops_per_cu_clock;  // vector units, FMA = 2
    std::int64_t l2_bytes;
    const char* matrix_feature;  // "mfma", "wmma" or ""
  };
  Part part{};
  // CDNA2 (MI200 ISA guide): 4 SIMDs per CU, 512 VGPRs per lane each (architected and AGPRs
  // together), wave64; packed fp32 doubles the fp32 rate. MI250X: 220 CUs over two dies at
  // 1.7 GHz; one die is one device.
  if (target == "gfx90a")
    part = {"AMD Instinct MI250X (one die)", 110, 1.7, 64, 512, 512, 4, 256, 128, 8 << 20, "mfma"};
  // CDNA3 (MI300 ISA guide): the same CU layout; MI300X has 304 CUs at 2.1 GHz and 4 MiB of L2
  // per die. gfx940 is the CDNA3 target name older compilers know (hipcc 5.2 has no gfx942).
  else if (target == "gfx942" || target == "gfx940")
    part = {"AMD Instinct MI300X", 304, 2.1, 64, 512, 512, 4, 256, 256, 4 << 20, "mfma"};
  // RDNA3 (RDNA3 ISA guide): 2 SIMD32 per CU with 1536 VGPRs per lane each, wave32, dual issue;
  // RX 7900 XTX: 96 CUs at 2.5 GHz, 6 MiB of L2, fp64 at 1/32 of the fp32 rate. hipcc 5.2 gives a
  // gfx1100 lane at most 128 VGPRs whatever the work-group size (its listings: 128, then scratch).
  else if (target == "gfx1100")
    part = {"AMD Radeon RX 7900 XTX", 96, 2.5, 32, 1536, 128, 2, 256, 8, 6 << 20, "wmma"};
  else
    throw std::invalid_argument("no description of AMD target '" + target + "' (known: gfx90a, gfx940, gfx942, gfx1100)");

  DeviceInfo d;
  d.backend = "hip";
  d.name = part.name;
  d.vendor = "AMD";
  d.cores = part.compute_units;
  d.simd_width_bits = part.wave * 32;
  d.features = {target, part.wave == 64 ? "wave64" : "wave32"};
  if (part.matrix_feature[0] != '\0') d.features.emplace_back(part.matrix_feature);
  d.clock_ghz = part.clock_ghz;
  d.caches = {{.level = 2, .type = "Unified", .size_bytes = part.l2_bytes, .shared_by_cores = part.compute_units}};
  d.peak_gflops_fp32 = part.compute_units * part.fp32_flops_per_cu_clock * part.clock_ghz;
  d.peak_gflops_fp64 = part.compute_units * part.fp64_flops_per_cu_clock * part.clock_ghz;
  // A work-group runs on one CU: up to 1024 work-items, 64 KiB of LDS, the CU's register file.
  const int registers_per_cu = part.vgprs_per_simd_lane * part.wave * part.simds_per_cu;
  d.gpu = GpuLimits{.compute_capability = 0,
                    .multiprocessors = part.compute_units,
                    .warp_size = part.wave,
                    .max_threads_per_block = 1024,
                    .shared_bytes_per_block = 64 * 1024,
                    .shared_bytes_per_block_optin = 64 * 1024,
                    .shared_bytes_per_sm = 64 * 1024,
                    .registers_per_block = registers_per_cu,
                    .registers_per_sm = registers_per_cu,
                    .max_registers_per_thread = part.max_vgprs_per_lane,
                    .l2_bytes = part.l2_bytes};
  return d;
}

}  // namespace gemmlab::hip
