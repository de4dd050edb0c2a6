// The OpenCL backend on whatever platform is installed (pocl on the CPU in CI): every kernel on
// the verification plan, CLBlast as a correct reference, build failures with their log, timing
// that covers all of a launch's work. Without an OpenCL device the tests skip, saying so.
#include <chrono>
#include <cstring>

#include "gemmlab/evaluate.hpp"
#include "gemmlab/opencl.hpp"
#include "gemmlab/verify.hpp"
#include "test_support.hpp"

namespace gemmlab::opencl {
namespace {

Backend& backend() { return registry().backend("opencl"); }

#define SKIP_WITHOUT_OPENCL_DEVICE()                                                                   \
  do {                                                                                                 \
    if (backend().devices().empty()) GTEST_SKIP() << "no OpenCL device here (install pocl-opencl-icd)"; \
  } while (0)

TEST(OpenClBackend, DescribesItsDevices) {
  SKIP_WITHOUT_OPENCL_DEVICE();
  for (const DeviceInfo& d : backend().devices()) {
    EXPECT_EQ(d.backend, "opencl");
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.cores, 1);
    ASSERT_TRUE(d.gpu) << "work-group limits";
    EXPECT_GE(d.gpu->max_threads_per_block, 1);
    EXPECT_GT(d.gpu->shared_bytes_per_block, 0);
  }
  EXPECT_THROW(backend().open(static_cast<int>(backend().devices().size())), std::invalid_argument);
}

void expect_verification_plan_passes(Precision precision) {
  auto device = backend().open(0);
  if (precision == Precision::fp64 && !device->info().has_feature("fp64")) GTEST_SKIP() << "no fp64 on this device";
  auto truth = cpu::load_cblas("openblas");
  VerifyOptions options;
  options.padded_leading_dimensions = true;
  options.precisions = {precision};
  for (const Kernel* kernel : registry().kernels("opencl"))
    for (const VerifyCase& c : verify_kernel(*device, *kernel, truth.get(), options))
      EXPECT_EQ(c.status, "passed") << c.kernel << " " << c.problem.shape() << " " << to_string(c.problem.precision)
                                    << " {" << to_string(c.config) << "}: " << c.validation.reason;
}

TEST(OpenClKernels, EveryKernelPassesTheVerificationPlanInFp32) {
  SKIP_WITHOUT_OPENCL_DEVICE();
  expect_verification_plan_passes(Precision::fp32);
}

TEST(OpenClKernels, EveryKernelPassesTheVerificationPlanInFp64) {
  SKIP_WITHOUT_OPENCL_DEVICE();
  expect_verification_plan_passes(Precision::fp64);
}

TEST(OpenClKernels, AProgramThatDoesNotBuildReportsItsLog) {
  SKIP_WITHOUT_OPENCL_DEVICE();
  EXPECT_THROW_MENTIONING(build_program(0, "__kernel void gemm(__global float* c) { c[0] = undefined_name; }", ""),
                          BuildError, {"undefined_name"});
}

TEST(OpenClKernels, AConfigurationOutsideTheSpaceIsAConfigError) {
  SKIP_WITHOUT_OPENCL_DEVICE();
  auto device = backend().open(0);
  const Kernel& k = registry().kernel("opencl", "03_register_tiled");
  Config c = k.default_config(device->info(), Precision::fp32);
  c["MDIMC"] = 16;
  c["MWG"] = 8;  // MWG % MDIMC != 0
  EXPECT_THROW(k.prepare(*device, Problem::packed(8, 8, 8), c), ConfigError);
}

TEST(OpenClReference, ClBlastComputesTheRightResult) {
  SKIP_WITHOUT_OPENCL_DEVICE();
  auto device = backend().open(0);
  auto clblast = backend().make_reference("clblast", *device);
  for (Precision precision : {Precision::fp32, Precision::fp64}) {
    Problem p = Problem::packed(37, 53, 29, precision, -0.75, 1.25);
    HostCase host(p, 5);
    auto a = device->allocate(host.a().size()), b = device->allocate(host.b().size()), c = device->allocate(host.c_initial().size());
    device->upload(*a, host.a().data(), host.a().size());
    device->upload(*b, host.b().data(), host.b().size());
    device->upload(*c, host.c_initial().data(), host.c_initial().size());
    clblast->gemm(p, {a->data(), b->data(), c->data()});
    device->synchronize();
    std::vector<std::byte> out(host.c_initial().size());
    device->download(out.data(), *c, out.size());
    host.compute_expected(nullptr);
    const ValidationResult v = host.check(out.data());
    EXPECT_TRUE(v.valid) << to_string(precision) << ": " << v.reason;
  }
  EXPECT_THROW(backend().make_reference("clblas", *device), std::invalid_argument);
}

// CLBlast enqueues several kernels and returns one event: the device's time must cover them all,
// so it cannot be much shorter than the wall time of the same launch.
TEST(OpenClDevice, TimeOnceCoversEveryKernelALaunchEnqueues) {
  SKIP_WITHOUT_OPENCL_DEVICE();
  auto device = backend().open(0);
  auto clblast = backend().make_reference("clblast", *device);
  const Problem p = Problem::packed(511, 509, 257);
  HostCase host(p, 1);
  auto a = device->allocate(host.a().size()), b = device->allocate(host.b().size()), c = device->allocate(host.c_initial().size());
  device->upload(*a, host.a().data(), host.a().size());
  device->upload(*b, host.b().data(), host.b().size());
  const Operands o{a->data(), b->data(), c->data()};
  device->time_once([&] { clblast->gemm(p, o); });  // warm-up: CLBlast builds its kernels
  const auto start = std::chrono::steady_clock::now();
  const double device_s = device->time_once([&] { clblast->gemm(p, o); });
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(device_s, 0.5 * wall_s) << "device " << device_s << " s, wall " << wall_s << " s";
  EXPECT_LE(device_s, wall_s * 1.01 + 1e-4);
}

}  // namespace
}  // namespace gemmlab::opencl
