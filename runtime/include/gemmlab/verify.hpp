// The verification plan shared by `gemmlab verify` and the test suite: which shapes, which
// alpha/beta pairs and which configurations each kernel is checked on.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gemmlab/evaluate.hpp"
#include "gemmlab/launch_counts.hpp"
#include "gemmlab/registry.hpp"

namespace gemmlab {

// 1x1x1, 7x13x5, 127x129x131, 1000x1x1000, 1x1000x1000, 513x257x1, 256x256x256: the scalar case,
// small primes, sizes one off the powers of two, a dot-product-like row, tall-skinny, K = 1, and
// one size that is a multiple of every tile.
std::vector<Problem> default_verification_shapes();

struct Scalars {
  double alpha, beta;
};
// (1, 0): C is write-only; (-0.75, 1.25): both scalings, C read. int8 problems (int32 C) take
// whole numbers: each pair times four, (4, 0) and (-3, 5).
std::vector<Scalars> default_verification_scalars();

struct VerifyCase {
  std::string backend, kernel;
  Problem problem;
  Config config;
  std::string status;  // "passed", "failed", "unsupported"
  ValidationResult validation;
  LaunchCounts counts;  // what a simulated device counted in the case's launch; empty elsewhere
};

struct VerifyOptions {
  std::vector<Problem> shapes = default_verification_shapes();
  std::vector<Scalars> scalars = default_verification_scalars();
  std::vector<Precision> precisions;  // empty: all the kernel supports (fp32, fp64 on the host)
  bool padded_leading_dimensions = false;  // also run each case with ld = row length + 3
  std::uint64_t seed = 42;
  std::size_t sample = 0;  // also this many configurations spread over the space (sampled_configurations)
};

// The configurations a plan checks: the default and the extremes of the parameter ranges
// (SearchSpace::extremes), then `sample` more spread evenly over the valid space: the
// configurations at equal steps through enumerate()'s order, so that every parameter's values
// appear; the whole valid space when `sample` is at least its size. None listed twice.
std::vector<Config> sampled_configurations(const SearchSpace& space, const Config& defaults, std::size_t sample);

// Every case of the plan for one kernel: sampled_configurations x shapes x precisions x scalars.
std::vector<VerifyCase> verify_kernel(Device& device, const Kernel& kernel, Reference* truth_fp64,
                                      const VerifyOptions& options);

// Compiling without a device (kernels compiled at run time): each target x precision x the
// default configuration, the extremes and `sample` more (sampled_configurations). A case fails
// when the configuration does not compile, needs more shared memory than the target allows, or —
// at the default configuration — spills registers to local memory (the others may: they are
// corners and samples of the space, not advice).
struct CompileCase {
  std::string backend, kernel;
  Precision precision = Precision::fp32;
  Config config;
  bool is_default = false;
  std::string status;  // "passed", "failed", "unsupported"
  CompileReport report;
  std::string reason;  // why failed / unsupported
};
std::vector<CompileCase> compile_check_kernel(const Kernel& kernel, const std::vector<Precision>& precisions,
                                              std::size_t sample = 0);

}  // namespace gemmlab
