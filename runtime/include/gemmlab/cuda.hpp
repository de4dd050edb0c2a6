// The CUDA backend: devices through the CUDA runtime (linked statically; it finds the driver at
// run time, so a machine without one simply has no CUDA devices), kernels compiled at run time by
// NVRTC, cuBLAS as the reference and NVML for power, both loaded with dlopen.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gemmlab/launch_counts.hpp"
#include "gemmlab/ptx_sim.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab::cuda {

std::unique_ptr<Backend> make_backend();

// A CUDA device simulated by the PTX simulator (gemmlab/ptx_sim.hpp): the backend lists them after
// the real GPUs, "sim-sm_90a" with an H100 SXM's limits and "sim-sm_80" with an A100's (from the
// datasheet catalogue). Its memory is host memory, a kernel runs the PTX NVRTC made for the
// architecture on the simulator, and it has no time of its own: time_once throws. It keeps the
// counts of its last launch.
class SimulatedDevice : public HostMemoryDevice, public CountingDevice {
 public:
  virtual const std::string& arch() const = 0;  // "sm_90a"
  // Its resident memory is mostly the simulator's own state, not a kernel's buffers.
  bool buffers_in_host_memory() const override { return false; }
  virtual void record(const ptx::sim::Metrics& counts) = 0;
  // Host threads a launch's CTAs run on (0, the default: one per hardware thread).
  virtual int host_threads() const = 0;
  virtual void set_host_threads(int threads) = 0;
};
// The simulated devices' descriptions, in order ("sim-sm_90a", "sim-sm_80"), indices from `first`.
std::vector<DeviceInfo> simulated_devices(int first);
std::unique_ptr<SimulatedDevice> open_simulated(const DeviceInfo& info);
// A driver function of the simulated device, by its driver name, as cudaGetDriverEntryPoint gives
// one of a GPU's ("cuTensorMapEncodeTiled", with the driver's signature, encoding maps the PTX
// simulator reads): the host code that builds tensor maps is then the same for both. Throws
// std::invalid_argument for a name it does not have.
void* simulated_driver_entry_point(const std::string& name);

// What ptxas reports for a compiled kernel (--ptxas-options=-v).
struct ResourceUsage {
  bool known = false;  // false when the report could not be read
  int registers = 0;
  std::int64_t shared_bytes = 0;  // static shared memory
  std::int64_t stack_bytes = 0;
  std::int64_t spill_store_bytes = 0, spill_load_bytes = 0;
};

struct CompiledModule {
  std::string image;  // CUBIN for the requested architecture
  std::string ptx;    // the PTX NVRTC produced on the way: what a simulated device executes
  std::string log;    // NVRTC's log, ptxas's resource report included
  ResourceUsage usage;
  bool from_disk_cache = false;
};

struct CompileRequest {
  std::string source_name;  // "05_2d_register_tiled.cu", for messages
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;  // (include name, text) NVRTC may include
  std::vector<std::string> options;  // "-DBM=128", ...
  std::string arch;                  // "sm_90a"
};

// Thrown when NVRTC rejects a program; what() holds the log.
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Compiles with NVRTC; results are cached in memory and on disk
// ($XDG_CACHE_HOME/gemmlab/cuda-modules, else ~/.cache/...), keyed by a hash of the source, the
// options, the architecture and the NVRTC version. Thread-safe (the tuner compiles upcoming
// configurations on a pool of threads).
CompiledModule compile(const CompileRequest& request);
// "13.0"
std::string nvrtc_version();
// "sm_90a" for (90, true), "sm_80" for (80, false).
std::string arch_name(int compute_capability, bool arch_specific);
// ptxas's "-v" report -> usage (known = false when it has none).
ResourceUsage parse_ptxas_report(const std::string& log);

}  // namespace gemmlab::cuda
