// The systolic presets: datasheet figures of real matrix units, each with its source. A preset
// describes one array (one matrix unit); arrays_per_chip gives the chip's peak. The bandwidth is
// the chip's memory bandwidth shared evenly by its arrays, in bytes per cycle of the array's clock.
// Where a figure is a modelling assumption rather than a published one, the source says so.
#include "gemmlab/systolic.hpp"

namespace gemmlab::systolic {

namespace {
constexpr std::int64_t KiB = 1024, MiB = 1024 * KiB;

ArraySpec make(std::string name, std::int64_t rows, std::int64_t cols, Precision precision, double clock_ghz,
               int arrays, std::int64_t ifmap, std::int64_t filter, std::int64_t ofmap, double chip_gb_per_s,
               std::string source) {
  ArraySpec a;
  a.name = std::move(name);
  a.rows = rows;
  a.cols = cols;
  a.precision = precision;
  a.clock_ghz = clock_ghz;
  a.arrays_per_chip = arrays;
  a.ifmap_buffer_bytes = ifmap;
  a.filter_buffer_bytes = filter;
  a.ofmap_buffer_bytes = ofmap;
  a.bandwidth_bytes_per_cycle = chip_gb_per_s / arrays / clock_ghz;
  a.source = std::move(source);
  return a;
}
}  // namespace

const std::vector<ArraySpec>& presets() {
  static const std::vector<ArraySpec> list = {
      make("tpu-v1", 256, 256, Precision::int8, 0.7, 1, 24 * MiB, 256 * KiB, 4 * MiB, 34.0,
           "Jouppi et al., 'In-Datacenter Performance Analysis of a Tensor Processing Unit', ISCA 2017: "
           "256x256 8-bit MACs at 700 MHz (92 TOPS), 24 MiB Unified Buffer (inputs), Weight FIFO four "
           "64 KiB tiles deep (weights), 4 MiB of 32-bit accumulators (outputs), 8 GiB DDR3 at 34 GB/s"),
      make("tpu-v2", 128, 128, Precision::bf16, 0.7, 2, 8 * MiB, 4 * MiB, 4 * MiB, 700.0,
           "Jouppi et al., 'A Domain-Specific Supercomputer for Training Deep Neural Networks', CACM 63(7) "
           "2020: two cores with one 128x128 bf16 MXU each, 700 MHz, 46 TFLOPS per chip (45 listed by "
           "Google), 16 GiB HBM at 700 GB/s. Buffers: model assumption (the core's 16 MiB vector memory, "
           "split 8 MiB inputs / 4 MiB weights / 4 MiB outputs)"),
      make("tpu-v3", 128, 128, Precision::bf16, 0.94, 4, 8 * MiB, 4 * MiB, 4 * MiB, 900.0,
           "Jouppi et al., CACM 63(7) 2020: two cores with two 128x128 bf16 MXUs each, 940 MHz, 123 TFLOPS "
           "per chip, 32 GiB HBM at 900 GB/s. Buffers: model assumption, as tpu-v2 (per MXU)"),
      make("tpu-v4", 128, 128, Precision::bf16, 1.05, 8, 8 * MiB, 4 * MiB, 4 * MiB, 1200.0,
           "Jouppi et al., 'TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning', ISCA "
           "2023: two TensorCores with four 128x128 MXUs each, 1050 MHz, 275 TFLOPS bf16 per chip, 32 GiB "
           "HBM2 at 1200 GB/s. Buffers: model assumption, as tpu-v2 (per MXU)"),
      make("tpu-v5e", 128, 128, Precision::bf16, 1.5, 4, 8 * MiB, 4 * MiB, 4 * MiB, 819.0,
           "Google Cloud TPU v5e documentation: one TensorCore with four 128x128 MXUs, 197 TFLOPS bf16 "
           "(394 TOPS int8) per chip, 16 GB HBM2 at 819 GB/s; 1.5 GHz follows from 197 TFLOPS / (4 x "
           "128 x 128 x 2). Buffers: model assumption, as tpu-v2 (per MXU)"),
      make("gemmini", 16, 16, Precision::int8, 1.0, 1, 128 * KiB, 128 * KiB, 64 * KiB, 16.0,
           "Genc et al., 'Gemmini: Enabling Systematic Deep-Learning Architecture Evaluation via Full-Stack "
           "Integration', DAC 2021: default 16x16 int8 array, 256 KiB scratchpad (here split between "
           "inputs and weights), 64 KiB accumulator, 128-bit system bus (16 bytes per cycle). Clock: model "
           "assumption (1 GHz)"),
  };
  return list;
}

const ArraySpec& preset(std::string_view name) {
  std::string names;
  for (const auto& p : presets()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  throw SimulationError("unknown preset '" + std::string(name) + "'; presets: " + names);
}

}  // namespace gemmlab::systolic
