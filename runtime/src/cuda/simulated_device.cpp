// The CUDA devices of the PTX simulator (gemmlab/cuda.hpp, SimulatedDevice): host memory, the
// limits of a real chip from the datasheet catalogue, no time, the counts of the last launch.
#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gemmlab/cuda.hpp"
#include "ptx/hopper.hpp"

namespace gemmlab::cuda {
namespace {

struct SimulatedTarget {
  std::string arch;  // what NVRTC compiles for
  int compute_capability;
};

const std::vector<SimulatedTarget>& targets() {
  // Hopper first: without a GPU, device 0 is the newest architecture, which runs every kernel.
  static const std::vector<SimulatedTarget> list = {{"sm_90a", 90}, {"sm_80", 80}};
  return list;
}

DeviceInfo describe(const SimulatedTarget& t, int index) {
  const GpuPart& part = gpu_part(t.arch);
  DeviceInfo d;
  d.backend = "cuda";
  d.index = index;
  d.name = "sim-" + t.arch;
  d.vendor = part.vendor + ", simulated by the PTX simulator with the limits of the " + part.name;
  d.cores = part.limits.multiprocessors;
  d.simd_width_bits = 32 * 32;
  d.features = {"sm_" + std::to_string(t.compute_capability), "simulated"};
  d.clock_ghz = part.clock_ghz;
  d.caches = {{.level = 2, .type = "Unified", .size_bytes = part.limits.l2_bytes, .shared_by_cores = d.cores}};
  d.peak_gflops_fp32 = d.cores * part.fp32_flops_per_cu_per_clock * part.clock_ghz;
  d.peak_gflops_fp64 = d.cores * part.fp64_flops_per_cu_per_clock * part.clock_ghz;
  d.gpu = part.limits;
  d.gpu->compute_capability = t.compute_capability;
  d.host_memory = true;
  return d;
}

class Simulated final : public SimulatedDevice {
 public:
  explicit Simulated(DeviceInfo info) : info_(std::move(info)), arch_(info_.name.substr(4)) {}

  const DeviceInfo& info() const override { return info_; }
  const std::string& arch() const override { return arch_; }
  double time_once(const std::function<void()>&) override {
    throw std::invalid_argument(info_.name +
                                " is a functional simulation: it counts what a kernel does but has no time; "
                                "verify and run report its counts, timing needs a GPU");
  }
  void measure_ceilings() override {}
  void record(const ptx::sim::Metrics& counts) override { last_ = counts; }
  int host_threads() const override { return host_threads_; }
  void set_host_threads(int threads) override { host_threads_ = threads; }
  LaunchCounts last_launch_counts() const override {
    if (!last_) return {};
    const ptx::sim::Metrics& m = *last_;
    auto d = [](std::int64_t v) { return static_cast<double>(v); };
    return {{"warp_instructions", d(m.warp_instructions())},
            {"thread_instructions", d(m.thread_instructions)},
            {"fp32_instructions", d(m.fp32)},
            {"fp64_instructions", d(m.fp64)},
            {"integer_instructions", d(m.integer)},
            {"memory_instructions", d(m.memory)},
            {"control_instructions", d(m.control)},
            {"sync_instructions", d(m.sync)},
            {"tensor_instructions", d(m.tensor)},
            {"fma_flops", d(m.fma_flops)},
            {"tensor_flops", d(m.tensor_flops)},
            {"global_load_requests", d(m.global_load_requests)},
            {"global_load_sectors", d(m.global_load_sectors)},
            {"global_store_requests", d(m.global_store_requests)},
            {"global_store_sectors", d(m.global_store_sectors)},
            {"global_bytes_requested", d(m.global_bytes_requested)},
            {"global_unique_bytes", d(m.global_unique_bytes)},
            {"shared_requests", d(m.shared_requests)},
            {"shared_wavefronts", d(m.shared_wavefronts)},
            {"shared_bytes", d(m.shared_bytes)},
            {"barriers", d(m.barriers)},
            {"cp_async_bytes", d(m.cp_async_bytes)},
            {"tma_bytes", d(m.tma_bytes)},
            {"registers_per_thread", d(m.registers_per_thread)},
            {"shared_bytes_per_block", d(m.shared_bytes_per_block)},
            {"blocks_per_sm", d(m.blocks_per_sm)},
            {"warps_per_sm", d(m.warps_per_sm)}};
  }

 private:
  DeviceInfo info_;
  std::string arch_;
  std::optional<ptx::sim::Metrics> last_;
  int host_threads_ = 0;
};

// cuTensorMapEncodeTiled for the simulated device: the driver's signature and error codes over
// the simulator's encoder (the enumerations have the driver's values).
CUresult encode_tiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                      const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                      const cuuint32_t* element_strides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                      CUtensorMapL2promotion l2_promotion, CUtensorMapFloatOOBfill oob_fill) {
  namespace sim = ptx::sim;
  static_assert(sizeof(CUtensorMap) == sizeof(sim::TensorMap));
  if (map == nullptr || dims == nullptr || box == nullptr || element_strides == nullptr || rank == 0 ||
      (rank > 1 && strides == nullptr))
    return CUDA_ERROR_INVALID_VALUE;
  try {
    const sim::TensorMap encoded = sim::encode_tensor_map_tiled(
        static_cast<sim::TensorMapDataType>(type), rank, reinterpret_cast<std::uintptr_t>(address), {dims, rank},
        {strides, rank - 1}, {box, rank}, {element_strides, rank}, static_cast<sim::TensorMapInterleave>(interleave),
        static_cast<sim::TensorMapSwizzle>(swizzle), static_cast<sim::TensorMapL2Promotion>(l2_promotion),
        static_cast<sim::TensorMapOobFill>(oob_fill));
    std::memcpy(map, &encoded, sizeof encoded);
    return CUDA_SUCCESS;
  } catch (const sim::TensorMapError&) {
    return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

void* simulated_driver_entry_point(const std::string& name) {
  if (name == "cuTensorMapEncodeTiled") return reinterpret_cast<void*>(&encode_tiled);
  throw std::invalid_argument("the simulated CUDA device has no driver function " + name +
                              "; it has cuTensorMapEncodeTiled");
}

std::vector<DeviceInfo> simulated_devices(int first) {
  std::vector<DeviceInfo> list;
  for (const SimulatedTarget& t : targets()) list.push_back(describe(t, first + static_cast<int>(list.size())));
  return list;
}

std::unique_ptr<SimulatedDevice> open_simulated(const DeviceInfo& info) { return std::make_unique<Simulated>(info); }

}  // namespace gemmlab::cuda
