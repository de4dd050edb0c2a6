// Power draw and temperature of an NVIDIA GPU through NVML, opened with dlopen at run time
// (libnvidia-ml.so.1 comes with the driver, not the toolkit): no link-time dependency, and a
// machine without it simply reports no readings.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace gemmlab::cuda {

class PowerMonitor {
 public:
  // The GPU at this PCI bus id ("0000:65:00.0", from cudaDeviceGetPCIBusId); null when NVML or
  // the device cannot be opened.
  static std::unique_ptr<PowerMonitor> open(const std::string& pci_bus_id);
  ~PowerMonitor();
  PowerMonitor(const PowerMonitor&) = delete;
  PowerMonitor& operator=(const PowerMonitor&) = delete;

  std::optional<double> watts() const;          // board power draw
  std::optional<double> temperature_c() const;  // GPU die temperature

 private:
  PowerMonitor() = default;
  struct Library;
  std::unique_ptr<Library> library_;
  void* device_ = nullptr;  // nvmlDevice_t
};

}  // namespace gemmlab::cuda
