// gemmlab devices: every device of every backend, its specification and measured ceilings.
#include <fmt/core.h>

#include "cli.hpp"
#include "gemmlab/json.hpp"

namespace gemmlab::cli {

void add_devices_command(CLI::App& app, Outcome&) {
  struct Options {
    bool json = false;
    bool no_measure = false;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("devices", "List devices with their specifications and measured ceilings");
  add_json_flag(cmd, options->json);
  cmd->add_flag("--no-measure", options->no_measure, "Skip the FMA and memory-bandwidth micro-benchmarks");
  cmd->callback([options] {
    std::vector<DeviceInfo> infos;
    for (const auto& name : registry().backend_names()) {
      Backend& backend = registry().backend(name);
      for (const auto& listed : backend.devices()) {
        auto device = backend.open(listed.index);
        if (!options->no_measure) device->measure_ceilings();
        infos.push_back(device->info());
      }
    }
    if (options->json) return print_json({{"devices", infos}});
    for (const auto& d : infos) {
      fmt::print("{}:{}  {} ({})\n", d.backend, d.index, d.name, d.vendor);
      std::string features;
      for (const auto& f : d.features) features += f + " ";
      fmt::print("  cores {}, SIMD {} bit, features: {}\n", d.cores, d.simd_width_bits, features);
      for (const auto& c : d.caches)
        fmt::print("  L{} {:<11} {:>8} KiB, shared by {} core(s)\n", c.level, c.type, c.size_bytes / 1024,
                   c.shared_by_cores);
      fmt::print("  clock {:.2f} GHz, {} FMA unit(s)/core -> peak {:.1f} GFLOP/s fp32, {:.1f} fp64\n",
                 d.clock_ghz, d.fma_units_per_core, d.peak_gflops_fp32, d.peak_gflops_fp64);
      if (d.gpu && d.gpu->compute_capability == 0)  // an OpenCL device: its work-group limits
        fmt::print("  work-groups of up to {} work-items, {} KiB of local memory\n", d.gpu->max_threads_per_block,
                   d.gpu->shared_bytes_per_block / 1024);
      else if (d.gpu)
        fmt::print("  compute capability {}.{}, {} SMs, shared memory {} KiB per block ({} KiB opt-in), {} KiB per SM, "
                   "{} registers per SM, L2 {} MiB\n",
                   d.gpu->compute_capability / 10, d.gpu->compute_capability % 10, d.gpu->multiprocessors,
                   d.gpu->shared_bytes_per_block / 1024, d.gpu->shared_bytes_per_block_optin / 1024,
                   d.gpu->shared_bytes_per_sm / 1024, d.gpu->registers_per_sm, d.gpu->l2_bytes >> 20);
      if (d.measured) {
        // A ceiling a backend does not measure is 0, and is left out rather than shown as 0.
        const MeasuredCeilings& m = *d.measured;
        fmt::print("  measured: FMA {:.1f} GFLOP/s fp32{}{}{}; triad {:.1f} GB/s\n", m.fma_gflops_fp32,
                   m.fma_gflops_fp32_one_core > 0 ? fmt::format(" ({:.1f} on one core)", m.fma_gflops_fp32_one_core) : "",
                   m.fma_gflops_fp64 > 0 ? fmt::format(", {:.1f} fp64", m.fma_gflops_fp64) : "",
                   m.fma_gflops_fp64_one_core > 0
                       ? fmt::format(" ({:.1f} on one core)", m.fma_gflops_fp64_one_core)
                       : "",
                   m.triad_gb_per_s);
      }
    }
  });
}

}  // namespace gemmlab::cli
