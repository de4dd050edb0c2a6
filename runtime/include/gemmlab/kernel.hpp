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
  // CUDA: the PTX's instruction forms, as the PTX simulator decodes them for a simulated device
  // (Program::forms): a form the simulator lacks fails the compile check.
  std::map<std::string, int> ptx_forms = {};
  std::string log;                // the compiler's report
};

// A target a run-time-compiled kernel can be compiled for with no such device present, with
// the device description (datasheet limits) its space is built from.
struct CompileTarget {
  std::string name;  // "sm_90a"
  DeviceInfo device;
};

// What every kernel states about itself, whatever its backend: the kernel base holds it once.
struct KernelDescription {
  std::string name;      // "05_packed_avx512"
  std::string backend;   // "cpu"
  std::string summary;   // the one idea it adds over the step before
  std::vector<Precision> precisions;
  // The SHA-256 of its embedded source file with the shared code it is built with (see
  // kernels/embedded_source.hpp): the results cache's key for the kernel's code.
  std::string source_sha256;
};

// How a kernel's code becomes machine code.
enum class Compilation {
  with_program,  // compiled with gemmlab itself (CPU, Kokkos) or a simulator's model (systolic)
  at_run_time,   // prepare() compiles it (NVRTC, an OpenCL driver): prepare_ahead is worth threads
  at_run_time_and_build,  // also compiled for every target by the build (HIP): `gemmlab kernels` lists
                          // what compiling the defaults gave (registers, LDS, instructions)
};

// A kernel: the description above, plus what its backend adds (how a configuration is built and
// launched). A backend's adapter derives from it and supplies only what differs: space(),
// preferred_config() and build(), and supported() where a device of its backend may lack what a
// kernel needs; a kernel compiled at run time adds compile_targets()
// and compile_only().
class Kernel {
 public:
  explicit Kernel(KernelDescription description);
  virtual ~Kernel() = default;

  std::string_view name() const { return d_.name; }
  std::string_view backend() const { return d_.backend; }
  std::string_view summary() const { return d_.summary; }
  const std::vector<Precision>& precisions() const { return d_.precisions; }
  bool has_precision(Precision p) const;

  // Whether this device can run it at all (instruction sets, architecture); never crashes. By
  // default: any device of the kernel's backend.
  virtual Support supported(const DeviceInfo& device) const;
  // Tunable parameters and constraints; values may depend on the device (cores, caches, limits)
  // and on the precision (vector lanes, element size).
  virtual SearchSpace space(const DeviceInfo& device, Precision precision) const = 0;
  // The configuration to use when nothing was tuned: preferred_config() where the device's space
  // accepts it, else the space's nearest valid configuration (SearchSpace::nearest_valid). Throws
  // Unsupported, naming the device and the precision, when the space has no valid configuration.
  Config default_config(const DeviceInfo& device, Precision precision) const;
  // Where a search starts: default_config() first, then each of preferred_variants() made valid
  // the same way (duplicates dropped). A short search then compares the kernel's compiled
  // variants (tile shapes) instead of staying near the default's.
  std::vector<Config> starting_configs(const DeviceInfo& device, Precision precision) const;
  // Whether it takes problems with a transposed A or B (Problem::trans_a, trans_b), read in its
  // packing; by default not.
  virtual bool reads_transposed() const { return false; }
  // Checks the device (Unsupported), the problem and the precision (std::invalid_argument; a
  // transposed operand the kernel cannot read: Unsupported) and the configuration (ConfigError),
  // then builds it. A problem with M or N zero computes nothing:
  // it gets an executable that does nothing, without build().
  std::unique_ptr<Executable> prepare(Device& device, const Problem& problem, const Config& config) const;
  // A hash of everything that decides what the built kernel does and how fast: its source, the
  // shared code it includes, the compiler and options. Results cached under one hash are never
  // reused for another. By default the description's source_sha256.
  virtual std::string source_hash() const { return d_.source_sha256; }

  virtual Compilation compilation() const { return Compilation::with_program; }
  // Does ahead of time, and on any thread, the slow part of prepare() for a configuration that is
  // likely to be prepared soon (compiling it), so that the tuner can overlap it with timing
  // another one. Failures are left for prepare() to report. Kernels compiled with the program:
  // nothing.
  virtual void prepare_ahead(const DeviceInfo&, Precision, const Config&) const {}
  // Kernels compiled at run time for GPU targets can be compiled without a device: the targets,
  // and compile_only(), which throws ConfigError (with the compiler's log) for a configuration
  // that does not compile. Kernels compiled with the program have no targets.
  virtual std::vector<CompileTarget> compile_targets() const { return {}; }
  virtual CompileReport compile_only(const CompileTarget& target, Precision precision, const Config& config) const;

 protected:
  // The configuration this kernel prefers: the one its curriculum step was tuned to on a
  // development machine. It may be invalid on a smaller device (default_config falls back).
  virtual Config preferred_config(const DeviceInfo& device, Precision precision) const = 0;
  // The configurations this step prefers for its other compiled variants, where which variant
  // is fastest differs from machine to machine; by default none.
  virtual std::vector<Config> preferred_variants(const DeviceInfo&, Precision) const { return {}; }
  // Builds a configuration that satisfies space() for a valid problem with M, N >= 1 in one of
  // the kernel's precisions, on a device it supports. Throws ConfigError for a configuration it
  // cannot build, std::invalid_argument for a problem it cannot take.
  virtual std::unique_ptr<Executable> build(Device& device, const Problem& problem, const Config& config) const = 0;

 private:
  KernelDescription d_;
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
