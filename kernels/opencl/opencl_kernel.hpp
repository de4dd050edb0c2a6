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
  // The kernel's file is kernels/opencl/<name>.cl.
  OpenClKernel(std::string name, std::string summary);
  Compilation compilation() const override { return Compilation::at_run_time; }
  void prepare_ahead(const DeviceInfo& device, Precision precision, const Config& config) const override;

 protected:
  std::unique_ptr<Executable> build(Device& device, const Problem& problem, const Config& config) const final;
  // Global and local sizes for a problem: whole work-groups covering C.
  virtual LaunchShape shape(const Config& config, const Problem& problem) const = 0;
  // The device's limits as named values of a space (from DeviceInfo::gpu; without it, 256
  // work-items and 32 KiB): max_work_group; local_memory with elem_bytes, the size of an element
  // in `precision`.
  static void let_max_work_group(SearchSpace& space, const DeviceInfo& device);
  static void let_local_memory(SearchSpace& space, const DeviceInfo& device, Precision precision);
  // Rounds `n` up to a multiple of `m`.
  static std::size_t round_up(std::int64_t n, std::int64_t m) {
    return static_cast<std::size_t>((std::max<std::int64_t>(n, 1) + m - 1) / m * m);
  }

 private:
  // The program text for a precision (fp64 enables cl_khr_fp64) and the build options.
  std::string source(Precision precision) const;
  static std::string options(const Config& config);
};

std::unique_ptr<Kernel> make_naive();            // 01_naive.cl
std::unique_ptr<Kernel> make_local_tiled();      // 02_local_tiled.cl
std::unique_ptr<Kernel> make_register_tiled();   // 03_register_tiled.cl
std::unique_ptr<Kernel> make_interior_fast_path();  // 04_interior_fast_path.cl

inline void register_kernels(Registry& r) {
  r.add_kernels({make_naive, make_local_tiled, make_register_tiled, make_interior_fast_path});
}

}  // namespace gemmlab::opencl
