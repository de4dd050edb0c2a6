// gemmlab verify: every kernel (default configuration and the extremes of its parameter ranges)
// against the fp64 reference on a list of awkward shapes. Exit status 1 when any case fails.
#include <fmt/core.h>

#include <sstream>

#include "cli.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/verify.hpp"

namespace gemmlab::cli {

void add_verify_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    std::string backend, kernel, shapes, precision;
    bool padded = false, json = false;
    std::uint64_t seed = 42;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("verify", "Check kernels against the fp64 reference on awkward shapes");
  cmd->add_option("--backend", o->backend, "Only this backend (default: all)");
  cmd->add_option("--kernel", o->kernel, "Only this kernel (default: all)");
  cmd->add_option("--shapes", o->shapes,
                  "Comma-separated MxNxK list (default: 1x1x1,7x13x5,127x129x131,1000x1x1000,"
                  "1x1000x1000,513x257x1,256x256x256)");
  cmd->add_option("--precision", o->precision, "fp32 or fp64 (default: both)");
  cmd->add_flag("--padded", o->padded, "Also run every case with leading dimensions 3 longer than the rows");
  cmd->add_option("--seed", o->seed, "Seed of the random operands")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON document");

  cmd->callback([o, &outcome] {
    VerifyOptions options;
    options.padded_leading_dimensions = o->padded;
    options.seed = o->seed;
    if (!o->precision.empty()) options.precisions = {parse_precision(o->precision)};
    if (!o->shapes.empty()) {
      options.shapes.clear();
      std::stringstream list(o->shapes);
      std::string item;
      while (std::getline(list, item, ',')) options.shapes.push_back(parse_shape(item));
    }
    const auto kernels = select_kernels(o->backend, o->kernel);
    auto truth = cpu::load_cblas("openblas");

    nlohmann::json cases = nlohmann::json::array();
    int passed = 0, failed = 0, unsupported = 0;
    for (const Kernel* kernel : kernels) {
      auto device = registry().backend(std::string(kernel->backend())).open(0);
      for (const VerifyCase& c : verify_kernel(*device, *kernel, truth.get(), options)) {
        passed += c.status == "passed";
        failed += c.status == "failed";
        unsupported += c.status == "unsupported";
        nlohmann::json j = {{"backend", c.backend}, {"kernel", c.kernel}, {"status", c.status}};
        if (c.status != "unsupported") {
          j["shape"] = c.problem.shape();
          j["precision"] = to_string(c.problem.precision);
          j["alpha"] = c.problem.alpha;
          j["beta"] = c.problem.beta;
          j["lda"] = c.problem.lda;
          j["ldb"] = c.problem.ldb;
          j["ldc"] = c.problem.ldc;
          j["params"] = c.config;
          j["max_rel_error"] = nlohmann::json(c.validation)["max_rel_error"];
          j["tolerance"] = c.validation.tolerance;
        }
        j["reason"] = c.validation.reason;
        if (!o->json && c.status != "passed")
          fmt::print("{:<11} {}/{} {} {} alpha={} beta={} [{}] {}\n", c.status, c.backend, c.kernel,
                     c.problem.shape(), to_string(c.problem.precision), c.problem.alpha, c.problem.beta,
                     to_string(c.config), c.validation.reason);
        cases.push_back(std::move(j));
      }
    }
    outcome.exit_status = failed > 0 ? 1 : 0;
    if (o->json)
      return print_json({{"cases", cases}, {"passed", passed}, {"failed", failed}, {"unsupported", unsupported}});
    fmt::print("{} passed, {} failed, {} unsupported\n", passed, failed, unsupported);
  });
}

}  // namespace gemmlab::cli
