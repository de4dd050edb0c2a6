// The OpenCL backend: platforms and devices through the ICD loader, a context and an in-order
// profiling queue per device (created once per process and shared), programs built from source
// and cached, event timing, the FMA and triad ceilings as OpenCL kernels, and CLBlast's GEMM as
// the reference (dlopen: the program runs where CLBlast is missing, without that reference).
// First: it sets the OpenCL version (1.2) the headers below see.
#include "gemmlab/opencl.hpp"

#include <clblast_c.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "gemmlab/measure.hpp"
#include "shared_library.hpp"

namespace gemmlab::opencl {

std::string error_name(cl_int status) {
  switch (status) {
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_BUILD_OPTIONS: return "CL_INVALID_BUILD_OPTIONS";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    default: return "OpenCL error " + std::to_string(status);
  }
}

void check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + error_name(status));
}

namespace {

// --- Platforms, devices, contexts --------------------------------------------------------------

// A string property of an OpenCL object (clGetDeviceInfo, clGetPlatformInfo); "" when unknown.
template <class Object, class Info>
std::string info_string(cl_int (*get)(Object, Info, std::size_t, void*, std::size_t*), Object object, Info what) {
  std::size_t size = 0;
  if (get(object, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  get(object, what, size, s.data(), nullptr);
  s.resize(std::strlen(s.c_str()));
  return s;
}
std::string device_string(cl_device_id d, cl_device_info what) { return info_string(&clGetDeviceInfo, d, what); }
std::string platform_string(cl_platform_id p, cl_platform_info what) { return info_string(&clGetPlatformInfo, p, what); }
template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T value{};
  clGetDeviceInfo(d, what, sizeof value, &value, nullptr);
  return value;
}

struct Found {
  cl_platform_id platform;
  cl_device_id device;
};

// Every device of every platform, in platform order. No platform (no ICD installed) is no device.
std::vector<Found> enumerate() {
  cl_uint platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &platforms) != CL_SUCCESS || platforms == 0) return {};
  std::vector<cl_platform_id> ids(platforms);
  clGetPlatformIDs(platforms, ids.data(), nullptr);
  std::vector<Found> found;
  for (cl_platform_id p : ids) {
    cl_uint count = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS || count == 0) continue;
    std::vector<cl_device_id> devices(count);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr);
    for (cl_device_id d : devices) found.push_back({p, d});
  }
  return found;
}

DeviceInfo describe(const Found& f, int index) {
  DeviceInfo d;
  d.backend = "opencl";
  d.index = index;
  d.name = device_string(f.device, CL_DEVICE_NAME);
  d.vendor = device_string(f.device, CL_DEVICE_VENDOR) + " (" + platform_string(f.platform, CL_PLATFORM_NAME) + " " +
             platform_string(f.platform, CL_PLATFORM_VERSION) + ")";
  d.cores = static_cast<int>(device_value<cl_uint>(f.device, CL_DEVICE_MAX_COMPUTE_UNITS));
  d.clock_ghz = device_value<cl_uint>(f.device, CL_DEVICE_MAX_CLOCK_FREQUENCY) / 1000.0;
  const auto lanes = device_value<cl_uint>(f.device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT);
  d.simd_width_bits = static_cast<int>(lanes * 32);
  const auto type = device_value<cl_device_type>(f.device, CL_DEVICE_TYPE);
  d.features.push_back(type & CL_DEVICE_TYPE_GPU ? "gpu" : type & CL_DEVICE_TYPE_CPU ? "cpu" : "accelerator");
  d.features.push_back(device_string(f.device, CL_DEVICE_VERSION));
  const bool fp64 = device_value<cl_device_fp_config>(f.device, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
  if (fp64) d.features.push_back("fp64");
  d.caches.push_back({.level = 1, .type = "Local", .size_bytes = static_cast<std::int64_t>(device_value<cl_ulong>(f.device, CL_DEVICE_LOCAL_MEM_SIZE)), .shared_by_cores = 1});
  if (const auto cache = device_value<cl_ulong>(f.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE); cache > 0)
    d.caches.push_back({.level = 2, .type = "Global cache", .size_bytes = static_cast<std::int64_t>(cache), .shared_by_cores = d.cores});
  // One FMA per lane per cycle on each compute unit: what the driver's figures allow; a CPU
  // with two FMA pipes does twice that (the cpu backend knows, OpenCL does not say).
  d.fma_units_per_core = 1;
  d.peak_gflops_fp32 = d.cores * d.clock_ghz * lanes * 2.0;
  d.peak_gflops_fp64 = fp64 ? d.peak_gflops_fp32 / 2 : 0;
  // The work-group limits that kernels' constraints use (the GPU limits' fields mean the same).
  GpuLimits g;
  g.multiprocessors = d.cores;
  g.warp_size = static_cast<int>(lanes);
  g.max_threads_per_block = static_cast<int>(device_value<std::size_t>(f.device, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  g.shared_bytes_per_block = g.shared_bytes_per_block_optin = g.shared_bytes_per_sm = d.caches.front().size_bytes;
  d.gpu = g;
  return d;
}

// The process's OpenCL state: one context and queue per device, created at first use and kept to
// the end (the tuner's compile threads and every Device opened on the device share them), and the
// built programs.
class Runtime {
 public:
  static Runtime& instance() {
    static Runtime runtime;
    return runtime;
  }
  const std::vector<Found>& found() const { return found_; }
  const Handles& handles(int index) {
    std::lock_guard lock(mutex_);
    if (index < 0 || static_cast<std::size_t>(index) >= found_.size())
      throw std::invalid_argument("opencl device " + std::to_string(index) + " does not exist; this machine has " +
                                  std::to_string(found_.size()) + " OpenCL device(s)");
    auto& h = handles_[index];
    if (h.context == nullptr) {
      cl_int status = CL_SUCCESS;
      h.platform = found_[static_cast<std::size_t>(index)].platform;
      h.device = found_[static_cast<std::size_t>(index)].device;
      h.context = clCreateContext(nullptr, 1, &h.device, nullptr, nullptr, &status);
      check(status, "clCreateContext");
      h.queue = clCreateCommandQueue(h.context, h.device, CL_QUEUE_PROFILING_ENABLE, &status);
      check(status, "clCreateCommandQueue");
    }
    return h;
  }
  cl_program build(int index, const std::string& source, const std::string& options) {
    const Handles& h = handles(index);
    const auto key = std::make_tuple(index, source, options);
    std::shared_ptr<Entry> entry;
    {
      std::lock_guard lock(mutex_);
      auto& slot = programs_[key];
      if (!slot) slot = std::make_shared<Entry>();
      entry = slot;
    }
    // One build per key; a second request for it waits for the first.
    std::call_once(entry->once, [&] {
      cl_int status = CL_SUCCESS;
      const char* text = source.c_str();
      const std::size_t length = source.size();
      cl_program program = clCreateProgramWithSource(h.context, 1, &text, &length, &status);
      check(status, "clCreateProgramWithSource");
      status = clBuildProgram(program, 1, &h.device, options.c_str(), nullptr, nullptr);
      if (status != CL_SUCCESS) {
        std::size_t size = 0;
        clGetProgramBuildInfo(program, h.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
        std::string log(size, '\0');
        clGetProgramBuildInfo(program, h.device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
        clReleaseProgram(program);
        entry->error = "the OpenCL program did not build (" + error_name(status) + ") with options '" + options +
                       "':\n" + log;
        return;
      }
      entry->program = program;
    });
    if (entry->program == nullptr) throw BuildError(entry->error);
    return entry->program;
  }

 private:
  Runtime() : found_(enumerate()) {}
  struct Entry {
    std::once_flag once;
    cl_program program = nullptr;
    std::string error;
  };
  std::vector<Found> found_;
  std::mutex mutex_;
  std::map<int, Handles> handles_;
  std::map<std::tuple<int, std::string, std::string>, std::shared_ptr<Entry>> programs_;
};

// --- Devices -------------------------------------------------------------------------------------

// A cl_mem as a device buffer: its data() is the cl_mem handle (kernels take it as an argument).
std::unique_ptr<DeviceBuffer> allocate_cl_buffer(cl_context context, std::size_t bytes) {
  cl_int status = CL_SUCCESS;
  cl_mem memory = clCreateBuffer(context, CL_MEM_READ_WRITE, std::max<std::size_t>(bytes, 1), nullptr, &status);
  if (status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_HOST_MEMORY || status == CL_INVALID_BUFFER_SIZE)
    throw std::bad_alloc();
  check(status, "clCreateBuffer");
  return std::make_unique<OwnedDeviceBuffer>(memory, bytes, [](void* m) { clReleaseMemObject(static_cast<cl_mem>(m)); });
}

// The ceilings, as OpenCL kernels: 8 independent FMA chains per work-item, each a vector of VW
// lanes (the device's native float vector width: 16 on an AVX-512 CPU under pocl, 1 on a GPU, whose
// lanes are the work-items of a warp), and a triad. Scalar chains on a CPU device measured the
// compiler's scalar code (pocl: 22.7 GFLOP/s on two AVX-512 cores, below its own GEMM kernels).
constexpr const char* ceilings_source = R"(
#define CAT(a, b) a##b
#define VEC(n) CAT(float, n)
#if VW == 1
typedef float vec;
#else
typedef VEC(VW) vec;
#endif
__kernel void fma_chains(__global float* out, const int iterations) {
  const vec a = (vec)(0.9999999f), b = (vec)(1e-7f);
  vec x0 = (vec)(get_global_id(0) * 1e-7f), x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f;
  vec x4 = x0 + 4.0f, x5 = x0 + 5.0f, x6 = x0 + 6.0f, x7 = x0 + 7.0f;
  for (int it = 0; it < iterations; ++it) {
    x0 = fma(x0, a, b); x1 = fma(x1, a, b); x2 = fma(x2, a, b); x3 = fma(x3, a, b);
    x4 = fma(x4, a, b); x5 = fma(x5, a, b); x6 = fma(x6, a, b); x7 = fma(x7, a, b);
  }
  const vec s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
  const float* lanes = (const float*)&s;
  float sum = 0;
  for (int i = 0; i < VW; ++i) sum += lanes[i];
  out[get_global_id(0)] = sum;
}
__kernel void triad(__global float* a, __global const float* b, __global const float* c, const float s) {
  const size_t i = get_global_id(0);
  a[i] = b[i] + s * c[i];
}
)";

class ClDevice final : public Device {
 public:
  explicit ClDevice(int index) : index_(index), handles_(Runtime::instance().handles(index)),
                                  info_(describe(Runtime::instance().found()[static_cast<std::size_t>(index)], index)) {}
  ~ClDevice() override { release_events(); }
  const DeviceInfo& info() const override { return info_; }
  // A CPU device's buffers (pocl) are this process's memory.
  bool buffers_in_host_memory() const override {
    return std::find(info_.features.begin(), info_.features.end(), "cpu") != info_.features.end();
  }
  std::unique_ptr<DeviceBuffer> allocate(std::size_t bytes) override {
    return allocate_cl_buffer(handles_.context, bytes);
  }
  void upload(DeviceBuffer& dst, const void* src, std::size_t bytes) override {
    if (bytes > 0)
      check(clEnqueueWriteBuffer(handles_.queue, as_mem(dst.data()), CL_TRUE, 0, bytes, src, 0, nullptr, nullptr),
            "clEnqueueWriteBuffer");
  }
  void download(void* dst, DeviceBuffer& src, std::size_t bytes) override {
    if (bytes > 0)
      check(clEnqueueReadBuffer(handles_.queue, as_mem(src.data()), CL_TRUE, 0, bytes, dst, 0, nullptr, nullptr),
            "clEnqueueReadBuffer");
  }
  void synchronize() override {
    check(clFinish(handles_.queue), "clFinish");
    release_events();  // work outside time_once is not timed
  }
  // The device time of the work `launch` enqueued: from the end of a marker enqueued before it to
  // the end of one enqueued after it. A library may enqueue several kernels and return the event
  // of only one (CLBlast: the pre-processing copies and the GEMM), so the events alone would miss
  // work; the markers span all of it on this in-order queue.
  double time_once(const std::function<void()>& launch) override {
    release_events();
    cl_event before = nullptr, after = nullptr;
    check(clEnqueueMarkerWithWaitList(handles_.queue, 0, nullptr, &before), "clEnqueueMarkerWithWaitList");
    events_.push_back(before);
    launch();
    check(clEnqueueMarkerWithWaitList(handles_.queue, 0, nullptr, &after), "clEnqueueMarkerWithWaitList");
    events_.push_back(after);
    check(clFinish(handles_.queue), "clFinish");
    cl_ulong start = 0, end = 0;
    check(clGetEventProfilingInfo(before, CL_PROFILING_COMMAND_END, sizeof start, &start, nullptr), "clGetEventProfilingInfo");
    check(clGetEventProfilingInfo(after, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr), "clGetEventProfilingInfo");
    release_events();
    return static_cast<double>(end - start) * 1e-9;
  }
  void measure_ceilings() override;
  void record(cl_event e) { events_.push_back(e); }
  int index() const { return index_; }

 private:
  void release_events() {
    for (cl_event e : events_) clReleaseEvent(e);
    events_.clear();
  }
  int index_;
  const Handles& handles_;
  DeviceInfo info_;
  std::vector<cl_event> events_;
};

void ClDevice::measure_ceilings() {
  const cl_uint lanes = std::max<cl_uint>(1, device_value<cl_uint>(handles_.device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT));
  const cl_uint width = lanes >= 16 ? 16 : lanes >= 8 ? 8 : lanes >= 4 ? 4 : lanes >= 2 ? 2 : 1;  // an OpenCL vector size
  cl_program program = Runtime::instance().build(index_, ceilings_source, "-DVW=" + std::to_string(width));
  cl_int status = CL_SUCCESS;
  auto kernel = [&](const char* name) {
    cl_kernel k = clCreateKernel(program, name, &status);
    check(status, "clCreateKernel");
    return std::unique_ptr<std::remove_pointer_t<cl_kernel>, decltype(&clReleaseKernel)>(k, clReleaseKernel);
  };
  auto run = [&](cl_kernel k, std::size_t items) {
    return measure([&] {
      return time_once([&] {
        cl_event e = nullptr;
        check(clEnqueueNDRangeKernel(handles_.queue, k, 1, nullptr, &items, nullptr, 0, nullptr, &e), "clEnqueueNDRangeKernel");
        record(e);
      });
    }, {.warmup = 1, .min_repetitions = 3, .max_repetitions = 10, .max_seconds = 1.0}).median_s;
  };
  MeasuredCeilings c;
  {
    const std::size_t items = static_cast<std::size_t>(std::max(1, info_.cores)) * 4096;
    const int iterations = 2048;
    auto out = allocate(items * sizeof(float));
    auto k = kernel("fma_chains");
    cl_mem mem = as_mem(out->data());
    check(clSetKernelArg(k.get(), 0, sizeof mem, &mem), "clSetKernelArg");
    check(clSetKernelArg(k.get(), 1, sizeof iterations, &iterations), "clSetKernelArg");
    const double flops = 2.0 * 8 * width * iterations * static_cast<double>(items);
    c.fma_gflops_fp32 = flops / run(k.get(), items) * 1e-9;
    // One compute unit alone and fp64 are not measured here: they stay 0 ("not measured").
  }
  {
    const std::size_t items = std::size_t{1} << 24;  // 64 MiB per array
    auto a = allocate(items * 4), b = allocate(items * 4), cc = allocate(items * 4);
    std::vector<float> ones(items, 1.0f);
    upload(*b, ones.data(), items * 4);
    upload(*cc, ones.data(), items * 4);
    auto k = kernel("triad");
    cl_mem ma = as_mem(a->data()), mb = as_mem(b->data()), mc = as_mem(cc->data());
    const float s = 3.0f;
    check(clSetKernelArg(k.get(), 0, sizeof ma, &ma), "clSetKernelArg");
    check(clSetKernelArg(k.get(), 1, sizeof mb, &mb), "clSetKernelArg");
    check(clSetKernelArg(k.get(), 2, sizeof mc, &mc), "clSetKernelArg");
    check(clSetKernelArg(k.get(), 3, sizeof s, &s), "clSetKernelArg");
    c.triad_gb_per_s = 3.0 * 4 * static_cast<double>(items) / run(k.get(), items) * 1e-9;
  }
  info_.measured = c;
}

// --- CLBlast ---------------------------------------------------------------------------------------

class ClBlast final : public Reference {
 public:
  explicit ClBlast(ClDevice& device)
      : device_(device),
        library_({GEMMLAB_CLBLAST_LIBRARY, "libclblast.so.1", "libclblast.so"}, "CLBlast",
                 "CLBlast not found (libclblast.so.1): install libclblast1") {
    library_.load(sgemm_, "CLBlastSgemm");
    library_.load(dgemm_, "CLBlastDgemm");
  }
  ClBlast(const ClBlast&) = delete;
  ClBlast& operator=(const ClBlast&) = delete;
  std::string name() const override { return "clblast"; }
  std::string version() const override { return "CLBlast " GEMMLAB_CLBLAST_VERSION; }
  void set_threads(int) override {}
  void gemm(const Problem& p, const Operands& o) override {
    require_untransposed(p, name());
    if (p.precision != Precision::fp32 && p.precision != Precision::fp64)
      throw std::invalid_argument("CLBlast's reference GEMM here is fp32 or fp64");
    if (p.m == 0 || p.n == 0) return;
    cl_command_queue queue = handles(device_.index()).queue;
    cl_event event = nullptr;
    const auto m = static_cast<std::size_t>(p.m), n = static_cast<std::size_t>(p.n), k = static_cast<std::size_t>(p.k);
    const auto lda = static_cast<std::size_t>(p.lda), ldb = static_cast<std::size_t>(p.ldb), ldc = static_cast<std::size_t>(p.ldc);
    const CLBlastStatusCode status =
        p.precision == Precision::fp32
            ? sgemm_(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, m, n, k, static_cast<float>(p.alpha),
                     as_mem(o.a), 0, lda, as_mem(o.b), 0, ldb, static_cast<float>(p.beta), as_mem(o.c), 0, ldc, &queue, &event)
            : dgemm_(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, m, n, k, p.alpha, as_mem(o.a), 0, lda,
                     as_mem(o.b), 0, ldb, p.beta, as_mem(o.c), 0, ldc, &queue, &event);
    if (status != CLBlastSuccess) throw std::runtime_error("CLBlast GEMM failed with status " + std::to_string(status));
    if (event != nullptr) device_.record(event);
  }

 private:
  ClDevice& device_;
  SharedLibrary library_;
  decltype(&CLBlastSgemm) sgemm_ = nullptr;
  decltype(&CLBlastDgemm) dgemm_ = nullptr;
};

class ClBackend final : public Backend {
 public:
  std::string name() const override { return "opencl"; }
  std::vector<DeviceInfo> devices() override {
    std::vector<DeviceInfo> list;
    const auto& found = Runtime::instance().found();
    for (std::size_t i = 0; i < found.size(); ++i) list.push_back(describe(found[i], static_cast<int>(i)));
    return list;
  }
  std::unique_ptr<Device> open(int index) override { return std::make_unique<ClDevice>(index); }
  std::vector<std::string> reference_names() const override { return {"clblast"}; }
  std::unique_ptr<Reference> make_reference(const std::string& name, Device& device) override {
    if (name != "clblast") throw std::invalid_argument("unknown reference '" + name + "' for opencl; allowed: clblast");
    auto* cl = dynamic_cast<ClDevice*>(&device);
    if (cl == nullptr) throw std::invalid_argument(device.info().name + " is not an OpenCL device");
    return std::make_unique<ClBlast>(*cl);
  }
};

}  // namespace

const Handles& handles(int device_index) { return Runtime::instance().handles(device_index); }

cl_program build_program(int device_index, const std::string& source, const std::string& options) {
  return Runtime::instance().build(device_index, source, options);
}

void record_event(Device& device, cl_event event) {
  auto* cl = dynamic_cast<ClDevice*>(&device);
  if (cl == nullptr) {
    clReleaseEvent(event);
    throw std::invalid_argument(device.info().name + " is not an OpenCL device");
  }
  cl->record(event);
}

std::unique_ptr<Backend> make_backend() { return std::make_unique<ClBackend>(); }

}  // namespace gemmlab::opencl
