#include "gemmlab/setup.hpp"

#include <algorithm>

#include "gemmlab/cpu.hpp"
#include "gemmlab/launch_counts.hpp"

namespace gemmlab {

namespace {
std::string join(const std::vector<Precision>& precisions) {
  std::string text;
  for (const Precision p : precisions) text += (text.empty() ? "" : ", ") + std::string(to_string(p));
  return text;
}
}  // namespace

std::unique_ptr<Reference> open_fp64_truth() { return cpu::load_cblas("openblas"); }

EvaluationSetup open_evaluation(Backend& backend, const SetupOptions& options) {
  EvaluationSetup setup;
  setup.device = backend.open(options.device);
  setup.device->set_cache_flush(options.flush_cache);
  if (options.measure_ceilings) setup.device->measure_ceilings();
  setup.threads = options.threads > 0 ? options.threads : std::max(1, setup.device->info().cores);
  // A functional simulation has no time, so nothing is timed beside a kernel there (a reference
  // named explicitly is still made, and refuses clearly).
  const bool untimed = functional_simulation(setup.device->info()) && options.reference.empty();
  if (options.timed_reference && !untimed) {
    const auto names = backend.reference_names();
    if (options.reference.empty() && names.empty())
      throw std::invalid_argument("the " + backend.name() + " backend has no reference library");
    setup.reference_name = options.reference.empty() ? names.front() : options.reference;
    setup.reference = backend.make_reference(setup.reference_name, *setup.device);
    setup.reference->set_threads(setup.threads);
  }
  setup.truth = open_fp64_truth();
  return setup;
}

void require_time(const DeviceInfo& device, const std::string& command) {
  if (functional_simulation(device))
    throw std::invalid_argument(device.name + " is simulated (functional): it has no time to " + command +
                                " by; that needs a GPU (verify and run work on the simulator)");
}

void require_runs(const Kernel& kernel, const DeviceInfo& device, Precision precision) {
  if (const Support s = kernel.supported(device); !s.ok) throw Unsupported(std::string(kernel.name()) + ": " + s.reason);
  if (!kernel.has_precision(precision))
    throw std::invalid_argument(std::string(kernel.name()) + " has no " + std::string(to_string(precision)) +
                                " variant; precisions: " + join(kernel.precisions()));
}

Precision default_precision(const Kernel& kernel, const DeviceInfo& device) {
  if (kernel.has_precision(device.native_precision)) return device.native_precision;
  const auto list = kernel.precisions();
  return list.empty() ? device.native_precision : list.front();
}

std::vector<Precision> precisions_with_valid_configurations(const Kernel& kernel, const DeviceInfo& device) {
  std::vector<Precision> list;
  for (const Precision p : kernel.precisions())
    if (!kernel.space(device, p).enumerate(1).empty()) list.push_back(p);
  return list;
}

std::string no_valid_configuration_message(const Kernel& kernel, const DeviceInfo& device, Precision precision) {
  const auto workable = precisions_with_valid_configurations(kernel, device);
  return "no configuration of " + std::string(kernel.name()) + " is valid for " + std::string(to_string(precision)) +
         " on " + device.name +
         (workable.empty() ? "; no precision of it has a valid configuration there"
                           : "; precisions with valid configurations there: " + join(workable) + " (--precision)");
}

Config default_config(const Kernel& kernel, const DeviceInfo& device, Precision precision, int threads) {
  Config config = kernel.default_config(device, precision);
  if (kernel.space(device, precision).find("threads") != nullptr) config["threads"] = threads;
  return config;
}

}  // namespace gemmlab
