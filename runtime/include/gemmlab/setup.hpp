// One evaluation setup: what every command, the tuner's worker, the benchmarks and the tests need
// before they evaluate a kernel on a backend — the device (by index, with its cache flush set), the
// timed reference (named, else the backend's first, with its threads) and the fp64 truth —
// assembled here, so that they all measure against the same things.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gemmlab/kernel.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab {

// The fp64 truth every evaluation is validated against: a host BLAS dgemm (OpenBLAS, opened
// privately) on the exact fp64 values of the inputs, whatever the backend.
std::unique_ptr<Reference> open_fp64_truth();

struct SetupOptions {
  int device = 0;            // index within the backend
  bool flush_cache = false;  // Device::set_cache_flush
  // The reference timed beside the kernel: one of Backend::reference_names(), "" for the first.
  std::string reference = {};
  bool timed_reference = true;  // false: validation only, no reference is made
  // Threads of the reference, and what a kernel's `threads` parameter defaults to (0: the
  // device's cores).
  int threads = 0;
  bool measure_ceilings = false;  // Device::measure_ceilings once the device is open
};

struct EvaluationSetup {
  std::unique_ptr<Device> device;
  std::unique_ptr<Reference> reference;  // null without a timed reference
  std::string reference_name;            // "" without one
  std::unique_ptr<Reference> truth;
  int threads = 1;  // resolved: never 0

  const DeviceInfo& info() const { return device->info(); }
};

// Opens device `options.device` of `backend`, its reference and the fp64 truth. Throws
// std::invalid_argument for a device index or reference name the backend does not have (naming
// those it has), std::runtime_error when a library cannot be loaded.
EvaluationSetup open_evaluation(Backend& backend, const SetupOptions& options = {});

// Throws std::invalid_argument when `device` has no time of its own (a functional simulation)
// for `command` ("tune", "sweep"), which measures time.
void require_time(const DeviceInfo& device, const std::string& command);

// Throws Unsupported when `device` cannot run `kernel` (instruction sets, architecture), and
// std::invalid_argument naming the precisions the kernel has when it lacks `precision`.
void require_runs(const Kernel& kernel, const DeviceInfo& device, Precision precision);

// The precision a command uses when none is given: the device's native one when the kernel has
// it (a systolic preset's int8 or bf16, fp32 elsewhere), else the kernel's first (tensor-core
// kernels: fp16).
Precision default_precision(const Kernel& kernel, const DeviceInfo& device);

// The precisions of `kernel` with at least one valid configuration on `device`.
std::vector<Precision> precisions_with_valid_configurations(const Kernel& kernel, const DeviceInfo& device);

// One line for an error: that `kernel` has no valid configuration for `precision` on `device`,
// and the precisions that do have one there (or that none does).
std::string no_valid_configuration_message(const Kernel& kernel, const DeviceInfo& device, Precision precision);

// The kernel's default configuration, its `threads` parameter (where it has one) set to `threads`.
Config default_config(const Kernel& kernel, const DeviceInfo& device, Precision precision, int threads);

}  // namespace gemmlab
