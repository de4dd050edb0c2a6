#include "gemmlab/verify.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

namespace gemmlab {

std::vector<Problem> default_verification_shapes() {
  std::vector<Problem> shapes;
  for (const char* s : {"1x1x1", "7x13x5", "127x129x131", "1000x1x1000", "1x1000x1000", "513x257x1",
                        "256x256x256"})
    shapes.push_back(parse_shape(s));
  return shapes;
}

std::vector<Scalars> default_verification_scalars() { return {{1.0, 0.0}, {-0.75, 1.25}}; }

std::vector<Config> sampled_configurations(const SearchSpace& space, const Config& defaults, std::size_t sample) {
  std::vector<Config> configs = space.extremes(defaults);
  if (sample == 0) return configs;
  const std::vector<Config> valid = space.enumerate();
  const std::size_t n = std::min(sample, valid.size());
  for (std::size_t i = 0; i < n; ++i) {
    // The i-th of n equal steps through the valid configurations (index 0 .. size-1).
    const Config& c = valid[n == valid.size() ? i : i * (valid.size() - 1) / std::max<std::size_t>(1, n - 1)];
    if (std::find(configs.begin(), configs.end(), c) == configs.end()) configs.push_back(c);
  }
  return configs;
}

std::vector<VerifyCase> verify_kernel(Device& device, const Kernel& kernel, Reference* truth_fp64,
                                      const VerifyOptions& options) {
  std::vector<VerifyCase> cases;
  const DeviceInfo& info = device.info();
  const Support support = kernel.supported(info);
  if (!support.ok) {  // one case says why; nothing is run
    VerifyCase c{std::string(kernel.backend()), std::string(kernel.name()), {}, {}, "unsupported", {}, {}};
    c.validation.reason = support.reason;
    return {c};
  }
  std::vector<Precision> precisions = options.precisions.empty() ? kernel.precisions() : options.precisions;
  for (Precision precision : precisions) {
    if (!kernel.has_precision(precision)) continue;
    const SearchSpace space = kernel.space(info, precision);
    std::vector<Config> configs;
    if (!space.enumerate(1).empty())
      configs = sampled_configurations(space, kernel.default_config(info, precision), options.sample);
    if (configs.empty()) {  // e.g. buffers too small for any tile of this precision
      VerifyCase c{std::string(kernel.backend()), std::string(kernel.name()), {}, {}, "unsupported", {}, {}};
      c.problem.precision = precision;
      c.validation.reason = "no configuration of " + std::string(kernel.name()) + " is valid for " +
                            std::string(to_string(precision)) + " on " + info.name;
      cases.push_back(std::move(c));
      continue;
    }
    // Problems outside, configurations inside: one Evaluator per problem makes the operands and
    // the fp64 truth once for all configurations.
    EvaluationOptions eval;
    eval.seed = options.seed;
    eval.time = false;
    // A kernel that reads transposed operands is checked in all four layouts (NN, TN, NT, TT).
    const int layouts = kernel.reads_transposed() ? 4 : 1;
    for (Problem shape : options.shapes)
      for (Scalars s : options.scalars)
        for (int layout = 0; layout < layouts; ++layout)
          for (int padded = 0; padded <= (options.padded_leading_dimensions ? 1 : 0); ++padded) {
          shape.trans_a = (layout & 1) != 0;
          shape.trans_b = (layout & 2) != 0;
          Problem p = with_padding(shape, padded ? 3 : 0);
          p.precision = precision;
          p.alpha = s.alpha;
          p.beta = s.beta;
          if (precision == Precision::int8) {  // int32 C: whole-number scalars, the pair times four
            p.alpha = std::nearbyint(4 * s.alpha);
            p.beta = std::nearbyint(4 * s.beta);
          }
          Evaluator evaluator(device, p, truth_fp64, options.seed);
          for (const Config& config : configs) {
            VerifyCase c{std::string(kernel.backend()), std::string(kernel.name()), p, config, "", {}, {}};
            try {
              c.validation = evaluator.run(kernel, config, nullptr, eval).validation;
              c.status = c.validation.valid ? "passed" : "failed";
              c.counts = last_launch_counts(device);
            } catch (const Unsupported& e) {  // a problem the kernel cannot take (TMA alignment)
              c.status = "unsupported";
              c.validation.reason = e.what();
            } catch (const std::runtime_error& e) {  // the launch failed (the PTX simulator's sanitizer)
              c.status = "failed";
              c.validation.valid = false;
              c.validation.reason = e.what();
            }
            cases.push_back(std::move(c));
          }
        }
  }
  return cases;
}

std::vector<CompileCase> compile_check_kernel(const Kernel& kernel, const std::vector<Precision>& precisions,
                                              std::size_t sample) {
  const std::string backend(kernel.backend()), name(kernel.name());
  const std::vector<CompileTarget> targets = kernel.compile_targets();
  if (targets.empty()) {
    CompileCase c;
    c.backend = backend;
    c.kernel = name;
    c.status = "unsupported";
    c.reason = "compiled ahead of time: nothing to compile at run time";
    return {c};
  }
  struct Job {
    const CompileTarget* target;
    CompileCase c;
  };
  std::vector<Job> jobs;
  for (const CompileTarget& target : targets)
    for (Precision precision : precisions.empty() ? kernel.precisions() : precisions) {
      if (!kernel.has_precision(precision)) continue;
      const Config defaults = kernel.default_config(target.device, precision);
      for (const Config& config : sampled_configurations(kernel.space(target.device, precision), defaults, sample)) {
        CompileCase c;
        c.backend = backend;
        c.kernel = name;
        c.precision = precision;
        c.config = config;
        c.is_default = config == defaults;
        jobs.push_back({&target, std::move(c)});
      }
    }
  // Compilations are independent: one per hardware thread.
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < jobs.size();) {
      CompileCase& c = jobs[i].c;
      try {
        c.report = kernel.compile_only(*jobs[i].target, c.precision, c.config);
        if (c.report.shared_bytes > c.report.shared_limit)
          c.reason = "needs " + std::to_string(c.report.shared_bytes) + " bytes of shared memory; " +
                     jobs[i].target->name + " allows " + std::to_string(c.report.shared_limit);
        else if (c.is_default && c.report.spill_bytes > 0)
          c.reason = "the default configuration spills " + std::to_string(c.report.spill_bytes) +
                     " bytes to local memory";
      } catch (const std::exception& e) {
        c.report.target = jobs[i].target->name;
        c.reason = e.what();
      }
      c.status = c.reason.empty() ? "passed" : "failed";
    }
  };
  std::vector<std::thread> pool;
  const unsigned threads = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 16));
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  std::vector<CompileCase> cases;
  for (auto& j : jobs) cases.push_back(std::move(j.c));
  return cases;
}

}  // namespace gemmlab
