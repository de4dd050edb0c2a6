// gemmlab replay: search strategies on a recorded search space (Kernel Tuner cache file), many
// seeded runs each, reported as the fraction of the optimum reached after N evaluations.
#include <fmt/core.h>

#include "cli.hpp"
#include "gemmlab/replay.hpp"

namespace gemmlab::cli {

void add_replay_command(CLI::App& app, Outcome&) {
  struct Options {
    std::string record, strategy;
    std::size_t budget = 200;
    int runs = 100;
    std::uint64_t seed = 1;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("replay", "Compare search strategies on a recorded search space");
  cmd->add_option("--record", o->record, "Kernel Tuner cache file (JSON, plain or gzip)")->required();
  cmd->add_option("--strategy", o->strategy, "Only this strategy (default: all)");
  cmd->add_option("--budget", o->budget, "Evaluations per run")->capture_default_str();
  cmd->add_option("--runs", o->runs, "Seeded runs per strategy")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the first run (run r uses seed + r)")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON document");
  cmd->callback([o] {
    if (o->budget == 0) throw UsageError("--budget must be at least 1");
    if (o->runs <= 0) throw UsageError("--runs must be at least 1");
    const std::vector<std::string> strategies =
        o->strategy.empty() ? strategy_names() : std::vector<std::string>{o->strategy};
    for (const auto& s : strategies) make_strategy(s);  // unknown names fail before any work
    Record record;
    try {
      record = load_record(o->record);
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
    const RecordedSpace space(record);
    nlohmann::json list = nlohmann::json::array();
    if (!o->json)
      fmt::print("{} ({}, {} recorded configurations; optimum {:.4g} ms), budget {}, {} runs per strategy\n",
                 o->record, record.device_name, space.domain().size(), space.optimum_s() * 1e3, o->budget, o->runs);
    bool header = false;
    for (const auto& name : strategies) {
      const ReplaySummary s = replay(space, name, {.budget = o->budget, .runs = o->runs, .seed = o->seed});
      nlohmann::json fractions = nlohmann::json::object(), spreads = nlohmann::json::object();
      for (const auto& [b, v] : s.mean_fraction) fractions[std::to_string(b)] = v;
      for (const auto& [b, v] : s.spread_fraction) spreads[std::to_string(b)] = v;
      list.push_back({{"name", name},
                      {"fraction_of_optimum", fractions},
                      {"fraction_of_optimum_stddev", spreads},
                      {"evals_to_within_5pct", s.runs_within_5pct > 0 ? nlohmann::json(s.mean_evals_to_within_5pct) : nlohmann::json()},
                      {"runs_within_5pct", s.runs_within_5pct},
                      {"runs", s.runs}});
      if (o->json) continue;
      if (!header) {
        fmt::print("{:<12}", "strategy");
        for (const auto& [b, v] : s.mean_fraction) fmt::print(" {:>14}", "@" + std::to_string(b));
        fmt::print("  evals to 5% (runs)\n");
        header = true;
      }
      fmt::print("{:<12}", name);
      for (const auto& [b, v] : s.mean_fraction) fmt::print(" {:>7.1f}% ±{:4.1f}", 100 * v, 100 * s.spread_fraction.at(b));
      fmt::print("  {:>6.1f} ({}/{})\n", s.mean_evals_to_within_5pct, s.runs_within_5pct, s.runs);
    }
    if (o->json)
      print_json({{"record", o->record}, {"device", record.device_name}, {"budget", o->budget},
                  {"runs", o->runs}, {"seed", o->seed}, {"strategies", list}});
  });
}

}  // namespace gemmlab::cli
