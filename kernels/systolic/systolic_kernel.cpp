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

SystolicKernel::SystolicKernel(std::string name, std::string summary)
    : Kernel({.name = name,
              .backend = "systolic",
              .summary = std::move(summary),
              .precisions = {Precision::bf16, Precision::int8, Precision::fp32},
              .source_sha256 = embedded_sha256(embedded_files(), "systolic", name + ".cpp")}) {}

const ArraySpec& SystolicKernel::array_for(const DeviceInfo& device) { return preset(device.name); }

void SystolicKernel::require_buffers(SearchSpace& space, const ArraySpec& a, Precision precision) {
  space.let("elem_bytes", static_cast<ParamValue>(element_size(precision)),
            "bytes per element of A and B in " + std::string(to_string(precision)))
      .let("acc_bytes", 4, "bytes per accumulator of C: fp32 or int32");
  // One tile of each operand in half of its buffer: the other half receives the next tile. A
  // buffer of 0 bytes is unbounded (arrays given as RxC) and limits nothing.
  auto fits = [&](const std::string& buffer, std::int64_t bytes, const std::string& operand, const std::string& tile,
                  const std::string& tile_bytes) {
    if (bytes == 0) return;
    space.let(buffer, bytes, "bytes of the buffer holding " + operand + " tiles")
        .derive(tile, tile_bytes, "bytes of one " + operand + " tile")
        .require(tile + " <= " + buffer + " / 2", operand + " tile in half its buffer: double-buffered");
  };
  fits("ifmap_buffer", a.ifmap_buffer_bytes, "A", "a_tile_bytes", "TM * TK * elem_bytes");
  fits("filter_buffer", a.filter_buffer_bytes, "B", "b_tile_bytes", "TK * TN * elem_bytes");
  fits("ofmap_buffer", a.ofmap_buffer_bytes, "C", "c_tile_bytes", "TM * TN * acc_bytes");
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

std::unique_ptr<Executable> SystolicKernel::build(Device& device, const Problem& problem, const Config& config) const {
  const ArraySpec& array = array_of(device);
  Mapping m = mapping(array, config);
  try {
    check(array, m, problem.m, problem.n, problem.k, problem.precision);
  } catch (const SimulationError& e) {
    throw ConfigError(e.what());
  }
  return std::make_unique<MappingExecutable>(device, std::move(m), problem);
}

}  // namespace gemmlab::systolic
