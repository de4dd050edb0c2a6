#include "systolic_kernel.hpp"

#include <algorithm>

namespace gemmlab::systolic {

ParamValue dataflow_value(Dataflow d) {
  return static_cast<ParamValue>(std::find(dataflows.begin(), dataflows.end(), d) - dataflows.begin());
}

ParamValue loop_order_value(const std::string& order) {
  for (std::size_t i = 0; i < loop_orders.size(); ++i)
    if (order == loop_orders[i]) return static_cast<ParamValue>(i);
  throw std::invalid_argument("unknown loop order " + order);
}

std::string dataflow_help() { return "dataflow: 0 weight-stationary, 1 output-stationary, 2 input-stationary"; }

std::string loop_order_help() {
  std::string text = "loop order over tiles, outermost first:";
  for (std::size_t i = 0; i < loop_orders.size(); ++i) text += " " + std::to_string(i) + " " + loop_orders[i];
  return text;
}

Support SystolicKernel::supported(const DeviceInfo& device) const {
  if (device.backend != "systolic") return {false, "runs on simulated systolic arrays only"};
  return {};
}

const ArraySpec& SystolicKernel::array_for(const DeviceInfo& device) { return preset(device.name); }

void SystolicKernel::constrain_buffers(SearchSpace& space, const ArraySpec& a, Precision precision) {
  const auto in = static_cast<std::int64_t>(element_size(precision));
  auto limit = [](std::int64_t buffer) { return buffer == 0 ? std::int64_t{1} << 62 : buffer / 2; };
  const std::int64_t ifmap = limit(a.ifmap_buffer_bytes), filter = limit(a.filter_buffer_bytes),
                     ofmap = limit(a.ofmap_buffer_bytes);
  space.constrain("TM * TK * " + std::to_string(in) + " <= ifmap buffer / 2 (" + std::to_string(ifmap) + " B)",
                  {"TM", "TK"}, [=](const Config& c) { return c.at("TM") * c.at("TK") * in <= ifmap; });
  space.constrain("TK * TN * " + std::to_string(in) + " <= filter buffer / 2 (" + std::to_string(filter) + " B)",
                  {"TK", "TN"}, [=](const Config& c) { return c.at("TK") * c.at("TN") * in <= filter; });
  space.constrain("TM * TN * 4 <= ofmap buffer / 2 (" + std::to_string(ofmap) + " B)", {"TM", "TN"},
                  [=](const Config& c) { return c.at("TM") * c.at("TN") * 4 <= ofmap; });
}

namespace {
class MappingExecutable final : public Executable {
 public:
  MappingExecutable(Device& device, Mapping mapping, const Problem& problem)
      : device_(device), mapping_(std::move(mapping)), problem_(problem) {}
  void run(const Operands& operands) override { run_mapping(device_, mapping_, problem_, operands); }

 private:
  Device& device_;
  Mapping mapping_;
  Problem problem_;
};
}  // namespace

std::unique_ptr<Executable> SystolicKernel::prepare(Device& device, const Problem& problem, const Config& config) const {
  check_device_and_problem(device.info(), problem);
  const SearchSpace space = this->space(device.info(), problem.precision);
  if (!space.is_valid(config) && space.valid_size() == 0)
    throw Unsupported(name_ + ": the buffers of " + device.info().name + " hold no " +
                      std::string(to_string(problem.precision)) + " tiles of this kernel");
  space.check(config);
  const ArraySpec& array = array_of(device);
  Mapping m = mapping(array, config);
  try {
    check(array, m, problem.m, problem.n, problem.k, problem.precision);
  } catch (const SimulationError& e) {
    throw ConfigError(e.what());
  }
  return std::make_unique<MappingExecutable>(device, std::move(m), problem);
}

std::string SystolicKernel::source_hash() const {
  return embedded_sha256(embedded_files(), "systolic", name_ + ".cpp");
}

}  // namespace gemmlab::systolic
