// gemmlab verify: every kernel (default configuration and the extremes of its parameter ranges,
// optionally a sample of its space) against the fp64 reference on a list of awkward shapes. Exit
// status 1 when any case fails.
#include <fmt/core.h>

#include <sstream>

#include "cli.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/launch_counts.hpp"
#include "gemmlab/setup.hpp"
#include "gemmlab/verify.hpp"

namespace gemmlab::cli {

namespace {
// The cases of a verification, counted by status: verify and verify --compile-only report alike.
struct Tally {
  nlohmann::json cases = nlohmann::json::array();
  int passed = 0, failed = 0, unsupported = 0;

  void add(const std::string& status, nlohmann::json c) {
    passed += status == "passed";
    failed += status == "failed";
    unsupported += status == "unsupported";
    cases.push_back(std::move(c));
  }
  // Exit status 1 when any case failed; prints the cases as JSON, else a summary line.
  void report(bool json, const std::string& note, Outcome& outcome) const {
    outcome.exit_status = failed > 0 ? 1 : 0;
    if (json) return print_json({{"cases", cases}, {"passed", passed}, {"failed", failed}, {"unsupported", unsupported}});
    fmt::print("{} passed, {} failed, {} unsupported{}\n", passed, failed, unsupported, note);
  }
};

// verify --compile-only: the same JSON shape as verify, one case per target, precision and
// configuration, with the compiler's resource report.
void compile_only(const std::vector<const Kernel*>& kernels, const std::vector<Precision>& precisions,
                  std::size_t sample, bool json, Outcome& outcome) {
  Tally tally;
  for (const Kernel* kernel : kernels)
    for (const CompileCase& c : compile_check_kernel(*kernel, precisions, sample)) {
      nlohmann::json j = {{"backend", c.backend}, {"kernel", c.kernel}, {"status", c.status}, {"reason", c.reason}};
      if (c.status != "unsupported") {
        j["precision"] = to_string(c.precision);
        j["params"] = c.config;
        j["default_config"] = c.is_default;
        j.update(nlohmann::json(c.report));
      }
      if (!json && c.status != "passed")
        fmt::print("{:<11} {}/{} {} {} [{}] {}\n", c.status, c.backend, c.kernel, c.report.target,
                   to_string(c.precision), to_string(c.config), c.reason);
      tally.add(c.status, std::move(j));
    }
  tally.report(json, " (compiled only)", outcome);
}
}  // namespace

void add_verify_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    std::string backend, kernel, shapes, precision, sample;
    bool padded = false, json = false, compile_only = false;
    std::uint64_t seed = 42;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("verify", "Check kernels against the fp64 reference on awkward shapes");
  cmd->add_option("--backend", o->backend, "Only this backend (default: all)");
  cmd->add_option("--kernel", o->kernel, "Only this kernel (default: all)");
  // The default list is the library's, so that the help cannot fall behind it.
  std::string default_shapes;
  for (const Problem& p : default_verification_shapes()) default_shapes += (default_shapes.empty() ? "" : ",") + p.shape();
  cmd->add_option("--shapes", o->shapes, "Comma-separated MxNxK list (default: " + default_shapes + ")");
  cmd->add_option("--precision", o->precision,
                  "Only this precision (default: every precision each kernel has, the device's native one included; "
                  "one without a valid configuration on the device is reported unsupported)");
  cmd->add_flag("--padded", o->padded, "Also run every case with leading dimensions 3 longer than the rows");
  cmd->add_option("--seed", o->seed, "Seed of the random operands")->capture_default_str();
  cmd->add_option("--sample", o->sample,
                  "Also N valid configurations of each kernel spread evenly over its space, or 'all' of them "
                  "(default: the default configuration and the extremes only)");
  cmd->add_flag("--compile-only", o->compile_only,
                "Kernels compiled at run time (cuda): compile the default configuration and the extremes for every "
                "target architecture and check the compiler's resource report; no device needed");
  add_json_flag(cmd, o->json);

  cmd->callback([o, &outcome] {
    VerifyOptions options;
    options.padded_leading_dimensions = o->padded;
    options.seed = o->seed;
    if (!o->precision.empty()) options.precisions = {parse_precision(o->precision)};
    if (o->sample == "all") {
      options.sample = static_cast<std::size_t>(-1);
    } else if (!o->sample.empty()) {
      std::size_t used = 0;
      long long n = -1;
      try {
        n = std::stoll(o->sample, &used);
      } catch (const std::exception&) {
      }
      if (n < 0 || used != o->sample.size())
        throw UsageError("--sample: expected a number of configurations or 'all', got '" + o->sample + "'");
      options.sample = static_cast<std::size_t>(n);
    }
    if (!o->shapes.empty()) {
      options.shapes.clear();
      std::stringstream list(o->shapes);
      std::string item;
      while (std::getline(list, item, ',')) options.shapes.push_back(parse_shape(item));
    }
    const auto kernels = select_kernels(o->backend, o->kernel);
    if (o->compile_only) return compile_only(kernels, options.precisions, options.sample, o->json, outcome);

    Tally tally;
    for (const Kernel* kernel : kernels) {
      Backend& backend = registry().backend(std::string(kernel->backend()));
      if (backend.devices().empty()) {  // e.g. the cuda backend on a machine without a GPU
        const std::string reason = "no " + backend.name() + " device on this machine (try --compile-only)";
        tally.add("unsupported", {{"backend", kernel->backend()}, {"kernel", kernel->name()}, {"status", "unsupported"},
                                  {"reason", reason}});
        if (!o->json) fmt::print("{:<11} {}/{} {}\n", "unsupported", kernel->backend(), kernel->name(), reason);
        continue;
      }
      const EvaluationSetup setup = open_evaluation(backend, {.timed_reference = false});
      const bool simulated = functional_simulation(setup.info());
      if (!o->json && simulated)
        fmt::print("{}/{} on {}: simulated (functional, by the PTX simulator)\n", kernel->backend(), kernel->name(),
                   setup.info().name);
      for (const VerifyCase& c : verify_kernel(*setup.device, *kernel, setup.truth.get(), options)) {
        nlohmann::json j = {{"backend", c.backend}, {"kernel", c.kernel}, {"device", setup.info().name},
                            {"simulated", simulated}, {"status", c.status}};
        if (!c.counts.empty()) {
          nlohmann::json counts = nlohmann::json::object();
          for (const auto& [name, value] : c.counts) counts[name] = value;
          j["simulated_counts"] = counts;
        }
        if (c.status != "unsupported") {
          j["shape"] = c.problem.shape();
          j["transposes"] = c.problem.transposes();
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
          fmt::print("{:<11} {}/{} {} {} {} alpha={} beta={} [{}] {}\n", c.status, c.backend, c.kernel,
                     c.problem.shape(), c.problem.transposes(), to_string(c.problem.precision), c.problem.alpha, c.problem.beta,
                     to_string(c.config), c.validation.reason);
        tally.add(c.status, std::move(j));
      }
    }
    tally.report(o->json, "", outcome);
  });
}

}  // namespace gemmlab::cli
