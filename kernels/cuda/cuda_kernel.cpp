// A CUDA kernel of the curriculum: its specification, compiled by NVRTC for the device's
// architecture with the configuration's parameters as -D constants, loaded as a library and
// launched on the default stream.
#include "cuda_kernel.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "gemmlab/cuda.hpp"

namespace gemmlab::cuda {
namespace {

void check(cudaError_t result, const std::string& what) {
  if (result != cudaSuccess) throw std::runtime_error("CUDA: " + what + ": " + cudaGetErrorString(result));
}

std::string input_type(Precision p) {
  switch (p) {
    case Precision::fp64: return "double";
    case Precision::fp16: return "__half";
    case Precision::bf16: return "__nv_bfloat16";
    default: return "float";
  }
}
std::string output_type(Precision p) { return p == Precision::fp64 ? "double" : "float"; }

// cuTensorMapEncodeTiled from the driver, found through the runtime (no link to libcuda).
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encode_tiled() {
  static EncodeTiled function = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found),
          "cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled)");
    if (found != cudaDriverEntryPointSuccess || f == nullptr)
      throw std::runtime_error("the NVIDIA driver has no cuTensorMapEncodeTiled (TMA needs driver 12.0 or later)");
    return reinterpret_cast<EncodeTiled>(f);
  }();
  return function;
}

// A 2-D tensor map over a row-major rows x cols matrix with leading dimension ld (elements),
// encoded by `encode`: the driver's cuTensorMapEncodeTiled, or the simulated device's.
CUtensorMap tensor_map(EncodeTiled encode, const void* data, Precision p, std::int64_t rows, std::int64_t cols,
                       std::int64_t ld, unsigned box_rows, unsigned box_cols, bool swizzle_128b) {
  CUtensorMap map{};
  const cuuint64_t sizes[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};  // innermost first
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * element_bytes(p)};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult result = encode(
      &map, p == Precision::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
      const_cast<void*>(data), sizes, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS)
    throw std::runtime_error("cuTensorMapEncodeTiled refused an operand (error " + std::to_string(result) + ")");
  return map;
}

// Device memory for a staged copy of an operand.
class Staging {
 public:
  Staging() = default;
  explicit Staging(std::size_t bytes) {
    check(cudaMalloc(&data_, bytes), "cudaMalloc (staging for TMA)");
    check(cudaMemset(data_, 0, bytes), "cudaMemset (staging for TMA)");
  }
  ~Staging() {
    if (data_ != nullptr) cudaFree(data_);
  }
  Staging(Staging&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  Staging& operator=(Staging&& other) noexcept {
    std::swap(data_, other.data_);
    return *this;
  }
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
};

// TMA reads rows that start on 16 bytes. An operand whose leading dimension does not allow that
// (or that is empty, K = 0) is copied, as part of each run, into a buffer whose rows do: the
// kernel takes any shape, and the copy is honestly inside its timed work.
struct TmaOperand {
  std::int64_t rows = 0, cols = 0, ld = 0;  // as the kernel sees it
  std::int64_t source_ld = 0;
  bool staged = false;  // copied into a buffer of `ld` before each run

  std::size_t staged_bytes(Precision p) const { return static_cast<std::size_t>(rows * ld) * element_bytes(p); }
};

TmaOperand tma_operand(std::int64_t rows, std::int64_t cols, std::int64_t ld, Precision p) {
  const auto elem = static_cast<std::int64_t>(element_bytes(p));
  const std::int64_t per_16_bytes = 16 / elem;
  TmaOperand o{.rows = std::max<std::int64_t>(rows, 1), .cols = std::max<std::int64_t>(cols, 1), .ld = ld,
               .source_ld = ld, .staged = false};
  if (rows > 0 && cols > 0 && (ld * elem) % 16 == 0) return o;
  o.ld = (o.cols + per_16_bytes - 1) / per_16_bytes * per_16_bytes;
  o.staged = true;
  return o;
}

// The launch arguments of a TMA kernel: the contract's, pointing at the operands as TMA reads them
// (`a_data`, `b_data`: in place or staged), then the two tensor maps over them, encoded into
// `maps` by `encode` (the driver's function, or the simulated device's).
std::vector<void*> tma_arguments(GemmArguments& g, CUtensorMap (&maps)[2], const TensorMapBoxes& boxes, Precision p,
                                 const TmaOperand& a, const void* a_data, const TmaOperand& b, const void* b_data,
                                 EncodeTiled encode) {
  g.a = a_data;
  g.b = b_data;
  g.lda = static_cast<int>(a.ld);
  g.ldb = static_cast<int>(b.ld);
  maps[0] = tensor_map(encode, g.a, p, a.rows, a.cols, a.ld, boxes.a_rows, boxes.a_cols, boxes.swizzle_128b);
  maps[1] = tensor_map(encode, g.b, p, b.rows, b.cols, b.ld, boxes.b_rows, boxes.b_cols, boxes.swizzle_128b);
  std::vector<void*> args = g.pointers();
  args.push_back(&maps[0]);
  args.push_back(&maps[1]);
  return args;
}

class CudaExecutable final : public Executable {
 public:
  CudaExecutable(const CompiledModule& module, const CudaKernelSpec& spec, const Config& config, const Problem& p,
                 const Launch& launch)
      : spec_(spec), config_(config), problem_(p), launch_(launch) {
    if (spec_.tensor_maps) {
      a_ = tma_operand(p.m, p.k, p.lda, p.precision);
      b_ = tma_operand(p.k, p.n, p.ldb, p.precision);
      if (a_.staged) a_staging_ = Staging(a_.staged_bytes(p.precision));
      if (b_.staged) b_staging_ = Staging(b_.staged_bytes(p.precision));
    }
    check(cudaLibraryLoadData(&library_, module.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "cudaLibraryLoadData");
    check(cudaLibraryGetKernel(&kernel_, library_, "gemm"), "cudaLibraryGetKernel(gemm)");
    if (launch.shared_bytes > 48 * 1024)  // above the default, a kernel must opt in
      check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(launch.shared_bytes)),
            "cudaFuncSetAttribute(max dynamic shared memory)");
  }
  ~CudaExecutable() override {
    if (library_ != nullptr) cudaLibraryUnload(library_);
  }
  CudaExecutable(const CudaExecutable&) = delete;
  CudaExecutable& operator=(const CudaExecutable&) = delete;

  void run(const Operands& o) override {
    const Problem& p = problem_;
    GemmArguments g(p, o);
    CUtensorMap maps[2]{};
    std::vector<void*> args =
        spec_.tensor_maps ? tma_arguments(g, maps, spec_.tensor_maps(config_), p.precision, a_,
                                          stage(a_, a_staging_, g.a, p.m, p.k), b_, stage(b_, b_staging_, g.b, p.k, p.n),
                                          encode_tiled())
                          : g.pointers();
    const dim3 grid(launch_.grid.x, launch_.grid.y, launch_.grid.z), block(launch_.block.x, launch_.block.y, launch_.block.z);
    check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), grid, block, args.data(), launch_.shared_bytes, nullptr),
          "launching " + spec_.name);
    check(cudaGetLastError(), "launching " + spec_.name);
  }

 private:
  // The operand as the kernel reads it: in place, or copied into its staging buffer.
  const void* stage(const TmaOperand& o, const Staging& staging, const void* source, std::int64_t rows,
                    std::int64_t cols) const {
    if (!o.staged) return source;
    if (rows > 0 && cols > 0) {
      const std::size_t elem = element_bytes(problem_.precision);
      check(cudaMemcpy2DAsync(staging.data(), static_cast<std::size_t>(o.ld) * elem, source,
                              static_cast<std::size_t>(o.source_ld) * elem, static_cast<std::size_t>(cols) * elem,
                              static_cast<std::size_t>(rows), cudaMemcpyDeviceToDevice, nullptr),
            "cudaMemcpy2DAsync (staging for TMA)");
    }
    return staging.data();
  }

  const CudaKernelSpec& spec_;
  Config config_;
  Problem problem_;
  Launch launch_;
  TmaOperand a_, b_;
  Staging a_staging_, b_staging_;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
};

// The PTX of a module, decoded once for the simulator (the verification plan builds many
// executables of one configuration).
std::shared_ptr<const ptx::sim::Program> simulated_program(const CompiledModule& module) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const ptx::sim::Program>> programs;
  const std::lock_guard lock(mutex);
  auto& program = programs[module.ptx];
  if (!program) program = ptx::sim::Program::load(module.ptx, "gemm");
  return program;
}

// A configuration on a simulated device: the module's PTX run by the PTX simulator over the
// operands exactly (an access to the guard zone after C, or anywhere else, stops it).
class SimulatedExecutable final : public Executable {
 public:
  SimulatedExecutable(SimulatedDevice& device, const CompiledModule& module, const CudaKernelSpec& spec,
                      const Config& config, const Problem& p, const Launch& launch)
      : device_(device), spec_(spec), config_(config), problem_(p), launch_(launch),
        program_(simulated_program(module)), usage_(module.usage) {
    if (spec_.tensor_maps) {
      a_ = tma_operand(p.m, p.k, p.lda, p.precision);
      b_ = tma_operand(p.k, p.n, p.ldb, p.precision);
      if (a_.staged) a_staging_.assign(a_.staged_bytes(p.precision), std::byte{0});
      if (b_.staged) b_staging_.assign(b_.staged_bytes(p.precision), std::byte{0});
    }
  }

  void run(const Operands& o) override {
    const Problem& p = problem_;
    GemmArguments g(p, o);
    CUtensorMap maps[2]{};
    const std::vector<void*> pointers =
        spec_.tensor_maps
            ? tma_arguments(g, maps, spec_.tensor_maps(config_), p.precision, a_, stage(a_, a_staging_, g.a, p.m, p.k), b_,
                            stage(b_, b_staging_, g.b, p.k, p.n),
                            reinterpret_cast<EncodeTiled>(simulated_driver_entry_point("cuTensorMapEncodeTiled")))
            : g.pointers();
    ptx::sim::Launch l;
    l.grid = {launch_.grid.x, launch_.grid.y, launch_.grid.z};
    l.block = {launch_.block.x, launch_.block.y, launch_.block.z};
    l.dynamic_shared_bytes = launch_.shared_bytes;
    l.args.assign(pointers.begin(), pointers.end());
    const std::size_t in = element_bytes(p.precision), out = p.precision == Precision::fp64 ? 8 : 4;
    auto region = [](const void* data, std::uint64_t bytes, const char* name) {
      const auto begin = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(data));
      return ptx::sim::Region{.begin = begin, .end = begin + bytes, .name = name};
    };
    l.regions = {region(o.a, p.a_elements() * in, "A"), region(o.b, p.b_elements() * in, "B"),
                 region(o.c, p.c_elements() * out, "C")};
    if (a_.staged) l.regions.push_back(region(a_staging_.data(), a_staging_.size(), "A (staged for TMA)"));
    if (b_.staged) l.regions.push_back(region(b_staging_.data(), b_staging_.size(), "B (staged for TMA)"));
    l.label = spec_.name + " [" + to_string(config_) + "] on " + device_.info().name;
    l.host_threads = device_.host_threads();
    ptx::sim::Metrics counts = ptx::sim::launch(*program_, l);
    set_occupancy(counts);
    device_.record(counts);
  }

 private:
  // The operand in host memory as the kernel reads it: in place, or copied row by row into its
  // staging buffer (what cudaMemcpy2D does on a GPU).
  const void* stage(const TmaOperand& t, std::vector<std::byte>& staging, const void* source, std::int64_t rows,
                    std::int64_t cols) const {
    if (!t.staged) return source;
    const std::size_t elem = element_bytes(problem_.precision);
    for (std::int64_t r = 0; r < rows && cols > 0; ++r)
      std::memcpy(staging.data() + static_cast<std::size_t>(r * t.ld) * elem,
                  static_cast<const std::byte*>(source) + static_cast<std::size_t>(r * t.source_ld) * elem,
                  static_cast<std::size_t>(cols) * elem);
    return staging.data();
  }

  // The compiler's registers and shared memory, and the blocks (and warps) of this launch an SM of
  // the simulated chip holds at once: the least that its register file, its shared memory, its
  // 2048 resident threads and 32 resident blocks allow (CUDA C++ Programming Guide, "Technical
  // Specifications per Compute Capability", 8.0 and 9.0; registers allocated per warp in units of
  // 256).
  void set_occupancy(ptx::sim::Metrics& counts) const {
    if (!usage_.known) return;
    const GpuLimits& gpu = *device_.info().gpu;
    const std::int64_t threads = std::int64_t{launch_.block.x} * launch_.block.y * launch_.block.z;
    const std::int64_t warps = (threads + 31) / 32;
    const std::int64_t shared = usage_.shared_bytes + static_cast<std::int64_t>(launch_.shared_bytes);
    const std::int64_t registers_per_warp = (std::int64_t{usage_.registers} * 32 + 255) / 256 * 256;
    std::int64_t blocks = std::min<std::int64_t>(2048 / std::max<std::int64_t>(threads, 1), 32);
    if (registers_per_warp > 0) blocks = std::min(blocks, gpu.registers_per_sm / (registers_per_warp * warps));
    // The runtime reserves 1 KB of an SM's shared memory per resident block (same guide, 8.0/9.0).
    if (gpu.shared_bytes_per_sm > 0) blocks = std::min(blocks, gpu.shared_bytes_per_sm / (shared + 1024));
    counts.registers_per_thread = usage_.registers;
    counts.shared_bytes_per_block = shared;
    counts.blocks_per_sm = blocks;
    counts.warps_per_sm = blocks * warps;
  }

  SimulatedDevice& device_;
  const CudaKernelSpec& spec_;
  Config config_;
  Problem problem_;
  Launch launch_;
  std::shared_ptr<const ptx::sim::Program> program_;
  ResourceUsage usage_;
  TmaOperand a_, b_;
  std::vector<std::byte> a_staging_, b_staging_;
};

class CudaKernel final : public Kernel {
 public:
  explicit CudaKernel(CudaKernelSpec spec)
      : Kernel({.name = spec.name,
                .backend = "cuda",
                .summary = spec.summary,
                .precisions = spec.precisions,
                .source_sha256 = embedded_sha256(embedded_files(), "cuda", spec.name + ".cu")}),
        spec_(std::move(spec)), source_(embedded_files().at(spec_.name + ".cu")) {}

  Support supported(const DeviceInfo& device) const override {
    if (!device.gpu) return {false, "no CUDA device here (compile-checked only: gemmlab verify --compile-only)"};
    const int cc = device.gpu->compute_capability;
    if (cc < spec_.min_compute_capability)
      return {false, "needs compute capability " + std::to_string(spec_.min_compute_capability / 10) + "." +
                         std::to_string(spec_.min_compute_capability % 10) + " or later; this device has " +
                         std::to_string(cc / 10) + "." + std::to_string(cc % 10)};
    if (spec_.arch_specific && cc != spec_.min_compute_capability)
      return {false, "uses instructions of sm_" + std::to_string(spec_.min_compute_capability) + "a only (Hopper)"};
    return {};
  }
  // Without a CUDA device (a listing, a compile check), the space of the newest target.
  SearchSpace space(const DeviceInfo& device, Precision precision) const override {
    return spec_.space(limits(device), precision);
  }
  std::string source_hash() const override { return Kernel::source_hash() + " nvrtc " + nvrtc_version(); }
  Compilation compilation() const override { return Compilation::at_run_time; }

  // The compilation prepare() will need, into the module caches (memory and disk: a sandboxed
  // worker process finds it there).
  void prepare_ahead(const DeviceInfo& device, Precision precision, const Config& config) const override {
    if (!device.gpu || !supported(device).ok) return;
    space(device, precision).check(config);
    compile(request(config, precision, arch_name(device.gpu->compute_capability, spec_.arch_specific)));
  }

  std::vector<CompileTarget> compile_targets() const override {
    std::vector<CompileTarget> targets;
    for (int cc : {80, 90}) {
      if (cc < spec_.min_compute_capability || (spec_.arch_specific && cc != spec_.min_compute_capability)) continue;
      DeviceInfo d;
      d.backend = "cuda";
      d.name = arch_name(cc, spec_.arch_specific && cc == 90) + " (datasheet limits)";
      d.gpu = gpu_limits_for_arch(cc);
      targets.push_back({arch_name(cc, spec_.arch_specific || cc == 90), d});
    }
    return targets;
  }

  CompileReport compile_only(const CompileTarget& target, Precision precision, const Config& config) const override {
    const GpuLimits& gpu = *target.device.gpu;
    space(target.device, precision).check(config);
    CompiledModule module;
    try {
      module = compile(request(config, precision, target.name));
    } catch (const CompileError& e) {
      throw ConfigError(e.what());
    }
    // What the PTX simulator decodes of it (the targets are the simulated devices' architectures;
    // not kept: a compile check of a whole space decodes thousands of modules).
    std::map<std::string, int> forms;
    try {
      forms = ptx::sim::Program::load(module.ptx, "gemm")->forms();
    } catch (const ptx::sim::LaunchError& e) {
      throw ConfigError(std::string("the PTX simulator cannot run it: ") + e.what());
    }
    // The launch of a representative problem gives the dynamic shared memory.
    const Launch launch = launch_of(spec_, config, Problem::packed(1024, 1024, 1024, precision), gpu);
    return {.target = target.name,
            .registers = module.usage.registers,
            .shared_bytes = module.usage.shared_bytes + static_cast<std::int64_t>(launch.shared_bytes),
            .shared_limit = std::max(gpu.shared_bytes_per_block, gpu.shared_bytes_per_block_optin),
            .spill_bytes = module.usage.spill_store_bytes + module.usage.spill_load_bytes,
            .stack_bytes = module.usage.stack_bytes,
            .ptx_forms = std::move(forms),
            .log = module.log};
  }

 protected:
  Config preferred_config(const DeviceInfo& device, Precision precision) const override {
    return spec_.preferred_config(limits(device), precision);
  }
  std::unique_ptr<Executable> build(Device& device, const Problem& problem, const Config& config) const override {
    const GpuLimits& gpu = *device.info().gpu;
    // A simulated device is its architecture exactly (sm_90a, the compile checks' target too, so
    // the two share compiled modules).
    if (auto* simulated = dynamic_cast<SimulatedDevice*>(&device)) {
      const CompiledModule module = compile(request(config, problem.precision, simulated->arch()));
      return std::make_unique<SimulatedExecutable>(*simulated, module, spec_, config, problem,
                                                   launch_of(spec_, config, problem, gpu));
    }
    const CompiledModule module =
        compile(request(config, problem.precision, arch_name(gpu.compute_capability, spec_.arch_specific)));
    return std::make_unique<CudaExecutable>(module, spec_, config, problem, launch_of(spec_, config, problem, gpu));
  }

 private:
  static GpuLimits limits(const DeviceInfo& device) { return device.gpu ? *device.gpu : gpu_limits_for_arch(90); }

  CompileRequest request(const Config& config, Precision precision, const std::string& arch) const {
    return compile_request(spec_.name, config, precision, arch);
  }

  CudaKernelSpec spec_;
  EmbeddedSource source_;
};

}  // namespace

CompileRequest compile_request(const std::string& kernel, const Config& config, Precision precision,
                               const std::string& arch) {
  const std::string file = kernel + ".cu";
  CompileRequest r{.source_name = file, .source = std::string(embedded_files().at(file).text), .headers = {},
                   .options = {}, .arch = arch};
  for (const auto& [name, embedded] : embedded_files())
    if (name.ends_with(".cuh")) r.headers.emplace_back(name, embedded.text);
  for (const auto& [name, value] : config) r.options.push_back("-D" + name + "=" + std::to_string(value));
  r.options.push_back("-DTA=" + input_type(precision));
  r.options.push_back("-DTC=" + output_type(precision));
  return r;
}

std::unique_ptr<Kernel> make_cuda_kernel(CudaKernelSpec spec) { return std::make_unique<CudaKernel>(std::move(spec)); }

GpuLimits gpu_limits_for_arch(int compute_capability) {
  const std::string target = "sm_" + std::to_string(compute_capability);
  std::vector<int> known;
  for (const GpuPart& part : gpu_parts()) {
    if (part.limits.compute_capability == 0) continue;  // AMD
    if (std::find(part.targets.begin(), part.targets.end(), target) != part.targets.end()) return part.limits;
    known.push_back(part.limits.compute_capability);
  }
  std::sort(known.begin(), known.end());
  std::string list;
  for (int cc : known) list += (list.empty() ? "" : ", ") + std::to_string(cc);
  throw std::invalid_argument("no datasheet limits for compute capability " + std::to_string(compute_capability) +
                              "; known: " + list);
}

}  // namespace gemmlab::cuda
