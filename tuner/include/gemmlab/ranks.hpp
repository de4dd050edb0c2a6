// Tuning on MPI ranks: `mpirun -np N gemmlab tune ...` (or `srun`) spreads the evaluations of one
// search over N processes, each evaluating on its own device in its own sandboxed worker.
//
// Roles. Rank 0 runs the command as a plain process would: it parses the options, runs the
// search strategy and owns the results cache, committing each result as it arrives. Its
// ConfigurationRunner is a RankRunner with one slot per rank: its own sandboxed worker (rank 0
// evaluates too: proposing and committing take milliseconds per evaluation, and a rank that
// only coordinated would leave a device idle) and every other rank. The other ranks never parse
// the command line: they serve rank 0 (serve_rank) until it tells them to stop.
//
// Messages (tags below), each one JSON document:
//   setup  0 -> r  a WorkerSetup; r opens its device (GPUs: by local rank) and starts its worker
//   ready  r -> 0  {"fingerprint": ..., "device": ...} or {"error": why}
//   job    0 -> r  {"ticket": t, "job": {"kind": "evaluate", "config": {...}, "abort_above_s": x,
//                  "timeout_s": y}} or a job of a registered kind (add_job_handler)
//   result r -> 0  {"ticket": t, "answer": {"result": ConfigResult, "wall_s": w}} or the handler's
//   alive  r -> 0  {} every second while r sets up or evaluates
//   stop   0 -> r  {} (sent by every rank 0 on its way out, whatever the command did)
//
// Devices. Every rank must hold the same device (fingerprint): a search mixing timings of
// different devices finds nothing meaningful, so rank 0 stops with an error naming the ranks and
// their devices. (Tune different devices in different runs.) GPUs are chosen by local rank, CPU
// ranks get their share of the node's cores (pin_to_share), simulated devices run anywhere.
//
// Failures. A rank silent for rank_silence_s while it owes an answer is taken for dead: its
// configuration is submitted again, once, to another slot, and the run goes on with the ranks
// left. Open MPI 4.1 has no fault-tolerant communicators: by default mpirun ends the whole job
// when any rank dies (every result committed so far is kept; running the command again resumes
// from the cache); `mpirun --enable-recovery` keeps the others running, which this needs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gemmlab/registry.hpp"
#include "gemmlab/tune.hpp"
#include "gemmlab/worker.hpp"

namespace gemmlab::ranks {

// This process's place among the ranks: rank 0 of 1 without MPI.
struct World {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;  // among the ranks on this node
};
const World& world();

// Starts MPI when an MPI launcher (mpirun, srun) started this process with others; else
// nothing, and the program runs as one plain process. Ends MPI when destroyed; on rank 0 it first
// tells every other rank to stop.
class Session {
 public:
  Session(int& argc, char**& argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

// CPU ranks on one node split its cores: unless the launcher bound this rank already (its CPU
// affinity is narrower than the node), rank i of L on a node of C cores is pinned to cores
// [i * C / L, (i + 1) * C / L) (one core each, shared in turn, when L > C). The CPU device then
// reports those cores, so the kernels' and the reference's thread counts stay within them.
// Returns the number of cores this rank may use.
int pin_to_share();

// The device index this rank uses when `asked` is asked for: GPUs in turn by local rank, starting
// at `asked`; devices in host memory (CPU, simulators) as asked.
int device_index(const std::vector<DeviceInfo>& devices, int asked);

// Seconds without a message from a rank that owes an answer before it is taken for dead.
constexpr double rank_silence_s = 10.0;

// Ranks > 0: serve rank 0 until it says stop. `worker_command` starts the sandboxed worker
// (argv). Returns the process's exit status.
int serve_rank(const Registry& registry, const std::vector<std::string>& worker_command);

// Jobs of other kinds (gemmlab sweep's rows of one kernel, ...): a handler turns a job, a JSON
// object with its "kind", into its answer. Every rank registers the same handlers (the program
// does, before it parses its command line), so rank 0 can hand any rank any job.
using JobHandler = std::function<nlohmann::json(const nlohmann::json& job)>;
void add_job_handler(const std::string& kind, JobHandler handler);

// Rank 0: runs `jobs` on every rank, rank 0 included (one process: here, in order), and returns
// their answers in the jobs' order; a handler's exception, or a job lost with its rank twice,
// answers {"error": why}. A rank runs one job at a time.
std::vector<nlohmann::json> run_jobs(const std::vector<nlohmann::json>& jobs);

// Rank 0: a runner over every rank: `local` (this rank's own runner) and ranks 1..size-1, which
// are sent `setup`. Throws ConfigError when a rank holds another device than `fingerprint` (the
// message names each rank's device) and std::runtime_error when a rank cannot set up. With one
// rank, returns `local` itself.
std::unique_ptr<ConfigurationRunner> make_rank_runner(std::unique_ptr<ConfigurationRunner> local,
                                                      const WorkerSetup& setup, const std::string& fingerprint);

}  // namespace gemmlab::ranks
