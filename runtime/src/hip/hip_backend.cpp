// The HIP backend: devices from the HIP runtime (libamdhip64, opened with dlopen: without ROCm
// there are no HIP devices and nothing else changes), memory, copies, timing with events, kernels
// loaded from code objects, and rocBLAS as the reference (also opened at run time).
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>

#include <array>
#include <stdexcept>
#include <string>

#include "gemmlab/hip.hpp"
#include "gemmlab/kernel.hpp"
#include "shared_library.hpp"

#ifndef GEMMLAB_ROCBLAS_LIBRARY
#define GEMMLAB_ROCBLAS_LIBRARY "librocblas.so"
#endif

namespace gemmlab::hip {
namespace {

// The runtime's entry points, typed by the headers this program was built with; only a library of
// the same major version is opened, so the structures match.
struct Runtime {
  void* library = nullptr;
  std::string missing;  // why there is no runtime, when library == nullptr
  decltype(&hipGetDeviceCount) get_device_count = nullptr;
  decltype(&hipGetDeviceProperties) get_device_properties = nullptr;
  decltype(&hipSetDevice) set_device = nullptr;
  hipError_t (*malloc)(void**, std::size_t) = nullptr;  // spelled out: hipMalloc is also a template
  decltype(&hipFree) free = nullptr;
  decltype(&hipMemcpy) memcpy = nullptr;
  decltype(&hipDeviceSynchronize) synchronize = nullptr;
  decltype(&hipEventCreate) event_create = nullptr;
  decltype(&hipEventDestroy) event_destroy = nullptr;
  decltype(&hipEventRecord) event_record = nullptr;
  decltype(&hipEventSynchronize) event_synchronize = nullptr;
  decltype(&hipEventElapsedTime) event_elapsed = nullptr;
  decltype(&hipGetErrorString) error_string = nullptr;
  decltype(&hipModuleLoadData) module_load = nullptr;
  decltype(&hipModuleUnload) module_unload = nullptr;
  decltype(&hipModuleGetFunction) module_get_function = nullptr;
  decltype(&hipModuleLaunchKernel) launch_kernel = nullptr;
  decltype(&hipRuntimeGetVersion) runtime_version = nullptr;

  static const Runtime& get() {
    static const Runtime runtime = open();
    return runtime;
  }

 private:
  static Runtime open() {
    Runtime r;
    const std::string file = "libamdhip64.so." + std::to_string(HIP_VERSION_MAJOR);
    r.library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (r.library == nullptr) {
      r.missing = file + " not found (no ROCm " + std::to_string(HIP_VERSION_MAJOR) + " runtime)";
      return r;
    }
    bool complete = true;
    auto load = [&](auto& f, const char* symbol) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(r.library, symbol));
      complete = complete && f != nullptr;
    };
    load(r.get_device_count, "hipGetDeviceCount");
    load(r.get_device_properties, "hipGetDeviceProperties");
    load(r.set_device, "hipSetDevice");
    load(r.malloc, "hipMalloc");
    load(r.free, "hipFree");
    load(r.memcpy, "hipMemcpy");
    load(r.synchronize, "hipDeviceSynchronize");
    load(r.event_create, "hipEventCreate");
    load(r.event_destroy, "hipEventDestroy");
    load(r.event_record, "hipEventRecord");
    load(r.event_synchronize, "hipEventSynchronize");
    load(r.event_elapsed, "hipEventElapsedTime");
    load(r.error_string, "hipGetErrorString");
    load(r.module_load, "hipModuleLoadData");
    load(r.module_unload, "hipModuleUnload");
    load(r.module_get_function, "hipModuleGetFunction");
    load(r.launch_kernel, "hipModuleLaunchKernel");
    load(r.runtime_version, "hipRuntimeGetVersion");
    if (!complete) {
      r.missing = file + " lacks entry points this program uses";
      r.library = nullptr;
    }
    return r;
  }
};

void check(hipError_t result, const std::string& what) {
  if (result != hipSuccess)
    throw std::runtime_error("HIP: " + what + ": " + Runtime::get().error_string(result));
}

// "gfx90a:sramecc+:xnack-" -> "gfx90a"
std::string base_target(const std::string& arch) { return arch.substr(0, arch.find(':')); }

DeviceInfo describe(int index) {
  const Runtime& rt = Runtime::get();
  hipDeviceProp_t p{};
  check(rt.get_device_properties(&p, index), "hipGetDeviceProperties");
  const std::string target = base_target(p.gcnArchName);
  DeviceInfo d;
  try {
    d = device_info_for_target(target);  // wave size, features, register file
  } catch (const std::invalid_argument&) {
    d.features = {target, p.warpSize == 64 ? "wave64" : "wave32"};
    d.gpu = GpuLimits{};
  }
  const double datasheet_clock = d.clock_ghz;
  d.backend = "hip";
  d.index = index;
  d.name = p.name;
  d.vendor = "AMD";
  d.cores = p.multiProcessorCount;
  d.clock_ghz = p.clockRate * 1e-6;
  if (datasheet_clock > 0) {  // the datasheet's peak, scaled to this part's units and clock
    d.peak_gflops_fp32 *= d.clock_ghz * d.cores / (datasheet_clock * d.gpu->multiprocessors);
    d.peak_gflops_fp64 *= d.clock_ghz * d.cores / (datasheet_clock * d.gpu->multiprocessors);
  }
  d.caches = {{.level = 2, .type = "Unified", .size_bytes = p.l2CacheSize, .shared_by_cores = d.cores}};
  d.gpu->multiprocessors = p.multiProcessorCount;
  d.gpu->warp_size = p.warpSize;
  d.gpu->max_threads_per_block = p.maxThreadsPerBlock;
  d.gpu->shared_bytes_per_block = static_cast<std::int64_t>(p.sharedMemPerBlock);
  d.gpu->shared_bytes_per_block_optin = static_cast<std::int64_t>(p.sharedMemPerBlock);
  d.gpu->l2_bytes = p.l2CacheSize;
  return d;
}

std::unique_ptr<DeviceBuffer> allocate_gpu_memory(std::size_t bytes) {
  void* data = nullptr;
  if (bytes > 0) check(Runtime::get().malloc(&data, bytes), "hipMalloc of " + std::to_string(bytes) + " bytes");
  return std::make_unique<OwnedDeviceBuffer>(data, bytes, [](void* p) { (void)Runtime::get().free(p); });
}

class HipDevice final : public Device {
 public:
  explicit HipDevice(int index) : info_(describe(index)) {
    const Runtime& rt = Runtime::get();
    check(rt.set_device(index), "hipSetDevice");
    check(rt.event_create(&start_), "hipEventCreate");
    check(rt.event_create(&stop_), "hipEventCreate");
  }
  ~HipDevice() override {
    (void)Runtime::get().event_destroy(start_);
    (void)Runtime::get().event_destroy(stop_);
  }
  HipDevice(const HipDevice&) = delete;
  HipDevice& operator=(const HipDevice&) = delete;

  const DeviceInfo& info() const override { return info_; }
  std::unique_ptr<DeviceBuffer> allocate(std::size_t bytes) override { return allocate_gpu_memory(bytes); }
  void upload(DeviceBuffer& dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) check(Runtime::get().memcpy(dst.data(), src, bytes, hipMemcpyHostToDevice), "hipMemcpy to the device");
  }
  void download(void* dst, DeviceBuffer& src, std::size_t bytes) override {
    if (bytes > 0)
      check(Runtime::get().memcpy(dst, src.data(), bytes, hipMemcpyDeviceToHost), "hipMemcpy from the device");
  }
  void synchronize() override { check(Runtime::get().synchronize(), "hipDeviceSynchronize (a kernel failed)"); }
  // The work `launch` queues on the null stream, between two events.
  double time_once(const std::function<void()>& launch) override {
    const Runtime& rt = Runtime::get();
    check(rt.event_record(start_, nullptr), "hipEventRecord");
    launch();
    check(rt.event_record(stop_, nullptr), "hipEventRecord");
    check(rt.event_synchronize(stop_), "hipEventSynchronize (a kernel failed)");
    float ms = 0;
    check(rt.event_elapsed(&ms, start_, stop_), "hipEventElapsedTime");
    return ms * 1e-3;
  }
  void measure_ceilings() override {}  // not measured on AMD GPUs: the datasheet peak stands

 private:
  DeviceInfo info_;
  hipEvent_t start_ = nullptr, stop_ = nullptr;
};

class HipModuleKernel final : public LoadedKernel {
 public:
  HipModuleKernel(const std::string& code_object, const std::string& function) {
    const Runtime& rt = Runtime::get();
    check(rt.module_load(&module_, code_object.data()), "hipModuleLoadData");
    check(rt.module_get_function(&function_, module_, function.c_str()), "hipModuleGetFunction(" + function + ")");
  }
  ~HipModuleKernel() override {
    if (module_ != nullptr) (void)Runtime::get().module_unload(module_);
  }
  HipModuleKernel(const HipModuleKernel&) = delete;
  HipModuleKernel& operator=(const HipModuleKernel&) = delete;

  void launch(const unsigned grid[3], const unsigned block[3], std::size_t shared_bytes, void** arguments) override {
    check(Runtime::get().launch_kernel(function_, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                       static_cast<unsigned>(shared_bytes), nullptr, arguments, nullptr),
          "hipModuleLaunchKernel");
  }

 private:
  hipModule_t module_ = nullptr;
  hipFunction_t function_ = nullptr;
};

// rocBLAS through dlopen, by its C interface (the values of its enumerations are part of that
// interface). Row-major C = A * B is column-major C^T = B^T * A^T: every call passes (N, M, K)
// and B before A.
class Rocblas final : public Reference {
 public:
  Rocblas()
      : library_({GEMMLAB_ROCBLAS_LIBRARY, "librocblas.so.4", "librocblas.so.3", "librocblas.so"}, "rocBLAS",
                 "rocBLAS not found (librocblas.so): install ROCm's rocBLAS") {
    library_.load(create_, "rocblas_create_handle");
    library_.load(destroy_, "rocblas_destroy_handle");
    library_.load(sgemm_, "rocblas_sgemm");
    library_.load(dgemm_, "rocblas_dgemm");
    library_.load(gemm_ex_, "rocblas_gemm_ex");
    library_.load(version_string_, "rocblas_get_version_string");
    if (create_(&handle_) != 0) throw std::runtime_error("rocblas_create_handle failed");
  }
  ~Rocblas() override {
    if (handle_ != nullptr) destroy_(handle_);
  }
  Rocblas(const Rocblas&) = delete;
  Rocblas& operator=(const Rocblas&) = delete;

  std::string name() const override { return "rocblas"; }
  std::string version() const override {
    std::array<char, 128> text{};
    version_string_(text.data(), text.size());
    return "rocBLAS " + std::string(text.data());
  }
  void set_threads(int) override {}
  void gemm(const Problem& p, const Operands& o) override {
    require_untransposed(p, name());
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    const int lda = static_cast<int>(p.lda), ldb = static_cast<int>(p.ldb), ldc = static_cast<int>(p.ldc);
    int status = 0;
    if (p.precision == Precision::fp32) {
      const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
      status = sgemm_(handle_, operation_none, operation_none, n, m, k, &alpha, o.b, ldb, o.a, lda, &beta, o.c, ldc);
    } else if (p.precision == Precision::fp64) {
      const double alpha = p.alpha, beta = p.beta;
      status = dgemm_(handle_, operation_none, operation_none, n, m, k, &alpha, o.b, ldb, o.a, lda, &beta, o.c, ldc);
    } else if (p.precision == Precision::fp16 || p.precision == Precision::bf16) {
      // 16-bit inputs, fp32 output and accumulation.
      const int in = p.precision == Precision::fp16 ? datatype_f16 : datatype_bf16;
      const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
      status = gemm_ex_(handle_, operation_none, operation_none, n, m, k, &alpha, o.b, in, ldb, o.a, in, lda, &beta,
                        o.c, datatype_f32, ldc, o.c, datatype_f32, ldc, datatype_f32, gemm_algo_standard, 0, 0);
    } else {
      throw std::invalid_argument("rocblas: no " + std::string(to_string(p.precision)) + " GEMM here");
    }
    if (status != 0) throw std::runtime_error("rocblas: gemm failed with status " + std::to_string(status));
  }

 private:
  // rocblas_operation_none, rocblas_datatype_{f16,f32,bf16}_r, rocblas_gemm_algo_standard.
  static constexpr int operation_none = 111, datatype_f16 = 150, datatype_f32 = 151, datatype_bf16 = 168,
                       gemm_algo_standard = 0;
  using Handle = void*;
  SharedLibrary library_;
  Handle handle_ = nullptr;
  int (*create_)(Handle*) = nullptr;
  int (*destroy_)(Handle) = nullptr;
  int (*sgemm_)(Handle, int, int, int, int, int, const float*, const void*, int, const void*, int, const float*,
                void*, int) = nullptr;
  int (*dgemm_)(Handle, int, int, int, int, int, const double*, const void*, int, const void*, int, const double*,
                void*, int) = nullptr;
  int (*gemm_ex_)(Handle, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                  const void*, const void*, int, int, void*, int, int, int, int, std::int32_t,
                  std::uint32_t) = nullptr;
  int (*version_string_)(char*, std::size_t) = nullptr;
};

class HipBackend final : public Backend {
 public:
  std::string name() const override { return "hip"; }
  std::vector<DeviceInfo> devices() override {
    const Runtime& rt = Runtime::get();
    std::vector<DeviceInfo> list;
    int count = 0;
    if (rt.library == nullptr || rt.get_device_count(&count) != hipSuccess) return list;
    for (int i = 0; i < count; ++i) list.push_back(describe(i));
    return list;
  }
  std::unique_ptr<Device> open(int index) override {
    const auto list = devices();
    if (index < 0 || index >= static_cast<int>(list.size()))
      throw std::invalid_argument("no HIP device " + std::to_string(index) + " (" + std::to_string(list.size()) +
                                  " present" +
                                  (Runtime::get().library == nullptr ? ": " + Runtime::get().missing : "") + ")");
    return std::make_unique<HipDevice>(index);
  }
  std::vector<std::string> reference_names() const override { return {"rocblas"}; }
  std::unique_ptr<Reference> make_reference(const std::string& name, Device&) override {
    if (name != "rocblas") throw std::invalid_argument("unknown hip reference '" + name + "' (allowed: rocblas)");
    return std::make_unique<Rocblas>();
  }
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<HipBackend>(); }

std::unique_ptr<LoadedKernel> load_kernel(Device& device, const std::string& code_object, const std::string& function) {
  if (dynamic_cast<HipDevice*>(&device) == nullptr)
    throw std::invalid_argument("a HIP kernel needs a HIP device, not a " + device.info().backend + " device");
  return std::make_unique<HipModuleKernel>(code_object, function);
}

}  // namespace gemmlab::hip
