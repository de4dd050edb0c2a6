// The OpenCL backend on whatever platform is installed (pocl on the CPU in CI): every kernel on
// the verification plan, CLBlast as a correct reference, build failures with their log, timing
// that covers all of a launch's work. Without an OpenCL device the tests skip, saying so.
#include <chrono>
#include <cstring>

#include "gemmlab/evaluate.hpp"
#include "gemmlab/opencl.hpp"
#include "gemmlab/verify.hpp"
#include "gpu_test_support.hpp"
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
  const EvaluationSetup setup = open_evaluation(backend(), {.timed_reference = false});
  Device* device = setup.device.get();
  if (precision == Precision::fp64 && !device->info().has_feature("fp64")) GTEST_SKIP() << "no fp64 on this device";
  VerifyOptions options;
  options.padded_leading_dimensions = true;
  options.precisions = {precision};
  for (const Kernel* kernel : registry().kernels("opencl"))
    for (const VerifyCase& c : verify_kernel(*device, *kernel, setup.truth.get(), options))
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

// Each kernel that stages a block of C's operands declares the tile of C it covers (tile_m x
// tile_n): 02 a TS x TS block, 03 and 04 an MWG x NWG one; 01 stages nothing. The spaces need no
// device (without one, the limits are 256 work-items and 32 KiB).
TEST(OpenClKernels, DeclareTheTileOfCTheyStage) {
  const std::map<std::string, std::pair<std::string, std::string>> staged = {
      {"02_local_tiled", {"TS", "TS"}}, {"03_register_tiled", {"MWG", "NWG"}}, {"04_interior_fast_path", {"MWG", "NWG"}}};
  for (const Kernel* kernel : registry().kernels("opencl")) {
    const std::string name(kernel->name());
    SCOPED_TRACE(name);
    for (Precision precision : kernel->precisions()) {
      const SearchSpace space = kernel->space(DeviceInfo{}, precision);
      const auto found = staged.find(name);
      if (found == staged.end()) {
        EXPECT_FALSE(space.find_named_value("tile_m") || space.find_named_value("tile_n"));
        continue;
      }
      const auto configs = space.enumerate(5000);
      ASSERT_FALSE(configs.empty());
      for (const Config& c : configs) {
        EXPECT_EQ(space.value_of("tile_m", c), c.at(found->second.first));
        EXPECT_EQ(space.value_of("tile_n", c), c.at(found->second.second));
      }
      // The local memory used counts the precision's element size (fp64: 8 bytes).
      if (name == "02_local_tiled") {
        EXPECT_EQ(space.value_of("local_bytes", {{"TS", 16}}),
                  2 * 16 * 16 * static_cast<ParamValue>(element_size(precision)));
      }
    }
  }
}

TEST(OpenClReference, ClBlastComputesTheRightResult) {
  SKIP_WITHOUT_OPENCL_DEVICE();
  auto device = backend().open(0);
  auto clblast = backend().make_reference("clblast", *device);
  for (Precision precision : {Precision::fp32, Precision::fp64}) {
    Problem p = Problem::packed(37, 53, 29, precision, -0.75, 1.25);
    HostCase host(p, 5);
    const std::vector<std::byte> out = testing::run_on_device(
        *device, host, host.c_initial().data(), [&](const Operands& operands) { clblast->gemm(p, operands); });
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
