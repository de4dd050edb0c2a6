// Evaluating one kernel configuration on one problem: prepare, run once, validate against the
// fp64 reference, then time it and the vendor reference on the same device buffers. The CLI, the
// tests and the tuner all go through this one routine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gemmlab/kernel.hpp"
#include "gemmlab/measure.hpp"
#include "gemmlab/validate.hpp"

namespace gemmlab {

struct EvaluationOptions {
  std::uint64_t seed = 42;
  bool time = true;              // time the kernel (when valid) and the reference
  MeasureOptions measure;
};

struct Timing {
  Measurement measurement;
  double gflops = 0;  // from the median
};

struct Evaluation {
  ValidationResult validation;
  std::optional<Timing> kernel;
  std::optional<Timing> reference;
  std::string reference_name;
  double ratio_to_reference = 0;  // kernel GFLOP/s / reference GFLOP/s
};

// `truth_fp64` computes the fp64 expected result on the host (null: plain loops);
// `timed_reference` is timed next to the kernel on `device` (null: not timed).
// Throws ConfigError / std::invalid_argument for a configuration or problem the kernel rejects.
Evaluation evaluate(Device& device, const Kernel& kernel, const Config& config,
                    const Problem& problem, Reference* truth_fp64, Reference* timed_reference,
                    const EvaluationOptions& options = {});

double gflops(const Problem& problem, double seconds);

}  // namespace gemmlab
