// Devices: what a backend can run on, its specification, measured ceilings, and the small set of
// operations the shared evaluation code needs (memory, copies, synchronisation, timing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gemmlab/problem.hpp"

namespace gemmlab {

struct CacheLevel {
  int level = 0;
  std::string type;              // "Data", "Instruction", "Unified"
  std::int64_t size_bytes = 0;
  int shared_by_cores = 1;
};

// Ceilings measured on the device itself, to compare kernels with what the hardware really gives;
// 0 where a backend does not measure one.
struct MeasuredCeilings {
  double fma_gflops_fp32 = 0;   // all cores
  double fma_gflops_fp64 = 0;
  double fma_gflops_fp32_one_core = 0;
  double fma_gflops_fp64_one_core = 0;
  double triad_gb_per_s = 0;    // STREAM-style a[i] = b[i] + s * c[i], all cores
};

// Limits of a GPU that kernels' constraints depend on (from cudaGetDeviceProperties, or an
// architecture's datasheet values when compiling without a device).
struct GpuLimits {
  int compute_capability = 0;              // 90 for sm_90
  int multiprocessors = 0;
  int warp_size = 32;
  int max_threads_per_block = 1024;
  std::int64_t shared_bytes_per_block = 48 * 1024;  // static + dynamic without opting in
  std::int64_t shared_bytes_per_block_optin = 0;    // the most a kernel may opt in to
  std::int64_t shared_bytes_per_sm = 0;
  int registers_per_block = 65536;
  int registers_per_sm = 65536;
  int max_registers_per_thread = 255;  // what the compiler gives one thread (AMD: VGPRs per lane)
  std::int64_t l2_bytes = 0;
};

// A GPU of the datasheet catalogue (data/datasheets/devices.json, embedded in the program when it
// is built) with its limits: the one source of the limits a compile target's spaces are built
// from when no such device is present ("sm_90": an H100 SXM5; "gfx90a": one die of an MI250X).
// The catalogue gives each figure with its source.
struct GpuPart {
  std::string id;                     // the catalogue's id: "nvidia-h100-sxm"
  std::string name;                   // the device it describes: "AMD Instinct MI250X (one die)"
  std::string vendor;                 // "NVIDIA", "AMD"
  std::vector<std::string> targets;   // the compile targets it stands for: "sm_90", "sm_90a"
  std::vector<std::string> features;  // matrix instructions: "mfma", "wmma"
  GpuLimits limits;                   // compute_capability 0 for AMD parts
  double clock_ghz = 0;               // peak engine clock; 0 where the catalogue has none
  int fp32_flops_per_cu_per_clock = 0;  // vector units, FMA = 2; 0 where the catalogue has none
  int fp64_flops_per_cu_per_clock = 0;
};

// Every part of the catalogue that has limits, in its order.
const std::vector<GpuPart>& gpu_parts();
// The part whose limits stand for a compile target. Throws std::invalid_argument for a target no
// part has, naming those that have one.
const GpuPart& gpu_part(std::string_view target);

struct DeviceInfo {
  std::string backend;           // "cpu", "cuda", ...
  int index = 0;                 // within its backend
  std::string name;
  std::string vendor;
  int cores = 0;                 // CPU cores, GPU SMs / CUs
  int simd_width_bits = 0;       // widest vector register used for FMA
  std::vector<std::string> features;  // "avx2", "fma", "avx512f", ...
  std::vector<CacheLevel> caches;
  double clock_ghz = 0;
  int fma_units_per_core = 0;    // vector FMA pipes (assumed from the ISA where the OS cannot tell)
  double peak_gflops_fp32 = 0;   // cores x clock x FMA units x lanes x 2
  double peak_gflops_fp64 = 0;
  std::optional<MeasuredCeilings> measured;
  std::optional<GpuLimits> gpu;  // GPUs only
  // The arithmetic the hardware does natively (a systolic preset's: int8 or bf16), which commands
  // use when no precision is given.
  Precision native_precision = Precision::fp32;
  // Whether the device's memory is this process's host memory (the CPU, Kokkos host spaces,
  // simulated arrays): then an address-space limit on the process bounds what the device can use.
  bool host_memory = false;

  bool has_feature(const std::string& feature) const;
  // Size of the first cache of the given level holding data (0 when unknown).
  std::int64_t cache_bytes(int level) const;
};

// Identifies a device model for the results cache: "<backend>:<name> <16 hex digits>", the digits
// a hash of what decides a kernel's speed and is stable across runs (name, vendor, cores, SIMD
// width, features, caches, FMA units) — not the clock, which the OS reports as it varies, and
// not the index, measured ceilings, native precision or memory kind (they follow from the rest,
// and results cached before they existed must keep their key). Two machines of the same model
// share it, as they should.
std::string fingerprint(const DeviceInfo& device);

// Memory owned by a device. On the CPU this is host memory.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual void* data() = 0;  // device address
  virtual std::size_t bytes() const = 0;
};

// Host memory as a device buffer (64-byte aligned): the memory of the CPU and of simulated devices.
std::unique_ptr<DeviceBuffer> allocate_host_buffer(std::size_t bytes);

// Memory a device API allocated (cudaMalloc, hipMalloc, clCreateBuffer), handed back to it by
// `release` when the buffer goes: the GPU backends differ only in those two calls. `data` may be
// null for an empty buffer (release is then not called).
class OwnedDeviceBuffer final : public DeviceBuffer {
 public:
  OwnedDeviceBuffer(void* data, std::size_t bytes, std::function<void(void*)> release)
      : data_(data), bytes_(bytes), release_(std::move(release)) {}
  ~OwnedDeviceBuffer() override {
    if (data_ != nullptr) release_(data_);
  }
  OwnedDeviceBuffer(const OwnedDeviceBuffer&) = delete;
  OwnedDeviceBuffer& operator=(const OwnedDeviceBuffer&) = delete;
  void* data() override { return data_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  void* data_;
  std::size_t bytes_;
  std::function<void(void*)> release_;
};

// An opened device of some backend.
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  virtual std::unique_ptr<DeviceBuffer> allocate(std::size_t bytes) = 0;
  virtual void upload(DeviceBuffer& dst, const void* src, std::size_t bytes) = 0;
  virtual void download(void* dst, DeviceBuffer& src, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
  // Duration in seconds of the work `launch` submits, measured as this backend measures it.
  virtual double time_once(const std::function<void()>& launch) = 0;
  // Whether time_once empties the device's caches before each timed run (GPUs: L2), so that
  // a timing starts with cold operands. Off by default; a device that cannot do it ignores it.
  virtual void set_cache_flush(bool) {}
  // Whether time_once gives the same duration every time for the same work (a simulated device
  // reports simulated time): then one timed run is the measurement, with no warm-up or repetition.
  virtual bool deterministic_timing() const { return false; }
  // Whether this device's buffers are this process's host memory, so that the memory a kernel
  // touches beyond its operands shows in the process's resident size (Footprint).
  virtual bool buffers_in_host_memory() const { return false; }
  // Board power draw (W) and temperature (C) now, where the device reports them (NVIDIA GPUs
  // through NVML); nullopt elsewhere. The evaluator samples it between timed runs.
  struct PowerReading {
    double watts = 0;
    std::optional<double> temperature_c;
  };
  virtual std::optional<PowerReading> read_power() { return std::nullopt; }
  // Where read_power's figures come from, for the record ("RAPL package energy"); empty where
  // the device reports none.
  virtual std::string power_source() const { return {}; }
  // Runs the FMA and bandwidth micro-benchmarks and stores them in info().measured.
  virtual void measure_ceilings() = 0;
};

// A device whose memory is this process's host memory (the CPU, the simulated devices): buffers
// from allocate_host_buffer, copies by memcpy, nothing to wait for.
class HostMemoryDevice : public Device {
 public:
  std::unique_ptr<DeviceBuffer> allocate(std::size_t bytes) override { return allocate_host_buffer(bytes); }
  bool buffers_in_host_memory() const override { return true; }
  void upload(DeviceBuffer& dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(dst.data(), src, bytes);
  }
  void download(void* dst, DeviceBuffer& src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src.data(), bytes);
  }
  void synchronize() override {}
};

}  // namespace gemmlab
