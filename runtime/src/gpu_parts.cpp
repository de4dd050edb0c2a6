// The GPU parts of the datasheet catalogue: each "limits" object of data/datasheets/devices.json
// (embedded at build time) read once into a GpuPart. The catalogue is part of the program, so a
// part whose limits are incomplete or misspelt is a bug of the build: std::logic_error.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "datasheets.hpp"
#include "gemmlab/device.hpp"

namespace gemmlab {
namespace {

using nlohmann::json;

[[noreturn]] void broken(const std::string& part, const std::string& what) {
  throw std::logic_error("data/datasheets/devices.json, part " + part + ": " + what);
}

// The value of one limit ({"value": ..., "source": ..., "note": ...}).
const json& value_of(const json& values, const std::string& part, const std::string& key) {
  if (!values.contains(key)) broken(part, "its limits lack " + key);
  const json& v = values.at(key);
  if (!v.contains("value") || !v.at("value").is_number() || !v.contains("source"))
    broken(part, "limit " + key + " needs a number \"value\" and a \"source\"");
  return v.at("value");
}

std::int64_t integer(const json& values, const std::string& part, const std::string& key) {
  const json& v = value_of(values, part, key);
  if (!v.is_number_integer()) broken(part, "limit " + key + " is not a whole number");
  return v.get<std::int64_t>();
}
int small_integer(const json& values, const std::string& part, const std::string& key) {
  return static_cast<int>(integer(values, part, key));
}

GpuPart read_part(const json& device) {
  const std::string id = device.at("id").get<std::string>();
  const json& limits = device.at("limits");
  const json& values = limits.at("values");
  // Every key a part may give: GpuLimits, then what a device description adds.
  static const char* const known[] = {"compute_capability",     "multiprocessors",   "warp_size",
                                      "max_threads_per_block",  "shared_bytes_per_block",
                                      "shared_bytes_per_block_optin", "shared_bytes_per_sm",
                                      "registers_per_block",    "registers_per_sm",  "max_registers_per_thread",
                                      "l2_bytes",               "clock_ghz",         "fp32_flops_per_cu_per_clock",
                                      "fp64_flops_per_cu_per_clock"};
  for (const auto& [key, value] : values.items())
    if (std::find(std::begin(known), std::end(known), key) == std::end(known)) broken(id, "unknown limit " + key);

  GpuPart p;
  p.id = id;
  p.name = limits.value("device_name", device.at("name").get<std::string>());
  p.vendor = device.at("vendor").get<std::string>();
  p.targets = limits.at("targets").get<std::vector<std::string>>();
  p.features = limits.value("features", std::vector<std::string>{});
  GpuLimits& g = p.limits;
  g.compute_capability = values.contains("compute_capability") ? small_integer(values, id, "compute_capability") : 0;
  g.multiprocessors = small_integer(values, id, "multiprocessors");
  g.warp_size = small_integer(values, id, "warp_size");
  g.max_threads_per_block = small_integer(values, id, "max_threads_per_block");
  g.shared_bytes_per_block = integer(values, id, "shared_bytes_per_block");
  g.shared_bytes_per_block_optin = integer(values, id, "shared_bytes_per_block_optin");
  g.shared_bytes_per_sm = integer(values, id, "shared_bytes_per_sm");
  g.registers_per_block = small_integer(values, id, "registers_per_block");
  g.registers_per_sm = small_integer(values, id, "registers_per_sm");
  g.max_registers_per_thread = small_integer(values, id, "max_registers_per_thread");
  g.l2_bytes = integer(values, id, "l2_bytes");
  if (values.contains("clock_ghz")) p.clock_ghz = value_of(values, id, "clock_ghz").get<double>();
  if (values.contains("fp32_flops_per_cu_per_clock"))
    p.fp32_flops_per_cu_per_clock = small_integer(values, id, "fp32_flops_per_cu_per_clock");
  if (values.contains("fp64_flops_per_cu_per_clock"))
    p.fp64_flops_per_cu_per_clock = small_integer(values, id, "fp64_flops_per_cu_per_clock");
  if (p.targets.empty()) broken(id, "its limits name no target");
  return p;
}

}  // namespace

const std::vector<GpuPart>& gpu_parts() {
  static const std::vector<GpuPart> parts = [] {
    std::vector<GpuPart> list;
    const json catalogue = json::parse(embedded_datasheets());
    for (const json& device : catalogue.at("devices"))
      if (device.contains("limits")) list.push_back(read_part(device));
    return list;
  }();
  return parts;
}

const GpuPart& gpu_part(std::string_view target) {
  std::string known;
  for (const GpuPart& p : gpu_parts()) {
    if (std::find(p.targets.begin(), p.targets.end(), target) != p.targets.end()) return p;
    for (const std::string& t : p.targets) known += (known.empty() ? "" : ", ") + t;
  }
  throw std::invalid_argument("no GPU part of the datasheet catalogue has target '" + std::string(target) +
                              "' (known: " + known + ")");
}

}  // namespace gemmlab
