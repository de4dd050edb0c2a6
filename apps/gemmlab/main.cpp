// gemmlab: run, verify and compare hand-written GEMM kernels.
// Exit status: 0 success; 1 a kernel produced a wrong result; 2 bad input (unknown name, value
// not allowed, constraint violated, malformed option, a problem too large for memory).
#include <fmt/core.h>

#include "cli.hpp"
#include "gemmlab/ranks.hpp"
#include "gemmlab/setup.hpp"
#include "gemmlab/space.hpp"

int main(int argc, char** argv) {
  using namespace gemmlab;
  // Under mpirun or srun: rank 0 runs the command, the other ranks evaluate for it.
  const ranks::Session mpi(argc, argv);
  cli::register_sweep_jobs();
  if (ranks::world().size > 1) {
    ranks::pin_to_share();
    if (ranks::world().rank > 0) {
      try {
        return ranks::serve_rank(registry(), cli::worker_command());
      } catch (const std::exception& e) {
        fmt::print(stderr, "gemmlab: rank {}: {}\n", ranks::world().rank, e.what());
        return 1;
      }
    }
  }
  CLI::App app{"gemmlab: hand-written GEMM kernels, checked against and timed next to vendor BLAS"};
  app.require_subcommand(1);
  cli::Outcome outcome;
  cli::add_devices_command(app, outcome);
  cli::add_kernels_command(app, outcome);
  cli::add_run_command(app, outcome);
  cli::add_verify_command(app, outcome);
  cli::add_tune_command(app, outcome);
  cli::add_replay_command(app, outcome);
  cli::add_export_command(app, outcome);
  cli::add_simulate_command(app, outcome);
  cli::add_sweep_command(app, outcome);
  cli::add_report_command(app, outcome);
  cli::add_blas_table_command(app, outcome);
  cli::add_worker_command(app, outcome);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "gemmlab: {}\n", e.what());
    fmt::print(stderr, "Run with --help for the options.\n");
    return 2;
  } catch (const cli::UsageError& e) {
    fmt::print(stderr, "gemmlab: {}\n", e.what());
    return 2;
  } catch (const UnknownName& e) {
    fmt::print(stderr, "gemmlab: {}\n", e.what());
    return 2;
  } catch (const ConfigError& e) {
    fmt::print(stderr, "gemmlab: {}\n", e.what());
    return 2;
  } catch (const Unsupported& e) {
    fmt::print(stderr, "gemmlab: not supported on this device: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "gemmlab: {}\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "gemmlab: not enough memory for the operands of this problem; try smaller sizes\n");
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "gemmlab: error: {}\n", e.what());
    return 1;
  }
  return outcome.exit_status;
}
