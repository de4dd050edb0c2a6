// What every OpenCL kernel shares: the .cl file (embedded at build time) built at run time with
// the configuration as -D options (programs are cached per device), its launch shape, the
// arguments every kernel of kernels/opencl/ takes, and the event that times it.
#pragma once

#include <array>
#include <map>
#include <string>

#include "embedded_source.hpp"
#include "gemmlab/kernel.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab::opencl {

// The .cl files by file name, hashed with the shared host code (cmake/embed_kernel_sources.cmake).
const std::map<std::string_view, EmbeddedSource>& embedded_files();

struct LaunchShape {
  std::array<std::size_t, 2> global{}, local{};  // dimension 0 along N, 1 along M
};

class OpenClKernel : public Kernel {
 public:
  OpenClKernel(std::string name, std::string summary) : name_(std::move(name)), summary_(std::move(summary)) {}
  std::string_view name() const override { return name_; }
  std::string_view backend() const override { return "opencl"; }
  std::string_view summary() const override { return summary_; }
  std::vector<Precision> precisions() const override { return {Precision::fp32, Precision::fp64}; }
  Support supported(const DeviceInfo& device) const override;
  std::unique_ptr<Executable> prepare(Device& device, const Problem& problem, const Config& config) const final;
  void prepare_ahead(const DeviceInfo& device, Precision precision, const Config& config) const override;
  bool builds_at_run_time() const override { return true; }
  std::string source_hash() const override;
  // The default when it is valid on this device, else the first valid configuration.
  Config default_config(const DeviceInfo& device, Precision precision) const final;

 protected:
  // The preferred default (may be invalid on a small device).
  virtual Config preferred_config(const DeviceInfo& device, Precision precision) const = 0;
  // Global and local sizes for a problem: whole work-groups covering C.
  virtual LaunchShape shape(const Config& config, const Problem& problem) const = 0;
  // The device's work-group and local-memory limits, from DeviceInfo::gpu.
  static std::int64_t max_work_group(const DeviceInfo& device);
  static std::int64_t local_bytes(const DeviceInfo& device);
  // Rounds `n` up to a multiple of `m`.
  static std::size_t round_up(std::int64_t n, std::int64_t m) {
    return static_cast<std::size_t>((std::max<std::int64_t>(n, 1) + m - 1) / m * m);
  }

 private:
  // The program text for a precision (fp64 enables cl_khr_fp64) and the build options.
  std::string source(Precision precision) const;
  static std::string options(const Config& config);
  std::string name_, summary_;
};

std::unique_ptr<Kernel> make_naive();            // 01_naive.cl
std::unique_ptr<Kernel> make_local_tiled();      // 02_local_tiled.cl
std::unique_ptr<Kernel> make_register_tiled();   // 03_register_tiled.cl
std::unique_ptr<Kernel> make_interior_fast_path();  // 04_interior_fast_path.cl

inline void register_kernels(Registry& r) {
  r.add_kernel(make_naive());
  r.add_kernel(make_local_tiled());
  r.add_kernel(make_register_tiled());
  r.add_kernel(make_interior_fast_path());
}

}  // namespace gemmlab::opencl
