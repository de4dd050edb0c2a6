// Pieces shared by the subcommands of the `gemmlab` program.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemmlab/builtin.hpp"
#include "gemmlab/evaluate.hpp"

namespace gemmlab::cli {

// Bad input from the user: printed as one line, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Set by a subcommand to the process exit status (0 unless it says otherwise).
struct Outcome {
  int exit_status = 0;
};

void add_devices_command(CLI::App& app, Outcome& outcome);
void add_kernels_command(CLI::App& app, Outcome& outcome);
void add_run_command(CLI::App& app, Outcome& outcome);
void add_verify_command(CLI::App& app, Outcome& outcome);
void add_replay_command(CLI::App& app, Outcome& outcome);
void add_export_command(CLI::App& app, Outcome& outcome);
void add_tune_command(CLI::App& app, Outcome& outcome);
void add_worker_command(CLI::App& app, Outcome& outcome);
void add_simulate_command(CLI::App& app, Outcome& outcome);
void add_sweep_command(CLI::App& app, Outcome& outcome);
void add_report_command(CLI::App& app, Outcome& outcome);

// The kernels named by --backend / --kernel ("" = all); unknown names are UsageErrors.
std::vector<const Kernel*> select_kernels(const std::string& backend, const std::string& kernel);

void print_json(const nlohmann::json& document);

// The power sampled during an evaluation: {"kernel": {watts, gflops_per_watt, temperature_c},
// "reference": ...}, or null where the device reports none.
nlohmann::json power_json(const Evaluation& e);

// Adds constraints given as expressions (--constraint, and a file with one per line, `#` comments)
// to `space`. A malformed expression or an unknown parameter name is a UsageError naming where it
// came from.
void add_user_constraints(SearchSpace& space, const std::vector<std::string>& expressions, const std::string& file);

}  // namespace gemmlab::cli
