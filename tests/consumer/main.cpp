// Uses an installed gemmlab: one kernel on one problem, validated against OpenBLAS in fp64.
// Exit status 0 only when the result is valid.
#include <cstdio>
#include <exception>

#include <gemmlab/builtin.hpp>
#include <gemmlab/evaluate.hpp>
#include <gemmlab/setup.hpp>

int main() {
  try {
    using namespace gemmlab;
    const EvaluationSetup setup = open_evaluation(registry().backend("cpu"), {.timed_reference = false});
    const Kernel& kernel = registry().kernel("cpu", "03_cache_blocked");
    const Problem problem = Problem::packed(37, 29, 41, Precision::fp64, -0.75, 1.25);
    EvaluationOptions options;
    options.time = false;
    const Config config = kernel.default_config(setup.info(), problem.precision);
    const Evaluation e = evaluate(*setup.device, kernel, config, problem, setup.truth.get(), nullptr, options);
    std::printf("%s %s {%s}: %s (max relative error %g, tolerance %g) %s\n", std::string(kernel.name()).c_str(),
                problem.shape().c_str(), to_string(config).c_str(), e.validation.valid ? "valid" : "INVALID",
                e.validation.max_rel_error, e.validation.tolerance, e.validation.reason.c_str());
    return e.validation.valid ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 2;
  }
}
