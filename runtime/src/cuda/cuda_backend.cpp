// The CUDA backend: devices from the CUDA runtime, memory, copies, timing with events (and an
// optional L2 flush between timed runs), and cuBLAS as the reference, loaded with dlopen so that
// the program has no link-time dependency on it.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "gemmlab/cuda.hpp"
#include "gemmlab/kernel.hpp"
#include "nvml.hpp"
#include "shared_library.hpp"

namespace gemmlab::cuda {
namespace {

void check(cudaError_t result, const std::string& what) {
  if (result != cudaSuccess) throw std::runtime_error("CUDA: " + what + ": " + cudaGetErrorString(result));
}

// FP32 and FP64 lanes per SM by architecture (the programming guide's arithmetic throughput table).
int fp32_lanes_per_sm(int cc) { return cc == 80 || cc < 80 ? 64 : 128; }
int fp64_lanes_per_sm(int cc) { return cc == 80 || cc == 90 || cc == 100 ? (cc == 80 ? 32 : 64) : 2; }

DeviceInfo describe(int index) {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties");
  int clock_khz = 0;
  check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, index), "cudaDeviceGetAttribute(clock rate)");
  DeviceInfo d;
  d.backend = "cuda";
  d.index = index;
  d.name = p.name;
  d.vendor = "NVIDIA";
  d.cores = p.multiProcessorCount;
  d.simd_width_bits = 32 * 32;  // a warp of 32-bit lanes
  const int cc = p.major * 10 + p.minor;
  d.features = {"sm_" + std::to_string(cc)};
  d.clock_ghz = clock_khz * 1e-6;
  d.caches = {{.level = 2, .type = "Unified", .size_bytes = p.l2CacheSize, .shared_by_cores = p.multiProcessorCount}};
  d.peak_gflops_fp32 = d.cores * fp32_lanes_per_sm(cc) * 2.0 * d.clock_ghz;
  d.peak_gflops_fp64 = d.cores * fp64_lanes_per_sm(cc) * 2.0 * d.clock_ghz;
  d.gpu = GpuLimits{.compute_capability = cc,
                    .multiprocessors = p.multiProcessorCount,
                    .warp_size = p.warpSize,
                    .max_threads_per_block = p.maxThreadsPerBlock,
                    .shared_bytes_per_block = static_cast<std::int64_t>(p.sharedMemPerBlock),
                    .shared_bytes_per_block_optin = static_cast<std::int64_t>(p.sharedMemPerBlockOptin),
                    .shared_bytes_per_sm = static_cast<std::int64_t>(p.sharedMemPerMultiprocessor),
                    .registers_per_block = p.regsPerBlock,
                    .registers_per_sm = p.regsPerMultiprocessor,
                    .l2_bytes = p.l2CacheSize};
  return d;
}

std::unique_ptr<DeviceBuffer> allocate_gpu_memory(std::size_t bytes) {
  void* data = nullptr;
  if (bytes > 0) check(cudaMalloc(&data, bytes), "cudaMalloc of " + std::to_string(bytes) + " bytes");
  return std::make_unique<OwnedDeviceBuffer>(data, bytes, [](void* p) { cudaFree(p); });
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int index) : info_(describe(index)) {
    check(cudaSetDevice(index), "cudaSetDevice");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, index) == cudaSuccess) power_ = PowerMonitor::open(bus_id);
  }
  ~CudaDevice() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const DeviceInfo& info() const override { return info_; }
  std::unique_ptr<DeviceBuffer> allocate(std::size_t bytes) override { return allocate_gpu_memory(bytes); }
  void upload(DeviceBuffer& dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) check(cudaMemcpy(dst.data(), src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  }
  void download(void* dst, DeviceBuffer& src, std::size_t bytes) override {
    if (bytes > 0) check(cudaMemcpy(dst, src.data(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
  }
  void synchronize() override { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (a kernel failed)"); }

  // The work `launch` queues, timed by events on the default stream; with the L2 flush on, a
  // buffer twice the L2's size is overwritten first so no operand starts in the cache.
  double time_once(const std::function<void()>& launch) override {
    if (flush_l2_) {
      if (!flush_) flush_ = allocate_gpu_memory(2 * static_cast<std::size_t>(std::max<std::int64_t>(info_.gpu->l2_bytes, 1)));
      check(cudaMemsetAsync(flush_->data(), 0, flush_->bytes()), "cudaMemsetAsync (L2 flush)");
    }
    check(cudaEventRecord(start_), "cudaEventRecord");
    launch();
    check(cudaGetLastError(), "kernel launch");
    check(cudaEventRecord(stop_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize (a kernel failed)");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms * 1e-3;
  }
  void set_cache_flush(bool flush) override { flush_l2_ = flush; }
  std::optional<PowerReading> read_power() override {
    if (!power_) return std::nullopt;  // no NVML (no driver library) on this machine
    const auto watts = power_->watts();
    if (!watts) return std::nullopt;
    return PowerReading{.watts = *watts, .temperature_c = power_->temperature_c()};
  }
  std::string power_source() const override { return "device (NVML)"; }
  void measure_ceilings() override {}  // not measured on GPUs yet: the datasheet peak stands

 private:
  DeviceInfo info_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  bool flush_l2_ = false;
  std::unique_ptr<DeviceBuffer> flush_;
  std::unique_ptr<PowerMonitor> power_;
};

// cuBLAS through dlopen. Row-major C = A * B is column-major C^T = B^T * A^T, so every call
// passes (N, M, K) and B before A.
class Cublas final : public Reference {
 public:
  Cublas(std::string name, bool tf32)
      : name_(std::move(name)),
        tf32_(tf32),
        library_({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, "cuBLAS",
                 "cuBLAS not found (libcublas.so.13): install the CUDA toolkit's cuBLAS") {
    library_.load(create_, "cublasCreate_v2");
    library_.load(destroy_, "cublasDestroy_v2");
    library_.load(sgemm_, "cublasSgemm_v2");
    library_.load(dgemm_, "cublasDgemm_v2");
    library_.load(gemm_ex_, "cublasGemmEx");
    library_.load(get_version_, "cublasGetVersion_v2");
    if (create_(&handle_) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
  }
  ~Cublas() override {
    if (handle_ != nullptr) destroy_(handle_);
  }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  std::string name() const override { return name_; }
  std::string version() const override {
    int v = 0;
    get_version_(handle_, &v);
    return "cuBLAS " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
           (tf32_ ? " (TF32 tensor-core math)" : "");
  }
  void set_threads(int) override {}
  void gemm(const Problem& p, const Operands& o) override {
    require_untransposed(p, name());
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    const int lda = static_cast<int>(p.lda), ldb = static_cast<int>(p.ldb), ldc = static_cast<int>(p.ldc);
    cublasStatus_t status;
    if (p.precision == Precision::fp32 && !tf32_) {
      const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
      status = sgemm_(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, static_cast<const float*>(o.b), ldb,
                      static_cast<const float*>(o.a), lda, &beta, static_cast<float*>(o.c), ldc);
    } else if (p.precision == Precision::fp64) {
      const double alpha = p.alpha, beta = p.beta;
      status = dgemm_(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, static_cast<const double*>(o.b), ldb,
                      static_cast<const double*>(o.a), lda, &beta, static_cast<double*>(o.c), ldc);
    } else {
      // fp16/bf16 inputs with fp32 accumulation and output; fp32 with TF32 tensor cores.
      const cudaDataType in = p.precision == Precision::fp16 ? CUDA_R_16F
                              : p.precision == Precision::bf16 ? CUDA_R_16BF
                                                               : CUDA_R_32F;
      const cublasComputeType_t compute = tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
      status = gemm_ex_(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, o.b, in, ldb, o.a, in, lda, &beta, o.c,
                        CUDA_R_32F, ldc, compute, CUBLAS_GEMM_DEFAULT);
    }
    if (status != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error(name_ + ": gemm failed with status " + std::to_string(static_cast<int>(status)));
  }

 private:
  std::string name_;
  bool tf32_;
  SharedLibrary library_;
  cublasHandle_t handle_ = nullptr;
  decltype(&cublasCreate_v2) create_ = nullptr;
  decltype(&cublasDestroy_v2) destroy_ = nullptr;
  decltype(&cublasSgemm_v2) sgemm_ = nullptr;
  decltype(&cublasDgemm_v2) dgemm_ = nullptr;
  // Spelled out: C++ sees an overload set under this name.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx gemm_ex_ = nullptr;
  decltype(&cublasGetVersion_v2) get_version_ = nullptr;
};

class CudaBackend final : public Backend {
  static std::vector<DeviceInfo> gpus() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();  // clear it
      return {};
    }
    std::vector<DeviceInfo> list;
    for (int i = 0; i < count; ++i) list.push_back(describe(i));
    return list;
  }

 public:
  std::string name() const override { return "cuda"; }
  // The GPUs (none without a driver: the CUDA runtime then reports an error), then the
  // simulated devices.
  std::vector<DeviceInfo> devices() override {
    std::vector<DeviceInfo> list = gpus();
    for (DeviceInfo& d : simulated_devices(static_cast<int>(list.size()))) list.push_back(std::move(d));
    return list;
  }
  std::unique_ptr<Device> open(int index) override {
    const auto list = devices();
    if (index < 0 || index >= static_cast<int>(list.size()))
      throw std::invalid_argument("cuda device " + std::to_string(index) + " does not exist; devices 0.." +
                                  std::to_string(list.size() - 1) + " exist" +
                                  (gpus().empty() ? " (no GPU here: they are simulated)" : ""));
    const DeviceInfo& d = list[static_cast<std::size_t>(index)];
    if (functional_simulation(d)) return open_simulated(d);
    return std::make_unique<CudaDevice>(index);
  }
  std::vector<std::string> reference_names() const override { return {"cublas", "cublas-tf32"}; }
  std::unique_ptr<Reference> make_reference(const std::string& name, Device& device) override {
    if (functional_simulation(device.info()))
      throw std::invalid_argument(device.info().name + " is simulated: cuBLAS cannot run there (no reference is timed on it)");
    if (name == "cublas") return std::make_unique<Cublas>("cublas", false);
    if (name == "cublas-tf32") return std::make_unique<Cublas>("cublas-tf32", true);
    throw std::invalid_argument("unknown cuda reference '" + name + "'; known: cublas, cublas-tf32");
  }
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace gemmlab::cuda
