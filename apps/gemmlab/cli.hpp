// Pieces shared by the subcommands of the `gemmlab` program.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemmlab/builtin.hpp"
#include "gemmlab/evaluate.hpp"
#include "gemmlab/setup.hpp"
#include "gemmlab/tuned.hpp"

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
void add_blas_table_command(CLI::App& app, Outcome& outcome);

// The jobs `gemmlab sweep` hands to MPI ranks (ranks::add_job_handler); every rank registers them.
void register_sweep_jobs();

// The command that starts this program as a sandboxed evaluation worker: {its own path, "worker"}.
std::vector<std::string> worker_command();

// The kernels named by --backend / --kernel ("" = all); unknown names are UsageErrors.
std::vector<const Kernel*> select_kernels(const std::string& backend, const std::string& kernel);

void print_json(const nlohmann::json& document);

// Option groups that several subcommands share, declared here once so that their names, help and
// defaults stay the same everywhere. Each binds to a struct the command keeps in its options.

// --json, "Print one JSON document".
void add_json_flag(CLI::App* cmd, bool& json);

// --m, --n, --k (required).
void add_shape_options(CLI::App* cmd, std::int64_t& m, std::int64_t& n, std::int64_t& k);

// One kernel on one problem (run, tune): --backend, --kernel, --m/--n/--k and --precision are
// options of both; alpha, beta and the leading dimensions only of `run` (0: packed).
struct ProblemOptions {
  std::string backend = "cpu", kernel, precision;
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  double alpha = 1.0, beta = 0.0;
};
void add_problem_options(CLI::App* cmd, ProblemOptions& o);

// The problem `o` describes, in --precision, else in the kernel's default one on `device`; checked
// (validate) and runnable by the kernel there (require_runs).
Problem checked_problem(const ProblemOptions& o, const Kernel& kernel, const DeviceInfo& device);

// The kernel's search space for `precision` on `device`; a UsageError when nothing in it is valid.
SearchSpace valid_space(const Kernel& kernel, const DeviceInfo& device, Precision precision);

// --threads, --reference and --device into the options the evaluation is opened with; the help of
// --threads and --reference differs by command (what else the threads decide, the default reference).
void add_setup_options(CLI::App* cmd, SetupOptions& setup, const std::string& threads_help,
                       const std::string& reference_help);
// --flush-cache, apart from the others since the commands list it elsewhere.
void add_flush_cache_flag(CLI::App* cmd, SetupOptions& setup);

// --cache FILE and --no-cache; what the cache is for (read, or read and extended) differs by
// command, and so does their help.
struct CacheOptions {
  std::string path;
  bool disabled = false;
};
void add_cache_options(CLI::App* cmd, CacheOptions& cache, const std::string& cache_help,
                       const std::string& no_cache_help);
// A UsageError when both are given.
void check_cache_options(const CacheOptions& cache);

// The results cache a command reads tuned configurations from (--cache FILE, else the default one;
// none with --no-cache or when the default file does not exist). A bad file is a UsageError.
std::optional<ResultsCache> open_lookup_cache(const CacheOptions& cache);

// "  ignored the cached configuration {…} tuned for MxNxK: why" lines, for text output.
void print_ignored(const std::vector<IgnoredConfig>& ignored);

// Adds constraints given as expressions (--constraint, and a file with one per line, `#` comments)
// to `space`; they may use the kernel's named values as well as its parameters. A malformed
// expression or an unknown name is a UsageError naming where it came from.
void add_user_constraints(SearchSpace& space, const std::vector<std::string>& expressions, const std::string& file);

}  // namespace gemmlab::cli
