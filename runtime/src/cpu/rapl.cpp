// RAPL package energy through the powercap interface (see gemmlab/cpu.hpp).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "gemmlab/cpu.hpp"

namespace gemmlab::cpu {
namespace {

std::optional<double> read_number(const std::string& path) {
  std::ifstream in(path);
  double value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

}  // namespace

std::unique_ptr<RaplMeter> RaplMeter::open(const std::string& root) {
  auto meter = std::unique_ptr<RaplMeter>(new RaplMeter());
  std::error_code error;
  std::vector<std::filesystem::path> packages;
  for (const auto& entry : std::filesystem::directory_iterator(root, error))
    if (std::regex_match(entry.path().filename().string(), std::regex(R"(intel-rapl:\d+)")))
      packages.push_back(entry.path());
  std::sort(packages.begin(), packages.end());
  for (const auto& dir : packages) {
    const std::string energy = (dir / "energy_uj").string();
    const auto now = read_number(energy);
    const auto range = read_number((dir / "max_energy_range_uj").string());
    if (!now || !range || *range <= 0) return nullptr;  // unreadable: not measured at all
    meter->domains_.push_back({.energy_file = energy, .range_uj = *range, .last_uj = *now});
  }
  if (meter->domains_.empty()) return nullptr;
  meter->last_time_ = std::chrono::steady_clock::now();
  return meter;
}

std::optional<double> RaplMeter::watts() {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - last_time_).count();
  if (seconds <= 0) return std::nullopt;
  double joules = 0;
  for (Domain& d : domains_) {
    const auto energy = read_number(d.energy_file);
    if (!energy) return std::nullopt;
    double delta = *energy - d.last_uj;
    if (delta < 0) delta += d.range_uj;  // the counter wrapped
    joules += delta * 1e-6;
    d.last_uj = *energy;
  }
  last_time_ = now;
  return joules / seconds;
}

}  // namespace gemmlab::cpu
