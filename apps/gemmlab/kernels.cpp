// gemmlab kernels: the kernels with their parameters, allowed values and constraints.
#include <fmt/core.h>

#include "cli.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/setup.hpp"

namespace gemmlab::cli {

namespace {
// What compiling each precision's default configuration for each target gave (the build compiled
// them ahead of time, so the module cache answers).
nlohmann::json target_reports(const Kernel& k) {
  nlohmann::json targets = nlohmann::json::array();
  for (const CompileTarget& target : k.compile_targets())
    for (Precision p : k.precisions()) {
      nlohmann::json t = {{"target", target.name}, {"precision", to_string(p)}};
      try {
        const Config config = k.default_config(target.device, p);
        t["params"] = config;
        t.update(nlohmann::json(k.compile_only(target, p, config)));
      } catch (const std::exception& e) {
        t["error"] = e.what();
      }
      targets.push_back(std::move(t));
    }
  return targets;
}

// "text  (note)", or the text alone.
std::string with_note(const std::string& text, const std::string& note) {
  return note.empty() ? text : text + "  (" + note + ")";
}

// The constraints as the code evaluates them, then the named values they use: constants with
// their value, derived ones with their definition (and value when constant).
void print_constraints(const nlohmann::json& k) {
  if (k["constraints"].empty() && k["named_values"].empty()) return;
  fmt::print("    constraints for {}:\n", k["space_precision"].get<std::string>());
  for (const auto& c : k["constraints"])
    fmt::print("      {}\n", with_note(c["expression"].get<std::string>(), c["why"].get<std::string>()));
  for (const auto& v : k["named_values"]) {
    std::string definition = v["name"].get<std::string>() + " = " + v["definition"].get<std::string>();
    if (!v["value"].is_null() && v["value"].dump() != v["definition"].get<std::string>())
      definition += " = " + v["value"].dump();
    fmt::print("      with {}\n", with_note(definition, v["help"].get<std::string>()));
  }
}
}  // namespace

void add_kernels_command(CLI::App& app, Outcome&) {
  struct Options {
    bool json = false;
    std::string backend, precision;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("kernels", "List kernels with their parameters and constraints");
  cmd->add_option("--backend", options->backend, "Only this backend's kernels");
  cmd->add_option("--precision", options->precision,
                  "Precision the spaces are shown for (default: the device's native one where the kernel has it, else "
                  "the kernel's first)");
  add_json_flag(cmd, options->json);
  cmd->callback([options] {
    const bool asked = !options->precision.empty();
    const Precision precision = asked ? parse_precision(options->precision) : Precision::fp32;
    nlohmann::json list = nlohmann::json::array();
    for (const Kernel* k : select_kernels(options->backend, "")) {
      Backend& backend = registry().backend(std::string(k->backend()));
      auto devices = backend.devices();
      const DeviceInfo info = devices.empty() ? DeviceInfo{} : devices.front();
      const Support support = k->supported(info);
      // Each kernel's space in the asked precision, or in the one commands default to (also when it
      // lacks the asked one: tensor cores are fp16/bf16 only).
      const Precision shown = asked && k->has_precision(precision) ? precision : default_precision(*k, info);
      const SearchSpace space = k->space(info, shown);
      nlohmann::json precisions = nlohmann::json::array();
      for (auto p : k->precisions()) precisions.push_back(to_string(p));
      nlohmann::json entry = space;
      entry["name"] = k->name();
      entry["backend"] = k->backend();
      entry["summary"] = k->summary();
      entry["source_hash"] = k->source_hash();
      entry["precisions"] = precisions;
      entry["space_precision"] = to_string(shown);
      // A space with no valid configuration on this device (fp32 tiles on a small array) has no default.
      const bool any_valid = !space.enumerate(1).empty();
      entry["default_config"] = any_valid ? nlohmann::json(k->default_config(info, shown)) : nlohmann::json::object();
      entry["supported"] = support.ok;
      entry["unsupported_reason"] = support.reason;
      if (k->compilation() == Compilation::at_run_time_and_build) entry["targets"] = target_reports(*k);
      list.push_back(entry);
    }
    if (options->json) return print_json({{"kernels", list}});
    for (const auto& k : list) {
      fmt::print("{}/{}  {}{}\n", k["backend"].get<std::string>(), k["name"].get<std::string>(),
                 k["summary"].get<std::string>(),
                 k["supported"].get<bool>() ? "" : "  [unsupported: " + k["unsupported_reason"].get<std::string>() + "]");
      for (const auto& p : k["parameters"]) {
        std::string values;
        for (const auto& v : p["values"]) values += (values.empty() ? "" : ",") + v.dump();
        const auto& defaults = k["default_config"];
        const std::string name = p["name"].get<std::string>();
        fmt::print("    {:<8} {{{}}}  {} (default {})\n", name, values, p["help"].get<std::string>(),
                   defaults.contains(name) ? defaults[name].dump() : "none: no valid configuration");
      }
      print_constraints(k);
      if (k.contains("targets"))
        for (const auto& t : k["targets"]) {
          if (t.contains("error")) {
            fmt::print("    {} {}: {}\n", t["target"].get<std::string>(), t["precision"].get<std::string>(),
                       t["error"].get<std::string>());
            continue;
          }
          std::string matrix;
          for (const auto& [mnemonic, count] : t["matrix_instructions"].items())
            matrix += fmt::format(", {} {}", count.get<int>(), mnemonic);
          fmt::print("    {} {}: {} VGPRs, {} AGPRs, {} SGPRs, {} bytes LDS, {} bytes scratch{}\n",
                     t["target"].get<std::string>(), t["precision"].get<std::string>(), t["registers"].get<int>(),
                     t["accumulation_registers"].get<int>(), t["scalar_registers"].get<int>(),
                     t["shared_bytes"].get<std::int64_t>(), t["spill_bytes"].get<std::int64_t>(), matrix);
        }
      if (!k["parameters"].empty())
        fmt::print("    space: {} configurations, {} valid\n", k["raw_size"].get<double>(),
                   k["valid_size"].get<std::size_t>());
    }
  });
}

}  // namespace gemmlab::cli
