// Sandboxed evaluation: configurations run in a worker process, so that a kernel configuration
// that crashes, hangs or exhausts memory costs one failed configuration instead of the tuning run.
//
// The worker is any program whose main calls run_worker (`gemmlab worker`; the tests have one
// that also knows deliberately faulty kernels). The tuning process starts it and talks to it over
// pipes, one JSON document per line:
//   {"setup": {...WorkerSetup...}}                -> {"ready": true} | {"error": "why"}
//   {"reference": true}                           -> {"gflops": x}
//   {"evaluate": {config}, "abort_above_s": x}    -> a ConfigResult (its JSON form, result.hpp)
//   {"reference_beside": {config}}                -> {"gflops": x}  (timed in alternation with config)
// The worker answers on its standard output; anything a kernel prints there is diverted to its
// standard error, of which the tuning process keeps the last lines for the failure reasons. When
// the worker dies (a signal, an exit) or does not answer in time (it is killed), the
// configuration is recorded as failed with that reason, and the next evaluation starts a new
// worker, which makes its operands and fp64 truth again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gemmlab/measure.hpp"
#include "gemmlab/problem.hpp"
#include "gemmlab/registry.hpp"
#include "gemmlab/tune.hpp"

namespace gemmlab {

// Everything a worker needs to evaluate configurations of one kernel on one problem.
struct WorkerSetup {
  std::string backend = "cpu";
  int device = 0;
  std::string kernel;
  Problem problem;
  std::uint64_t seed = 1;
  std::string reference;  // reference library ("": none)
  int reference_threads = 0;  // 0: the device's cores
  MeasureOptions measure;
  bool flush_cache = false;  // Device::set_cache_flush before the timed runs (GPUs: L2)
  // Address-space limit of the worker (setrlimit RLIMIT_AS), so that memory exhaustion is an
  // allocation failure in the worker rather than the system's out-of-memory killer (0: none).
  // Not applied in AddressSanitizer builds, whose shadow memory needs terabytes of address space.
  std::uint64_t memory_limit_bytes = 0;
};

// The setup's JSON form: the worker's first request, and what rank 0 sends the other MPI ranks.
// worker_setup_from_json throws nlohmann::json's exceptions on a malformed document.
nlohmann::json worker_setup_json(const WorkerSetup& setup);
WorkerSetup worker_setup_from_json(const nlohmann::json& j);

// Whether WorkerSetup::memory_limit_bytes is applied in this build (not under AddressSanitizer).
bool worker_memory_limit_supported();

// The memory limit a worker evaluating on `device` gets unless told otherwise: the machine's
// physical memory where the device's memory is host memory (DeviceInfo::host_memory), none (0)
// elsewhere — GPU runtimes reserve address space far beyond physical memory.
std::uint64_t default_worker_memory_limit(const DeviceInfo& device);

// The worker's side: reads requests from `in_fd` and answers on `out_fd` until the tuning process
// closes the pipe (returns 0) or the setup fails (returns 1). Kernels and backends come from
// `registry`.
int run_worker(const Registry& registry, int in_fd, int out_fd);

// The tuning process's side: a ConfigurationRunner that runs each configuration in a worker
// started with `command` (argv; command[0] is the program's path).
class WorkerRunner final : public ConfigurationRunner {
 public:
  // Starts the first worker and waits (at most setup_timeout_s) until it has made the operands
  // and the fp64 truth. Throws std::runtime_error, with the worker's last error output, when the
  // worker cannot be started or set up.
  WorkerRunner(std::vector<std::string> command, WorkerSetup setup, double setup_timeout_s = 600);
  ~WorkerRunner() override;
  WorkerRunner(const WorkerRunner&) = delete;
  WorkerRunner& operator=(const WorkerRunner&) = delete;

  std::string reference_name() const override { return setup_.reference; }
  double reference_gflops() override;
  ConfigResult run(const Config& config, double abort_above_s, double timeout_s) override;
  double reference_gflops_beside(const Config& config, double timeout_s) override;
  std::size_t restarts() const override { return restarts_; }

 private:
  class Process;
  enum class Wait { answer, died, timed_out };
  void start();
  // Sends `request` to the worker (started first if there is none) and waits for its answer.
  Wait ask(const nlohmann::json& request, double timeout_s, nlohmann::json& answer);
  std::vector<std::string> command_;
  WorkerSetup setup_;
  double setup_timeout_s_;
  std::unique_ptr<Process> process_;
  std::size_t restarts_ = 0;
  std::optional<double> reference_gflops_;
};

}  // namespace gemmlab
