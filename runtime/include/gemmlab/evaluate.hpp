// Evaluating one kernel configuration on one problem: prepare, run once, validate against the
// fp64 reference, then time it and the vendor reference on the same device buffers. The CLI, the
// tests and the tuner all go through this one routine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gemmlab/kernel.hpp"
#include "gemmlab/machine_load.hpp"
#include "gemmlab/measure.hpp"
#include "gemmlab/validate.hpp"

namespace gemmlab {

struct EvaluationOptions {
  std::uint64_t seed = 42;
  bool time = true;              // time the kernel (when valid) and the reference
  MeasureOptions measure;
  // Early abort: when > 0, the kernel is timed once first, and if that run takes longer than
  // this many seconds it is not measured further (Evaluation::aborted).
  double abort_above_s = 0;
};

struct Timing {
  Measurement measurement;
  double gflops = 0;  // from the median
  // Sampled between the timed runs where the device reports power (median watts, hottest reading).
  std::optional<double> watts, temperature_c;
  std::optional<double> gflops_per_watt() const {
    return watts && *watts > 0 ? std::optional<double>(gflops / *watts) : std::nullopt;
  }
};

// The memory one evaluation used: the operands (A, B and C on the device) and what the kernel
// itself touched beyond them while it was prepared and first run (packed panels, staged copies,
// its threads' stacks), measured as the growth of this process's peak resident memory where the
// device's buffers are host memory; unknown elsewhere.
struct Footprint {
  std::int64_t operands_bytes = 0;
  std::optional<std::int64_t> workspace_bytes;
};

struct Evaluation {
  ValidationResult validation;
  std::optional<Timing> kernel;
  std::optional<Timing> reference;
  std::string reference_name;
  double ratio_to_reference = 0;  // kernel GFLOP/s / reference GFLOP/s
  bool aborted = false;           // stopped after one timed run (abort_above_s); kernel holds it
  Footprint memory;
  std::optional<MachineLoad> load;  // what else ran while the kernel and reference were timed
};

// Evaluates configurations of kernels on one problem. The operands are made from the seed and
// uploaded once, the fp64 truth is computed once (at the first check), and C is restored to its
// initial, poisoned contents before every configuration: evaluating many configurations (the
// tuner) costs one truth computation, not one per configuration.
class Evaluator {
 public:
  // `truth_fp64` computes the fp64 expected result on the host (null: plain loops).
  Evaluator(Device& device, const Problem& problem, Reference* truth_fp64, std::uint64_t seed);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  const Problem& problem() const { return host_.problem(); }
  // Prepares `config`, runs it once and validates it; if valid and options.time, times it — and
  // `timed_reference` (null: none) in alternation with it. Throws ConfigError / Unsupported /
  // std::invalid_argument for what the kernel rejects.
  Evaluation run(const Kernel& kernel, const Config& config, Reference* timed_reference,
                 const EvaluationOptions& options);
  // Evaluates several configurations (of one kernel or several) on this problem at once: each is
  // prepared, run once and validated as by run(); then the valid ones and `timed_reference` (null:
  // none) are timed together, in turn (measure_round_robin), so that every evaluation's ratio is
  // to the same reference measurement, taken in alternation with each of them: the reference's
  // speed cannot depend on which kernel it was timed beside. A candidate the kernel rejects
  // comes back invalid with the reason; one whose first run took longer than
  // options.abort_above_s is timed by that run alone (aborted).
  std::vector<Evaluation> run_together(const std::vector<std::pair<const Kernel*, Config>>& candidates,
                                       Reference* timed_reference, const EvaluationOptions& options);
  // Times the reference alone on the same operands.
  Timing time_reference(Reference& reference, const MeasureOptions& options);
  // Times several configurations (of one kernel or several), each prepared once, in alternating
  // blocks on the same operands (measure_round_robin): to choose among close finalists on a
  // machine whose speed drifts. They are not validated here: the caller has evaluated them.
  std::vector<Timing> time_together(const std::vector<std::pair<const Kernel*, Config>>& candidates,
                                    const MeasureOptions& options);
  // Computes the fp64 truth now rather than at the first check (once; later calls do nothing),
  // so that the first configuration's evaluation time is the configuration's alone.
  void compute_truth();

 private:
  struct DeviceOperands;
  // A configuration prepared, run once and validated: its executable, its evaluation so far (the
  // validation and the memory footprint) and the wall time of that first run.
  struct Checked {
    std::unique_ptr<Executable> executable;
    Evaluation evaluation;
    double first_run_s = 0;
  };
  Checked prepare_and_check(const Kernel& kernel, const Config& config);
  Device& device_;
  Reference* truth_;
  HostCase host_;
  std::unique_ptr<DeviceOperands> operands_;
  bool expected_ready_ = false;
};

// One configuration on one problem: Evaluator(device, problem, truth, options.seed).run(...).
Evaluation evaluate(Device& device, const Kernel& kernel, const Config& config,
                    const Problem& problem, Reference* truth_fp64, Reference* timed_reference,
                    const EvaluationOptions& options = {});

double gflops(const Problem& problem, double seconds);

}  // namespace gemmlab
