// gemmlab kernels: the kernels with their parameters, allowed values and constraints.
#include <fmt/core.h>

#include "cli.hpp"
#include "gemmlab/json.hpp"

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
        const CompileReport r = k.compile_only(target, p, config);
        t["params"] = config;
        t["vgprs"] = r.registers;
        t["agprs"] = r.accumulation_registers;
        t["sgprs"] = r.scalar_registers;
        t["lds_bytes"] = r.shared_bytes;
        t["scratch_bytes"] = r.spill_bytes;
        t["matrix_instructions"] = r.matrix_instructions;
        t["instruction_classes"] = r.instruction_classes;
      } catch (const std::exception& e) {
        t["error"] = e.what();
      }
      targets.push_back(std::move(t));
    }
  return targets;
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
  cmd->add_option("--precision", options->precision, "Precision the spaces are shown for (default: each kernel's first)");
  cmd->add_flag("--json", options->json, "Print one JSON document");
  cmd->callback([options] {
    const bool asked = !options->precision.empty();
    const Precision precision = asked ? parse_precision(options->precision) : Precision::fp32;
    nlohmann::json list = nlohmann::json::array();
    for (const Kernel* k : select_kernels(options->backend, "")) {
      Backend& backend = registry().backend(std::string(k->backend()));
      auto devices = backend.devices();
      const DeviceInfo info = devices.empty() ? DeviceInfo{} : devices.front();
      const Support support = k->supported(info);
      // Each kernel's space in the asked precision, or in its first one (also when it lacks the asked
      // one: tensor cores are fp16/bf16 only).
      const Precision shown = asked && k->supports(precision) ? precision : k->precisions().front();
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
      entry["default_config"] = k->default_config(info, shown);
      entry["supported"] = support.ok;
      entry["unsupported_reason"] = support.reason;
      if (k->compiled_ahead_of_time()) entry["targets"] = target_reports(*k);
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
        fmt::print("    {:<8} {{{}}}  {} (default {})\n", p["name"].get<std::string>(), values,
                   p["help"].get<std::string>(), k["default_config"][p["name"].get<std::string>()].dump());
      }
      for (const auto& c : k["constraints"]) fmt::print("    where {}\n", c.get<std::string>());
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
                     t["target"].get<std::string>(), t["precision"].get<std::string>(), t["vgprs"].get<int>(),
                     t["agprs"].get<int>(), t["sgprs"].get<int>(), t["lds_bytes"].get<std::int64_t>(),
                     t["scratch_bytes"].get<std::int64_t>(), matrix);
        }
      if (!k["parameters"].empty())
        fmt::print("    space: {} configurations, {} valid\n", k["raw_size"].get<double>(),
                   k["valid_size"].get<std::size_t>());
    }
  });
}

}  // namespace gemmlab::cli
