// The kernel interface every backend's kernels implement, and the reference-library interface.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gemmlab/device.hpp"
#include "gemmlab/problem.hpp"
#include "gemmlab/space.hpp"

namespace gemmlab {

// Device addresses of the three operands, in the problem's precision.
struct Operands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
};

// Thrown by Kernel::prepare when the device cannot run the kernel (see Kernel::supported).
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Support {
  bool ok = true;
  std::string reason;  // why not, when !ok
};

// A kernel bound to one device, problem and configuration: compiled / instantiated, ready to run.
class Executable {
 public:
  virtual ~Executable() = default;
  // Computes C = alpha*A*B + beta*C; may return before the device finishes (Device::synchronize).
  virtual void run(const Operands& operands) = 0;
};

// What compiling one configuration for one target gave (kernels compiled at run time).
struct CompileReport {
  std::string target;             // "sm_90a", "gfx90a"
  int registers = 0;              // per thread (AMD: VGPRs per lane)
  std::int64_t shared_bytes = 0;  // static + dynamic shared memory (LDS) per block
  std::int64_t shared_limit = 0;  // the most the target allows per block
  std::int64_t spill_bytes = 0;   // spill stores + loads (AMD: scratch bytes per lane)
  std::int64_t stack_bytes = 0;
  int scalar_registers = 0;        // AMD: SGPRs per wave
  int accumulation_registers = 0;  // AMD CDNA: AGPRs per lane
  // Where the listing is read (AMD): matrix-core instructions by mnemonic, and all instructions by
  // class ("valu", "lds", "global_memory", ...).
  std::map<std::string, int> matrix_instructions = {};
  std::map<std::string, int> instruction_classes = {};
  std::string log;                // the compiler's report
};

// A target a run-time-compiled kernel can be compiled for with no such device present, with
// the device description (datasheet limits) its space is built from.
struct CompileTarget {
  std::string name;  // "sm_90a"
  DeviceInfo device;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual std::string_view name() const = 0;     // "05_packed_avx512"
  virtual std::string_view backend() const = 0;  // "cpu"
  virtual std::string_view summary() const = 0;  // the one idea it adds
  virtual std::vector<Precision> precisions() const = 0;
  // Whether this device can run it at all (instruction sets, architecture); never crashes.
  virtual Support supported(const DeviceInfo& device) const = 0;
  // Tunable parameters and constraints; values may depend on the device (cores, caches) and on
  // the precision (vector lanes).
  virtual SearchSpace space(const DeviceInfo& device, Precision precision) const = 0;
  virtual Config default_config(const DeviceInfo& device, Precision precision) const = 0;
  // Builds the kernel for a checked configuration. Throws ConfigError for a configuration it
  // cannot build, std::invalid_argument for an unsupported problem.
  virtual std::unique_ptr<Executable> prepare(Device& device, const Problem& problem,
                                              const Config& config) const = 0;
  // A hash of everything that decides what the built kernel does and how fast: its source, the
  // shared code it includes, the compiler and options. Results cached under one hash are never
  // reused for another.
  virtual std::string source_hash() const = 0;
  // Does ahead of time, and on any thread, the slow part of prepare() for a configuration that is
  // likely to be prepared soon (compiling it), so that the tuner can overlap it with timing
  // another one. Failures are left for prepare() to report. Kernels built ahead of time: nothing.
  virtual void prepare_ahead(const DeviceInfo&, Precision, const Config&) const {}
  // Whether prepare() compiles (so prepare_ahead is worth threads): kernels with compile targets
  // (CUDA), and those a device's driver builds (OpenCL).
  virtual bool builds_at_run_time() const { return !compile_targets().empty(); }
  // Kernels compiled at run time (CUDA, ...) can be compiled without a device: the targets, and
  // compile_only(), which throws ConfigError (with the compiler's log) for a configuration that
  // does not compile. Kernels compiled ahead of time have no targets.
  virtual std::vector<CompileTarget> compile_targets() const { return {}; }
  virtual CompileReport compile_only(const CompileTarget& target, Precision precision, const Config& config) const;
  // Kernels whose default configurations the build compiles for every compile target (HIP): their
  // listing in `gemmlab kernels` includes what compiling them gave (registers, LDS, instructions).
  virtual bool compiled_ahead_of_time() const { return false; }
  bool supports(Precision p) const;

 protected:
  // The checks a prepare() starts with: the device can run the kernel (else Unsupported), the
  // problem is valid, and the kernel has its precision (else std::invalid_argument naming those
  // it has).
  void check_device_and_problem(const DeviceInfo& device, const Problem& problem) const;
};

// A vendor library computing the same GEMM on the same device, for timing comparisons.
class Reference {
 public:
  virtual ~Reference() = default;
  virtual std::string name() const = 0;     // "openblas"
  virtual std::string version() const = 0;  // library's own version / configuration string
  virtual void set_threads(int threads) = 0;
  virtual void gemm(const Problem& problem, const Operands& operands) = 0;
};

}  // namespace gemmlab
