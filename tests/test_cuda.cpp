// The CUDA backend. Everything that needs no GPU runs everywhere the toolkit is: every kernel
// compiles with NVRTC for sm_80 and sm_90a at its default configuration and at the extremes of
// its space, without spills at the default and within the shared-memory limit. Tests that run
// kernels skip with the reason when there is no GPU.
#include <algorithm>
#include <set>
#include <string>

#include "cli_support.hpp"
#include "gemmlab/builtin.hpp"
#include "gemmlab/cuda.hpp"
#include "gemmlab/verify.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::contains;

std::vector<std::string> cuda_kernel_names() {
  std::vector<std::string> names;
  for (const Kernel* k : registry().kernels("cuda")) names.emplace_back(k->name());
  return names;
}

class EveryCudaKernel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryCudaKernel, CompilesForEveryTargetWithoutSpillsAndWithinSharedMemory) {
  const Kernel& kernel = registry().kernel("cuda", GetParam());
  const auto cases = compile_check_kernel(kernel, {});
  ASSERT_FALSE(cases.empty());
  std::set<std::string> targets;
  bool saw_default = false;
  for (const CompileCase& c : cases) {
    EXPECT_EQ(c.status, "passed") << c.kernel << " " << c.report.target << " " << to_string(c.precision) << " ["
                                  << to_string(c.config) << "]: " << c.reason;
    targets.insert(c.report.target);
    saw_default = saw_default || c.is_default;
    EXPECT_GT(c.report.registers, 0) << "no ptxas resource report for " << to_string(c.config);
  }
  EXPECT_TRUE(saw_default);
  EXPECT_TRUE(targets.count("sm_90a")) << "every kernel compiles for Hopper";
}

INSTANTIATE_TEST_SUITE_P(Cuda, EveryCudaKernel, ::testing::ValuesIn(cuda_kernel_names()),
                         [](const auto& param_info) { return "k" + param_info.param; });

TEST(CudaKernels, TheCurriculumIsCompleteAndEachSourceIsEmbedded) {
  const auto names = cuda_kernel_names();
  for (const char* step : {"01_naive", "02_coalesced", "03_smem_tiled", "04_1d_register_tiled", "05_2d_register_tiled",
                           "06_vectorized", "07_warp_tiled", "08_cp_async_pipeline", "09_wmma", "10_mma_sync",
                           "11_wgmma_tma", "12_warp_specialized"})
    EXPECT_NE(std::find(names.begin(), names.end(), step), names.end()) << step << " is not registered";
  for (const Kernel* k : registry().kernels("cuda")) {
    EXPECT_FALSE(k->summary().empty()) << k->name();
    EXPECT_TRUE(contains(k->source_hash(), "nvrtc")) << "the NVRTC version is part of the cache key";
  }
}

TEST(CudaCompiler, ReadsThePtxasResourceReport) {
  const std::string log =
      "ptxas info    : Compiling entry function 'gemm' for 'sm_90a'\n"
      "ptxas info    : Function properties for gemm\n"
      "ptxas         .     8 bytes stack frame, 16 bytes spill stores, 24 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 16384 bytes smem\n";
  const cuda::ResourceUsage u = cuda::parse_ptxas_report(log);
  EXPECT_TRUE(u.known);
  EXPECT_EQ(u.registers, 168);
  EXPECT_EQ(u.shared_bytes, 16384);
  EXPECT_EQ(u.stack_bytes, 8);
  EXPECT_EQ(u.spill_store_bytes, 16);
  EXPECT_EQ(u.spill_load_bytes, 24);
  EXPECT_FALSE(cuda::parse_ptxas_report("no report here").known);
}

TEST(CudaCompiler, AProgramThatDoesNotCompileIsAnErrorWithTheLog) {
  const cuda::CompileRequest request{.source_name = "broken.cu",
                                     .source = "extern \"C\" __global__ void gemm() { undeclared = 1; }",
                                     .headers = {},
                                     .options = {},
                                     .arch = "sm_80"};
  EXPECT_THROW_CONTAINING(cuda::compile(request), cuda::CompileError, {"broken.cu", "undeclared"});
}

TEST(CudaCompiler, AnEqualRequestIsServedFromTheCache) {
  // The embedded device headers reach NVRTC the way the kernels include them.
  const cuda::CompileRequest request{.source_name = "tiny.cu",
                                     .source = "#include \"tile.cuh\"\nextern \"C\" __global__ void gemm(float* c) { c[0] = TILE; }",
                                     .headers = {{"tile.cuh", "#pragma once\n#define TILE_FROM_HEADER 1\n"}},
                                     .options = {"-DTILE=3"},
                                     .arch = "sm_90a"};
  const cuda::CompiledModule first = cuda::compile(request);
  EXPECT_FALSE(first.image.empty());
  EXPECT_TRUE(first.usage.known) << first.log;
  const cuda::CompiledModule again = cuda::compile(request);
  EXPECT_EQ(again.image, first.image);
}

TEST(CudaBackend, RunsEveryKernelWhereAGpuIsPresent) {
  Backend& backend = registry().backend("cuda");
  if (backend.devices().empty())
    GTEST_SKIP() << "no CUDA device on this machine (or no NVIDIA driver): kernels are compile-checked only";
  auto device = backend.open(0);
  auto truth = cpu::load_cblas("openblas");
  VerifyOptions options;
  options.shapes = {parse_shape("1x1x1"), parse_shape("127x129x131"), parse_shape("513x257x1"),
                    parse_shape("256x256x256")};
  // Odd shapes whose rows start on 16 bytes: TMA kernels read them in place (the others are
  // copied into aligned buffers first).
  for (const char* shape : {"7x13x5", "127x129x131"}) {
    Problem p = parse_shape(shape);
    p.lda = (p.k + 7) / 8 * 8;
    p.ldb = (p.n + 7) / 8 * 8;
    options.shapes.push_back(p);
  }
  for (const Kernel* kernel : registry().kernels("cuda")) {
    if (!kernel->supported(device->info()).ok) continue;
    for (const VerifyCase& c : verify_kernel(*device, *kernel, truth.get(), options))
      EXPECT_NE(c.status, "failed") << c.kernel << " " << c.problem.shape() << " [" << to_string(c.config)
                                    << "]: " << c.validation.reason;
  }
}

TEST(CliVerify, CompileOnlyChecksCudaKernelsWithoutADevice) {
  const testing::CliResult r = testing::run_cli("verify --backend cuda --kernel 01_naive --compile-only --json");
  ASSERT_EQ(r.status, 0) << r;
  const nlohmann::json j = testing::parse_json(r);
  EXPECT_GT(j["passed"].get<int>(), 0) << r;
  EXPECT_EQ(j["failed"], 0) << r;
  for (const auto& c : j["cases"])
    for (const char* key : {"target", "precision", "params", "registers", "shared_bytes", "spill_bytes"})
      EXPECT_TRUE(c.contains(key)) << key;
}

}  // namespace
}  // namespace gemmlab
