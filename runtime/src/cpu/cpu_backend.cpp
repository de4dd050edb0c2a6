#include <cstdlib>

#include "gemmlab/buffer.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/measure.hpp"

namespace gemmlab::cpu {
namespace {

class CpuDevice final : public HostMemoryDevice {
 public:
  CpuDevice() : info_(detect()) {
    const char* root = std::getenv("GEMMLAB_POWERCAP_ROOT");
    rapl_ = RaplMeter::open(root != nullptr && root[0] != '\0' ? root : "/sys/class/powercap");
  }
  const DeviceInfo& info() const override { return info_; }
  double time_once(const std::function<void()>& launch) override { return wall_seconds(launch); }
  void measure_ceilings() override { info_.measured = cpu::measure_ceilings(info_); }
  // RAPL package power, where the counters are readable: the average since the previous reading.
  std::optional<PowerReading> read_power() override {
    if (!rapl_) return std::nullopt;
    const auto watts = rapl_->watts();
    if (!watts) return std::nullopt;
    return PowerReading{.watts = *watts, .temperature_c = std::nullopt};
  }
  std::string power_source() const override { return "RAPL package energy"; }

 private:
  DeviceInfo info_;
  std::unique_ptr<RaplMeter> rapl_;
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::vector<DeviceInfo> devices() override { return {detect()}; }
  std::unique_ptr<Device> open(int index) override {
    if (index != 0)
      throw std::invalid_argument("cpu device " + std::to_string(index) +
                                  " does not exist; the cpu backend has device 0");
    return std::make_unique<CpuDevice>();
  }
  std::vector<std::string> reference_names() const override { return cpu::reference_names(); }
  std::unique_ptr<Reference> make_reference(const std::string& name, Device&) override {
    return load_reference(name);
  }
};
}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace gemmlab::cpu
