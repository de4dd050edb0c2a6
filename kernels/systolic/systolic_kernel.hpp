// What every systolic kernel shares. A kernel here is a mapping: how a GEMM is cut into tiles
// held in the array's buffers and streamed through the array (kernels/systolic/0N_*.cpp each
// turn a configuration into a Mapping); the simulator (runtime/src/systolic/) runs it.
#pragma once

#include <array>
#include <map>
#include <string>

#include "embedded_source.hpp"
#include "gemmlab/kernel.hpp"
#include "gemmlab/systolic.hpp"

namespace gemmlab::systolic {

// The kernel files by file name, hashed with the simulator's sources: a change to either files
// the results under a new key (cmake/embed_kernel_sources.cmake).
const std::map<std::string_view, EmbeddedSource>& embedded_files();

// Parameter encodings: DATAFLOW 0 ws, 1 os, 2 is; LOOP indexes loop_orders.
inline constexpr std::array<Dataflow, 3> dataflows = {Dataflow::ws, Dataflow::os, Dataflow::is};
inline constexpr std::array<const char*, 6> loop_orders = {"mnk", "mkn", "nmk", "nkm", "kmn", "knm"};
ParamValue dataflow_value(Dataflow d);
ParamValue loop_order_value(const std::string& order);
// "DATAFLOW: 0 ws, 1 os, 2 is" and the like, for parameter help.
std::string dataflow_help();
std::string loop_order_help();

class SystolicKernel : public Kernel {
 public:
  // The kernel's file is kernels/systolic/<name>.cpp.
  SystolicKernel(std::string name, std::string summary);
  // The mapping a (valid) configuration stands for on this array.
  virtual Mapping mapping(const ArraySpec& array, const Config& config) const = 0;

 protected:
  std::unique_ptr<Executable> build(Device& device, const Problem& problem, const Config& config) const final;
  // The array of a systolic device description (its preset).
  static const ArraySpec& array_for(const DeviceInfo& device);
  // Adds to `space` (with parameters TM, TN, TK) the element sizes in `precision`, the array's
  // buffer sizes and one constraint per buffer: a tile of its operand fits in half of it.
  static void require_buffers(SearchSpace& space, const ArraySpec& array, Precision precision);
};

std::unique_ptr<Kernel> make_array_tiles();    // 01_array_tiles.cpp
std::unique_ptr<Kernel> make_buffer_tiled();   // 02_buffer_tiled.cpp

inline void register_kernels(Registry& r) {
  r.add_kernels({make_array_tiles, make_buffer_tiled});
}

}  // namespace gemmlab::systolic
