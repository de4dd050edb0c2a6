// gemmlab replay: search strategies on a recorded search space (Kernel Tuner cache file), many
// seeded runs each, reported as the fraction of the optimum reached after N evaluations.
#include <fmt/core.h>

#include <algorithm>

#include "cli.hpp"
#include "gemmlab/replay.hpp"

namespace gemmlab::cli {

namespace {
// How the parameters of CLBlast's tuned GEMM (Xgemm), which the Kernel Tuner records name, map to
// kernels/opencl/03_register_tiled's. CLBlast is column-major: it computes the row-major
// C = A * B as C^T = B^T * A^T, so its M is our N, its A our B, and each of its M-side parameters
// is our N-side one (docs/opencl.md).
struct ParameterMapping {
  const char* record;
  const char* ours;  // "" when 03 has no counterpart
  const char* meaning;
};
constexpr ParameterMapping clblast_to_03[] = {
    {"MWG", "NWG", "work-group tile along CLBlast's M = our N"},
    {"NWG", "MWG", "work-group tile along CLBlast's N = our M"},
    {"KWG", "KWG", "depth of a tile step"},
    {"MDIMC", "NDIMC", "work-items computing along our N"},
    {"NDIMC", "MDIMC", "work-items computing along our M"},
    {"MDIMA", "", "work-items loading CLBlast's A (our B) along our N; 03 loads with its computing layout (NDIMC)"},
    {"NDIMB", "", "work-items loading CLBlast's B (our A) along our M; 03 loads with its computing layout (MDIMC)"},
    {"KWI", "KWI", "unroll factor over the tile's depth"},
    {"VWM", "VWN", "vector width of C and of CLBlast's A = our B, along our N"},
    {"VWN", "VWM", "vector width of the other operand: CLBlast's B along our M (it transposes it first); our A along K"},
    {"STRM", "", "strided (1) or blocked (0) elements per work-item; 03 always strides"},
    {"STRN", "", "as STRM; 03 always strides"},
    {"SA", "SB", "stage CLBlast's A = our B in local memory"},
    {"SB", "SA", "stage CLBlast's B = our A in local memory"},
    {"PRECISION", "precision", "32: fp32, 64: fp64"},
};
}  // namespace

void add_replay_command(CLI::App& app, Outcome&) {
  struct Options {
    std::string record, strategy;
    std::size_t budget = 200, parallel = 1;
    int runs = 100;
    std::uint64_t seed = 1;
    bool json = false, mapping = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("replay", "Compare search strategies on a recorded search space");
  cmd->add_option("--record", o->record, "Kernel Tuner cache file (JSON, plain or gzip)")->required();
  cmd->add_option("--strategy", o->strategy, "Only this strategy (default: all)");
  cmd->add_option("--budget", o->budget, "Evaluations per run")->capture_default_str();
  cmd->add_option("--runs", o->runs, "Seeded runs per strategy")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the first run (run r uses seed + r)")->capture_default_str();
  cmd->add_option("--parallel", o->parallel,
                  "Evaluations in flight at once, as on that many MPI ranks: what batching costs a strategy "
                  "(each finishes in the order submitted)")
      ->capture_default_str();
  cmd->add_flag("--mapping", o->mapping,
                "Instead of replaying: how the record's parameters (CLBlast's Xgemm) map to opencl/03_register_tiled's, "
                "and the record's best configuration in 03's terms");
  add_json_flag(cmd, o->json);
  cmd->callback([o] {
    if (o->budget == 0) throw UsageError("--budget must be at least 1");
    if (o->runs <= 0) throw UsageError("--runs must be at least 1");
    if (o->parallel == 0) throw UsageError("--parallel must be at least 1");
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
    if (o->mapping) {
      const RecordEntry* best = nullptr;
      for (const auto& e : record.entries)
        if (e.ok && (best == nullptr || e.time_ms < best->time_ms)) best = &e;
      nlohmann::json rows = nlohmann::json::array();
      Config translated;
      for (const auto& p : record.parameters) {
        const auto* m = std::find_if(std::begin(clblast_to_03), std::end(clblast_to_03),
                                     [&](const ParameterMapping& x) { return p.name == x.record; });
        const bool known = m != std::end(clblast_to_03);
        const std::string ours = known ? m->ours : "";
        nlohmann::json row = {{"record", p.name}, {"ours", ours}, {"meaning", known ? m->meaning : "not a CLBlast Xgemm parameter"}};
        if (best != nullptr && best->config.count(p.name)) {
          row["best_value"] = best->config.at(p.name);
          if (!ours.empty() && ours != "precision") translated[ours] = best->config.at(p.name);
        }
        rows.push_back(row);
      }
      if (o->json)
        return print_json({{"record", o->record}, {"kernel", record.kernel_name}, {"device", record.device_name},
                           {"mapping", rows}, {"best_time_ms", best ? nlohmann::json(best->time_ms) : nlohmann::json()},
                           {"best_as_03_register_tiled", translated}});
      fmt::print("{} ({}, {}): its parameters as opencl/03_register_tiled's\n", o->record, record.kernel_name,
                 record.device_name);
      fmt::print("{:<10} {:<10} {:>6}  {}\n", "record", "03", "best", "meaning");
      for (const auto& r : rows)
        fmt::print("{:<10} {:<10} {:>6}  {}\n", r["record"].get<std::string>(),
                   r["ours"].get<std::string>().empty() ? "-" : r["ours"].get<std::string>(),
                   r.contains("best_value") ? r["best_value"].dump() : "", r["meaning"].get<std::string>());
      if (best != nullptr)
        fmt::print("best recorded configuration ({:.4g} ms) as 03_register_tiled: {}\n", best->time_ms, to_string(translated));
      return;
    }
    nlohmann::json list = nlohmann::json::array();
    if (!o->json)
      fmt::print("{} ({}, {} recorded configurations; optimum {:.4g} ms), budget {}, {} runs per strategy{}\n",
                 o->record, record.device_name, space.domain().size(), space.optimum_s() * 1e3, o->budget, o->runs,
                 o->parallel > 1 ? fmt::format(", {} evaluations in flight", o->parallel) : "");
    bool header = false;
    for (const auto& name : strategies) {
      const ReplaySummary s =
          replay(space, name, {.budget = o->budget, .runs = o->runs, .seed = o->seed, .parallel = o->parallel});
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
                  {"runs", o->runs}, {"seed", o->seed}, {"parallel", o->parallel}, {"strategies", list}});
  });
}

}  // namespace gemmlab::cli
