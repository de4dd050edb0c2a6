#include "opencl_kernel.hpp"

#include <climits>

#include "gemmlab/opencl.hpp"

namespace gemmlab::opencl {

OpenClKernel::OpenClKernel(std::string name, std::string summary)
    : Kernel({.name = name,
              .backend = "opencl",
              .summary = std::move(summary),
              .precisions = {Precision::fp32, Precision::fp64},
              .source_sha256 = embedded_sha256(embedded_files(), "opencl", name + ".cl")}) {}

void OpenClKernel::let_max_work_group(SearchSpace& space, const DeviceInfo& device) {
  space.let("max_work_group", device.gpu ? device.gpu->max_threads_per_block : 256,
            "work-items a work-group may have: CL_DEVICE_MAX_WORK_GROUP_SIZE");
}
void OpenClKernel::let_local_memory(SearchSpace& space, const DeviceInfo& device, Precision precision) {
  space.let("local_memory", device.gpu ? device.gpu->shared_bytes_per_block : 32 * 1024,
            "bytes of local memory a work-group may use: CL_DEVICE_LOCAL_MEM_SIZE")
      .let("elem_bytes", static_cast<ParamValue>(element_size(precision)),
           "bytes per element in " + std::string(to_string(precision)));
}

std::string OpenClKernel::source(Precision precision) const {
  const auto found = embedded_files().find(std::string(name()) + ".cl");
  if (found == embedded_files().end()) throw std::logic_error("no embedded source kernels/opencl/" + std::string(name()) + ".cl");
  const std::string real = precision == Precision::fp64 ? "double" : "float";
  std::string prelude = precision == Precision::fp64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "";
  prelude += "#define REAL " + real + "\n#define REAL2 " + real + "2\n#define REAL4 " + real + "4\n#define REAL8 " + real + "8\n";
  // The shared headers (vector_access.clh), then the kernel.
  for (const auto& [file, embedded] : embedded_files())
    if (file.ends_with(".clh")) prelude += std::string(embedded.text) + "\n";
  return prelude + std::string(found->second.text);
}

std::string OpenClKernel::options(const Config& config) {
  std::string text = "-cl-std=CL1.2";
  for (const auto& [name, value] : config) text += " -D" + name + "=" + std::to_string(value);
  return text;
}

void OpenClKernel::prepare_ahead(const DeviceInfo& device, Precision precision, const Config& config) const {
  build_program(device.index, source(precision), options(config));
}

namespace {
class ClExecutable final : public Executable {
 public:
  ClExecutable(Device& device, cl_program program, const Problem& problem, LaunchShape shape)
      : device_(device), problem_(problem), shape_(shape) {
    cl_int status = CL_SUCCESS;
    kernel_ = clCreateKernel(program, "gemm", &status);
    check(status, "clCreateKernel");
  }
  ~ClExecutable() override { clReleaseKernel(kernel_); }
  ClExecutable(const ClExecutable&) = delete;
  ClExecutable& operator=(const ClExecutable&) = delete;

  void run(const Operands& o) override {
    const Problem& p = problem_;
    const int dims[] = {static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k)};
    const int lds[] = {static_cast<int>(p.lda), static_cast<int>(p.ldb), static_cast<int>(p.ldc)};
    cl_mem a = as_mem(o.a), b = as_mem(o.b), c = as_mem(o.c);
    cl_uint arg = 0;
    for (int d : dims) check(clSetKernelArg(kernel_, arg++, sizeof d, &d), "clSetKernelArg");
    if (p.precision == Precision::fp64) {
      check(clSetKernelArg(kernel_, arg++, sizeof p.alpha, &p.alpha), "clSetKernelArg");
      check(clSetKernelArg(kernel_, arg++, sizeof p.beta, &p.beta), "clSetKernelArg");
    } else {
      const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
      check(clSetKernelArg(kernel_, arg++, sizeof alpha, &alpha), "clSetKernelArg");
      check(clSetKernelArg(kernel_, arg++, sizeof beta, &beta), "clSetKernelArg");
    }
    check(clSetKernelArg(kernel_, arg++, sizeof a, &a), "clSetKernelArg");
    check(clSetKernelArg(kernel_, arg++, sizeof lds[0], &lds[0]), "clSetKernelArg");
    check(clSetKernelArg(kernel_, arg++, sizeof b, &b), "clSetKernelArg");
    check(clSetKernelArg(kernel_, arg++, sizeof lds[1], &lds[1]), "clSetKernelArg");
    check(clSetKernelArg(kernel_, arg++, sizeof c, &c), "clSetKernelArg");
    check(clSetKernelArg(kernel_, arg++, sizeof lds[2], &lds[2]), "clSetKernelArg");
    cl_event event = nullptr;
    check(clEnqueueNDRangeKernel(handles(device_.info().index).queue, kernel_, 2, nullptr, shape_.global.data(),
                                 shape_.local.data(), 0, nullptr, &event),
          "clEnqueueNDRangeKernel");
    record_event(device_, event);
  }

 private:
  Device& device_;
  Problem problem_;
  LaunchShape shape_;
  cl_kernel kernel_ = nullptr;
};
}  // namespace

std::unique_ptr<Executable> OpenClKernel::build(Device& device, const Problem& problem, const Config& config) const {
  const std::string name_(name());
  if (problem.precision == Precision::fp64 && !device.info().has_feature("fp64"))
    throw Unsupported(name_ + ": " + device.info().name + " has no fp64 (cl_khr_fp64)");
  // The kernels index with 32-bit integers.
  for (std::size_t span : {problem.a_elements(), problem.b_elements(), problem.c_elements()})
    if (span > static_cast<std::size_t>(INT_MAX))
      throw std::invalid_argument(name_ + " indexes with 32-bit integers: an operand of more than 2^31 - 1 elements is too large");
  cl_program program = nullptr;
  try {
    program = build_program(device.info().index, source(problem.precision), options(config));
  } catch (const BuildError& e) {
    throw ConfigError(name_ + " {" + to_string(config) + "}: " + e.what());
  }
  return std::make_unique<ClExecutable>(device, program, problem, shape(config, problem));
}

}  // namespace gemmlab::opencl
