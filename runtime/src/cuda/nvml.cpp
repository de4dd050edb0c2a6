#include "nvml.hpp"

#include <dlfcn.h>

namespace gemmlab::cuda {

// The few NVML entry points used, with the signatures of NVML's documented C API (nvmlReturn_t is
// an int, 0 = success; nvmlDevice_t an opaque pointer; temperature sensor 0 = the GPU die).
struct PowerMonitor::Library {
  void* handle = nullptr;
  int (*shutdown)() = nullptr;
  int (*by_pci_bus_id)(const char*, void**) = nullptr;
  int (*power_usage)(void*, unsigned*) = nullptr;         // milliwatts
  int (*temperature)(void*, int, unsigned*) = nullptr;    // degrees C
  ~Library() {
    if (shutdown != nullptr) shutdown();
    // The library stays loaded: NVML keeps threads of its own.
  }
};

namespace {
template <class F>
bool load(void* library, F& f, const char* symbol) {
  f = reinterpret_cast<F>(dlsym(library, symbol));
  return f != nullptr;
}
}  // namespace

std::unique_ptr<PowerMonitor> PowerMonitor::open(const std::string& pci_bus_id) {
  auto lib = std::make_unique<Library>();
  lib->handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib->handle == nullptr) return nullptr;
  int (*init)() = nullptr;
  if (!load(lib->handle, init, "nvmlInit_v2") || !load(lib->handle, lib->by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") ||
      !load(lib->handle, lib->power_usage, "nvmlDeviceGetPowerUsage") ||
      !load(lib->handle, lib->temperature, "nvmlDeviceGetTemperature") || !load(lib->handle, lib->shutdown, "nvmlShutdown"))
    return nullptr;
  if (init() != 0) {
    lib->shutdown = nullptr;  // not initialised: nothing to shut down
    return nullptr;
  }
  std::unique_ptr<PowerMonitor> monitor(new PowerMonitor());
  monitor->library_ = std::move(lib);
  if (monitor->library_->by_pci_bus_id(pci_bus_id.c_str(), &monitor->device_) != 0) return nullptr;
  return monitor;
}

PowerMonitor::~PowerMonitor() = default;

std::optional<double> PowerMonitor::watts() const {
  unsigned milliwatts = 0;
  if (library_->power_usage(device_, &milliwatts) != 0) return std::nullopt;
  return milliwatts * 1e-3;
}

std::optional<double> PowerMonitor::temperature_c() const {
  unsigned celsius = 0;
  if (library_->temperature(device_, 0, &celsius) != 0) return std::nullopt;
  return static_cast<double>(celsius);
}

}  // namespace gemmlab::cuda
