// gemmlab kernels: the kernels with their parameters, allowed values and constraints.
#include <fmt/core.h>

#include "cli.hpp"
#include "gemmlab/json.hpp"

namespace gemmlab::cli {

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
      if (!k["parameters"].empty())
        fmt::print("    space: {} configurations, {} valid\n", k["raw_size"].get<double>(),
                   k["valid_size"].get<std::size_t>());
    }
  });
}

}  // namespace gemmlab::cli
