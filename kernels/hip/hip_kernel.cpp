// A HIP kernel: its specification, compiled by hipcc for the device's target with the
// configuration's parameters as -D constants, loaded from the code object and launched.
#include "hip_kernel.hpp"

#include <algorithm>
#include <limits>
#include <mutex>
#include <utility>

#include "gemmlab/hip.hpp"

namespace gemmlab::hip {
namespace {

using cuda::Launch;

bool is_matrix_core_source(const std::string& source) { return source.ends_with(".hip"); }

class HipExecutable final : public Executable {
 public:
  HipExecutable(Device& device, const std::string& code_object, const Problem& p, const Launch& launch)
      : kernel_(load_kernel(device, code_object, "gemm")), problem_(p), launch_(launch) {}

  void run(const Operands& o) override {
    const Problem& p = problem_;
    cuda::GemmArguments arguments(p, o);
    std::vector<void*> args = arguments.pointers();
    const unsigned grid[3] = {launch_.grid.x, launch_.grid.y, launch_.grid.z};
    const unsigned block[3] = {launch_.block.x, launch_.block.y, launch_.block.z};
    kernel_->launch(grid, block, launch_.shared_bytes, args.data());
  }

 private:
  std::unique_ptr<LoadedKernel> kernel_;
  Problem problem_;
  Launch launch_;
};

class HipKernel final : public Kernel {
 public:
  explicit HipKernel(HipKernelSpec spec)
      : Kernel({.name = spec.kernel.name,
                .backend = "hip",
                .summary = spec.kernel.summary,
                .precisions = spec.kernel.precisions,
                .source_sha256 = embedded_sha256(embedded_files(), "hip", file_name(spec.source))}),
        spec_(std::move(spec)), file_(file_name(spec_.source)), source_(embedded_files().at(file_)) {}

  Support supported(const DeviceInfo& device) const override {
    if (!device.gpu || device.features.empty())
      return {false, "no HIP device here (compiled and checked only: gemmlab verify --backend hip --compile-only)"};
    if (!spec_.required_feature.empty() && !device.has_feature(spec_.required_feature))
      return {false, "needs " + spec_.required_feature + " instructions, which " + device.features.front() + " lacks"};
    return {};
  }
  // Without a device (a listing), the space on the first configured target this kernel runs on.
  SearchSpace space(const DeviceInfo& device, Precision precision) const override {
    const DeviceInfo& d = device.gpu ? device : first_target().device;
    SearchSpace s = spec_.kernel.space(*d.gpu, precision);
    // Work-groups of whole waves (64 lanes on CDNA, 32 on RDNA): a partial wave leaves lanes idle.
    // Every specification names its work-group size `threads`; those that already ask for whole
    // warps of the target's warp_size ask for this.
    if (!s.find_named_value("warp_size")) cuda::let_limits(s, *d.gpu, {cuda::Limit::warp_size});
    const std::string whole_waves = "threads % warp_size == 0";
    if (std::none_of(s.constraints().begin(), s.constraints().end(),
                     [&](const Constraint& c) { return c.text == whole_waves; }))
      s.require(whole_waves, "whole waves");
    return s;
  }
  std::string source_hash() const override {
    std::string version;
    try {
      version = hipcc_version();
    } catch (const CompileError&) {
      version = "no hipcc";
    }
    return Kernel::source_hash() + " " + version;
  }
  Compilation compilation() const override { return Compilation::at_run_time_and_build; }

  void prepare_ahead(const DeviceInfo& device, Precision precision, const Config& config) const override {
    if (!supported(device).ok || !has_precision(precision)) return;
    space(device, precision).check(config);
    compile_code_object(request(config, precision, device.features.front()));
  }

  std::vector<CompileTarget> compile_targets() const override {
    std::vector<CompileTarget> targets;
    for (const std::string& name : configured_targets()) {
      DeviceInfo d = device_info_for_target(name);
      if (supported(d).ok) targets.push_back({name, std::move(d)});
    }
    return targets;
  }

  CompileReport compile_only(const CompileTarget& target, Precision precision, const Config& config) const override {
    space(target.device, precision).check(config);
    CompiledAssembly compiled;
    try {
      compiled = compile_assembly(request(config, precision, target.name));
    } catch (const CompileError& e) {
      throw ConfigError(e.what());
    }
    const IsaReport& isa = compiled.report;
    if (!isa.known) throw ConfigError(spec_.kernel.name + ": the listing for " + target.name + " has no resource metadata");
    if (!spec_.required_instruction.empty() &&
        std::none_of(isa.matrix_instructions.begin(), isa.matrix_instructions.end(),
                     [&](const auto& i) { return i.first.starts_with(spec_.required_instruction); }))
      throw ConfigError(spec_.kernel.name + " for " + target.name + " contains no " + spec_.required_instruction +
                        " instruction");
    const GpuLimits& gpu = *target.device.gpu;
    const Launch launch = cuda::launch_of(spec_.kernel, config, Problem::packed(1024, 1024, 1024, precision), gpu);
    return {.target = target.name,
            .registers = isa.vgprs,
            .shared_bytes = isa.lds_bytes + static_cast<std::int64_t>(launch.shared_bytes),
            .shared_limit = gpu.shared_bytes_per_block,
            .spill_bytes = isa.scratch_bytes,
            .stack_bytes = 0,
            .scalar_registers = isa.sgprs,
            .accumulation_registers = isa.agprs,
            .matrix_instructions = isa.matrix_instructions,
            .instruction_classes = isa.instruction_classes,
            .log = compiled.log};
  }

 protected:
  Config preferred_config(const DeviceInfo& device, Precision precision) const override {
    const DeviceInfo& d = device.gpu ? device : first_target().device;
    return spec_.kernel.preferred_config(*d.gpu, precision);
  }
  std::unique_ptr<Executable> build(Device& device, const Problem& problem, const Config& config) const override {
    // The kernels index with 32-bit integers.
    const std::int64_t largest = std::max({problem.m * problem.lda, problem.k * problem.ldb, problem.m * problem.ldc});
    if (largest > std::numeric_limits<int>::max())
      throw std::invalid_argument(spec_.kernel.name + ": a matrix of " + std::to_string(largest) +
                                  " elements is beyond the kernels' 32-bit indices");
    std::string code_object;
    try {
      code_object = compile_code_object(request(config, problem.precision, device.info().features.front()));
    } catch (const CompileError& e) {
      throw ConfigError(e.what());
    }
    const GpuLimits& gpu = *device.info().gpu;
    return std::make_unique<HipExecutable>(device, code_object, problem, cuda::launch_of(spec_.kernel, config, problem, gpu));
  }

 private:
  static std::string file_name(const std::string& source) { return source.substr(source.find('/') + 1); }

  // The first configured target that runs this kernel, else (a build configured without one) the
  // first of the targets AMD's documentation describes here that does: a listing needs a space.
  const CompileTarget& first_target() const {
    std::call_once(first_target_once_, [this] {
      std::vector<CompileTarget> targets = compile_targets();
      for (const char* name : {"gfx90a", "gfx942", "gfx1100"})
        if (DeviceInfo d = device_info_for_target(name); supported(d).ok) targets.push_back({name, std::move(d)});
      first_target_ = targets.front();
    });
    return first_target_;
  }

  CompileRequest request(const Config& config, Precision precision, const std::string& target) const {
    CompileRequest r{.source_name = file_, .source = std::string(source_.text), .headers = {}, .options = {"-std=c++17"},
                     .target = target};
    for (const auto& [file, embedded] : embedded_files())
      if (file.ends_with(".hpp")) r.headers.emplace_back(file, embedded.text);
    for (const auto& [name, value] : config) r.options.push_back("-D" + name + "=" + std::to_string(value));
    if (is_matrix_core_source(spec_.source)) {
      r.options.push_back(precision == Precision::bf16 ? "-DBF16=1" : "-DBF16=0");
    } else {
      const std::string type = precision == Precision::fp64 ? "double" : "float";
      r.options.insert(r.options.end(), {"-DTA=" + type, "-DTC=" + type, "-include", "hip_portability.hpp"});
    }
    return r;
  }

  HipKernelSpec spec_;
  std::string file_;
  EmbeddedSource source_;
  mutable std::once_flag first_target_once_;
  mutable CompileTarget first_target_;
};

}  // namespace

std::unique_ptr<Kernel> make_hip_kernel(HipKernelSpec spec) { return std::make_unique<HipKernel>(std::move(spec)); }

}  // namespace gemmlab::hip
