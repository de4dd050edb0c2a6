// gemmlab verify: every kernel (default configuration and the extremes of its parameter ranges)
// against the fp64 reference on a list of awkward shapes. Exit status 1 when any case fails.
#include <fmt/core.h>

#include <sstream>

#include "cli.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/verify.hpp"

namespace gemmlab::cli {

namespace {
// verify --compile-only: the same JSON shape as verify, one case per target, precision and
// configuration, with the compiler's resource report.
void compile_only(const std::vector<const Kernel*>& kernels, const std::vector<Precision>& precisions, bool json,
                  Outcome& outcome) {
  nlohmann::json cases = nlohmann::json::array();
  int passed = 0, failed = 0, unsupported = 0;
  for (const Kernel* kernel : kernels)
    for (const CompileCase& c : compile_check_kernel(*kernel, precisions)) {
      passed += c.status == "passed";
      failed += c.status == "failed";
      unsupported += c.status == "unsupported";
      nlohmann::json j = {{"backend", c.backend}, {"kernel", c.kernel}, {"status", c.status}, {"reason", c.reason}};
      if (c.status != "unsupported") {
        j["target"] = c.report.target;
        j["precision"] = to_string(c.precision);
        j["params"] = c.config;
        j["default_config"] = c.is_default;
        j["registers"] = c.report.registers;
        j["shared_bytes"] = c.report.shared_bytes;
        j["shared_limit"] = c.report.shared_limit;
        j["spill_bytes"] = c.report.spill_bytes;
        j["stack_bytes"] = c.report.stack_bytes;
        if (c.report.scalar_registers > 0) j["scalar_registers"] = c.report.scalar_registers;
        if (c.report.accumulation_registers > 0) j["accumulation_registers"] = c.report.accumulation_registers;
        if (!c.report.instruction_classes.empty()) {
          j["matrix_instructions"] = c.report.matrix_instructions;
          j["instruction_classes"] = c.report.instruction_classes;
        }
      }
      if (!json && c.status != "passed")
        fmt::print("{:<11} {}/{} {} {} [{}] {}\n", c.status, c.backend, c.kernel, c.report.target,
                   to_string(c.precision), to_string(c.config), c.reason);
      cases.push_back(std::move(j));
    }
  outcome.exit_status = failed > 0 ? 1 : 0;
  if (json) return print_json({{"cases", cases}, {"passed", passed}, {"failed", failed}, {"unsupported", unsupported}});
  fmt::print("{} passed, {} failed, {} unsupported (compiled only)\n", passed, failed, unsupported);
}
}  // namespace

void add_verify_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    std::string backend, kernel, shapes, precision;
    bool padded = false, json = false, compile_only = false;
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
  cmd->add_flag("--compile-only", o->compile_only,
                "Kernels compiled at run time (cuda): compile the default configuration and the extremes for every "
                "target architecture and check the compiler's resource report; no device needed");
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
    if (o->compile_only) return compile_only(kernels, options.precisions, o->json, outcome);
    auto truth = cpu::load_cblas("openblas");

    nlohmann::json cases = nlohmann::json::array();
    int passed = 0, failed = 0, unsupported = 0;
    for (const Kernel* kernel : kernels) {
      Backend& backend = registry().backend(std::string(kernel->backend()));
      if (backend.devices().empty()) {  // e.g. the cuda backend on a machine without a GPU
        ++unsupported;
        const std::string reason = "no " + backend.name() + " device on this machine (try --compile-only)";
        cases.push_back({{"backend", kernel->backend()}, {"kernel", kernel->name()}, {"status", "unsupported"},
                         {"reason", reason}});
        if (!o->json) fmt::print("{:<11} {}/{} {}\n", "unsupported", kernel->backend(), kernel->name(), reason);
        continue;
      }
      auto device = backend.open(0);
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
