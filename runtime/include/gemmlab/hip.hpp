// The HIP backend (AMD GPUs). Kernels are compiled by hipcc: ahead of time, at their default
// configurations, for a list of targets (GEMMLAB_HIP_TARGETS: CDNA gfx90a/gfx942, RDNA3 gfx1100),
// and at run time for the configurations a tuning tries. They run through the HIP runtime,
// opened with dlopen (libamdhip64), so a machine without ROCm simply has no HIP devices; rocBLAS,
// also opened at run time, is the reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gemmlab/registry.hpp"

namespace gemmlab::hip {

std::unique_ptr<Backend> make_backend();

// What the assembly listing of one compiled kernel says (its code object metadata and body).
struct IsaReport {
  bool known = false;  // false when the listing has no resource metadata
  int vgprs = 0;       // vector registers per lane
  int agprs = 0;       // accumulation registers per lane (CDNA: MFMA results)
  int sgprs = 0;       // scalar registers per wave
  std::int64_t lds_bytes = 0;      // group segment: LDS per work-group
  std::int64_t scratch_bytes = 0;  // private segment: scratch per work-item (spills, stack arrays)
  int wavefront_size = 0;
  // Matrix-core instructions by mnemonic ("v_mfma_f32_32x32x8f16" -> 4), and every instruction
  // of the body by class: "matrix", "valu", "salu", "lds", "global_memory", "scalar_memory",
  // "branch", "wait" (s_waitcnt), "other".
  std::map<std::string, int> matrix_instructions;
  std::map<std::string, int> instruction_classes;
};
IsaReport parse_isa(const std::string& assembly);

struct CompileRequest {
  std::string source_name;  // "09_mfma.hip", for messages and the file hipcc reads
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;  // (file name, text) the source includes
  std::vector<std::string> options;  // "-DWAVES_M=2", "-include", "hip_portability.hpp", ...
  std::string target;                // "gfx90a"
};

// Thrown when hipcc rejects a program; what() holds its output.
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CompiledAssembly {
  std::string assembly;  // the device code's listing (-S)
  IsaReport report;
  std::string log;  // hipcc's diagnostics
};

// The listing, for checks without a device; and the code object (--genco), for running. Both are
// cached (module_cache: $XDG_CACHE_HOME/gemmlab/hip-modules) under the source, headers, options,
// target and hipcc's version. Thread-safe.
CompiledAssembly compile_assembly(const CompileRequest& request);
std::string compile_code_object(const CompileRequest& request);

// $GEMMLAB_HIPCC, else the hipcc found when gemmlab was built.
std::string hipcc_path();
// hipcc's "HIP version" and clang lines; throws CompileError when hipcc cannot be run.
std::string hipcc_version();
// The targets kernels are compiled for ahead of time (GEMMLAB_HIP_TARGETS at build time, with the
// names this hipcc knows: gfx940 stands in for gfx942 on hipcc 5.2).
std::vector<std::string> configured_targets();

// A device description for a target from the datasheet catalogue's AMD part for it (gpu_part:
// wave size, LDS, registers, compute units, clock), for building and checking kernel spaces
// without a device. Throws std::invalid_argument for a target it does not describe.
DeviceInfo device_info_for_target(const std::string& target);

// A kernel loaded from a code object on an opened HIP device, launched on its stream.
class LoadedKernel {
 public:
  virtual ~LoadedKernel() = default;
  virtual void launch(const unsigned grid[3], const unsigned block[3], std::size_t shared_bytes,
                      void** arguments) = 0;
};
// Throws std::invalid_argument when `device` is not a HIP device.
std::unique_ptr<LoadedKernel> load_kernel(Device& device, const std::string& code_object,
                                          const std::string& function);

}  // namespace gemmlab::hip
