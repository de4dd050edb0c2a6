#include "gemmlab/verify.hpp"

namespace gemmlab {

std::vector<Problem> default_verification_shapes() {
  std::vector<Problem> shapes;
  for (const char* s : {"1x1x1", "7x13x5", "127x129x131", "1000x1x1000", "1x1000x1000", "513x257x1",
                        "256x256x256"})
    shapes.push_back(parse_shape(s));
  return shapes;
}

std::vector<Scalars> default_verification_scalars() { return {{1.0, 0.0}, {-0.75, 1.25}}; }

Problem with_padding(Problem p, std::int64_t extra) {
  p.lda = std::max<std::int64_t>(1, p.k) + extra;
  p.ldb = std::max<std::int64_t>(1, p.n) + extra;
  p.ldc = std::max<std::int64_t>(1, p.n) + extra;
  return p;
}

std::vector<VerifyCase> verify_kernel(Device& device, const Kernel& kernel, Reference* truth_fp64,
                                      const VerifyOptions& options) {
  std::vector<VerifyCase> cases;
  const DeviceInfo& info = device.info();
  const Support support = kernel.supported(info);
  if (!support.ok) {  // one case says why; nothing is run
    VerifyCase c{std::string(kernel.backend()), std::string(kernel.name()), {}, {}, "unsupported", {}};
    c.validation.reason = support.reason;
    return {c};
  }
  std::vector<Precision> precisions = options.precisions.empty() ? kernel.precisions() : options.precisions;
  for (Precision precision : precisions) {
    if (!kernel.supports(precision)) continue;
    const SearchSpace space = kernel.space(info, precision);
    const std::vector<Config> configs = space.extremes(kernel.default_config(info, precision));
    // Problems outside, configurations inside: one Evaluator per problem makes the operands and
    // the fp64 truth once for all configurations.
    EvaluationOptions eval;
    eval.seed = options.seed;
    eval.time = false;
    for (Problem shape : options.shapes)
      for (Scalars s : options.scalars)
        for (int padded = 0; padded <= (options.padded_leading_dimensions ? 1 : 0); ++padded) {
          Problem p = padded ? with_padding(shape, 3) : shape;
          p.precision = precision;
          p.alpha = s.alpha;
          p.beta = s.beta;
          Evaluator evaluator(device, p, truth_fp64, options.seed);
          for (const Config& config : configs) {
            VerifyCase c{std::string(kernel.backend()), std::string(kernel.name()), p, config, "", {}};
            c.validation = evaluator.run(kernel, config, nullptr, eval).validation;
            c.status = c.validation.valid ? "passed" : "failed";
            cases.push_back(std::move(c));
          }
        }
  }
  return cases;
}

}  // namespace gemmlab
