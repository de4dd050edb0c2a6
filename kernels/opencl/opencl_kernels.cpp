// The OpenCL curriculum's specifications: each .cl file's space, default and launch shape (the
// kernels' ideas are in the .cl files' opening comments).
#include "opencl_kernel.hpp"

namespace gemmlab::opencl {
namespace {

class Naive final : public OpenClKernel {
 public:
  Naive() : OpenClKernel("01_naive", "one work-item per element of C, a dot product over K") {}
  SearchSpace space(const DeviceInfo& d, Precision) const override {
    SearchSpace s;
    s.add("WGN", pow2_range(1, 256), "work-group columns (dimension 0, along N)")
        .add("WGM", pow2_range(1, 256), "work-group rows (dimension 1, along M)");
    let_max_work_group(s, d);
    s.derive("work_group", "WGN * WGM", "work-items per work-group");
    s.require("work_group <= max_work_group", "the device's work-group size");
    return s;
  }
  Config preferred_config(const DeviceInfo&, Precision) const override { return {{"WGN", 16}, {"WGM", 4}}; }
  LaunchShape shape(const Config& c, const Problem& p) const override {
    const auto wgn = c.at("WGN"), wgm = c.at("WGM");
    return {{round_up(p.n, wgn), round_up(p.m, wgm)}, {static_cast<std::size_t>(wgn), static_cast<std::size_t>(wgm)}};
  }
};

class LocalTiled final : public OpenClKernel {
 public:
  LocalTiled() : OpenClKernel("02_local_tiled", "TS x TS tiles of A and B staged in local memory") {}
  SearchSpace space(const DeviceInfo& d, Precision precision) const override {
    SearchSpace s;
    s.add("TS", pow2_range(2, 32), "tile side; the work-group is TS x TS");
    let_max_work_group(s, d);
    let_local_memory(s, d, precision);
    s.derive("tile_m", "TS", "rows of C a staged block covers")
        .derive("tile_n", "TS", "columns of C a staged block covers")
        .derive("work_group", "TS * TS", "work-items per work-group: one per element of the block")
        .derive("local_bytes", "2 * TS * TS * elem_bytes", "local memory used: a TS x TS tile of A and one of B");
    s.require("work_group <= max_work_group", "the device's work-group size")
        .require("local_bytes <= local_memory", "the tiles fit in local memory");
    return s;
  }
  Config preferred_config(const DeviceInfo&, Precision) const override { return {{"TS", 16}}; }
  LaunchShape shape(const Config& c, const Problem& p) const override {
    const auto ts = c.at("TS");
    return {{round_up(p.n, ts), round_up(p.m, ts)}, {static_cast<std::size_t>(ts), static_cast<std::size_t>(ts)}};
  }
};

// 03 and 04 share their parameters, constraints and launch shape (04 differs only inside).
class RegisterTiled final : public OpenClKernel {
 public:
  RegisterTiled(std::string name, std::string summary) : OpenClKernel(std::move(name), std::move(summary)) {}
  SearchSpace space(const DeviceInfo& d, Precision precision) const override {
    SearchSpace s;
    s.add("MWG", pow2_range(8, 128), "work-group tile rows (M)")
        .add("MDIMC", pow2_range(1, 32), "work-items along M computing")
        .add("NWG", pow2_range(8, 128), "work-group tile columns (N)")
        .add("NDIMC", pow2_range(1, 32), "work-items along N computing")
        .add("VWN", pow2_range(1, 8), "vector width of B loads and C stores (along N)")
        .add("SA", {0, 1}, "stage the A tile in local memory")
        .add("SB", {0, 1}, "stage the B tile in local memory")
        .add("KWG", pow2_range(8, 64), "depth of a tile step (K)")
        .add("VWM", pow2_range(1, 8), "vector width of A loads (along K)")
        .add("KWI", pow2_range(1, 8), "unroll factor of the loop over KWG");
    // MDIMC, NDIMC <= 32 keep work-groups within 1024 work-items (pocl allows 4096; no tile here
    // needs more), so only a smaller device limit removes configurations.
    let_max_work_group(s, d);
    let_local_memory(s, d, precision);
    s.derive("tile_m", "MWG", "rows of C a work-group's staged block covers")
        .derive("tile_n", "NWG", "columns of C a work-group's staged block covers")
        .derive("work_group", "MDIMC * NDIMC", "work-items per work-group")
        .derive("local_bytes", "(SA * MWG * KWG + SB * KWG * NWG) * elem_bytes",
                "local memory used: the staged MWG x KWG tile of A and KWG x NWG tile of B");
    s.require("MWG % MDIMC == 0", "whole rows of C per work-item: MWI = MWG / MDIMC")
        .require("NWG % (NDIMC * VWN) == 0", "whole vectors of C per work-item: NWI = NWG / NDIMC, a multiple of VWN")
        .require("work_group <= max_work_group", "the device's work-group size")
        // A's vector width only matters for a staged A tile: otherwise it is 1, so that the space
        // holds no two configurations that build the same kernel.
        .require("SA == 1 || VWM == 1", "VWM only vectorises the staging of A")
        // The tiles are loaded with the work-items in their computing layout: A as MDIMC rows by
        // NDIMC vectors along K, B as MDIMC rows along K by NDIMC vectors along N.
        .require("KWG % MDIMC == 0", "the B tile is loaded MDIMC rows along K at a time")
        .require("KWG % (NDIMC * VWM) == 0", "the A tile is loaded NDIMC vectors of VWM along K at a time")
        .require("KWG % KWI == 0", "KWI unrolls the loop over KWG")
        .require("local_bytes <= local_memory", "the staged tiles fit in local memory");
    return s;
  }
  // 4 x 8 of C per work-item, 8 x 8 work-items; tiles in local memory on a GPU, straight from
  // global memory (through the caches) on a CPU.
  Config preferred_config(const DeviceInfo& d, Precision) const override {
    const ParamValue staged = d.has_feature("gpu") ? 1 : 0;
    return {{"MWG", 32}, {"NWG", 64}, {"KWG", 32}, {"MDIMC", 8}, {"NDIMC", 8}, {"VWM", staged ? 4 : 1},
            {"VWN", 8}, {"KWI", 2}, {"SA", staged}, {"SB", staged}};
  }
  LaunchShape shape(const Config& c, const Problem& p) const override {
    const auto ndimc = c.at("NDIMC"), mdimc = c.at("MDIMC");
    const std::size_t groups_n = round_up(p.n, c.at("NWG")) / static_cast<std::size_t>(c.at("NWG"));
    const std::size_t groups_m = round_up(p.m, c.at("MWG")) / static_cast<std::size_t>(c.at("MWG"));
    return {{groups_n * static_cast<std::size_t>(ndimc), groups_m * static_cast<std::size_t>(mdimc)},
            {static_cast<std::size_t>(ndimc), static_cast<std::size_t>(mdimc)}};
  }
};

}  // namespace

std::unique_ptr<Kernel> make_naive() { return std::make_unique<Naive>(); }
std::unique_ptr<Kernel> make_local_tiled() { return std::make_unique<LocalTiled>(); }
std::unique_ptr<Kernel> make_register_tiled() {
  return std::make_unique<RegisterTiled>("03_register_tiled",
                                         "MWI x NWI of C per work-item in registers, vector loads, optional local tiles");
}
std::unique_ptr<Kernel> make_interior_fast_path() {
  return std::make_unique<RegisterTiled>("04_interior_fast_path",
                                         "03 without bounds checks in the work-groups whose tile lies inside C");
}

}  // namespace gemmlab::opencl
