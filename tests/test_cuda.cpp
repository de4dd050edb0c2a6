// The CUDA backend. Everything that needs no GPU runs everywhere the toolkit is: every kernel
// compiles with NVRTC for sm_80 and sm_90a at its default configuration and at the extremes of
// its space, without spills at the default and within the shared-memory limit. Tests that run
// kernels skip with the reason when there is no GPU.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "cli_support.hpp"
#include "cuda/cuda_kernel.hpp"
#include "gemmlab/builtin.hpp"
#include "gemmlab/cuda.hpp"
#include "gemmlab/launch_counts.hpp"
#include "gemmlab/ptx.hpp"
#include "gemmlab/ptx_sim.hpp"
#include "gemmlab/setup.hpp"
#include "gemmlab/verify.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::contains;

std::vector<std::string> cuda_kernel_names() { return testing::kernel_names("cuda"); }

class EveryCudaKernel : public ::testing::TestWithParam<std::string> {};

// The default configuration, the extremes and three configurations sampled across the space
// (bench/ptx_forms.py checks whole spaces): each compiles, and its PTX decodes for the simulator.
TEST_P(EveryCudaKernel, CompilesForEveryTargetWithoutSpillsAndWithinSharedMemory) {
  const Kernel& kernel = registry().kernel("cuda", GetParam());
  const auto cases = compile_check_kernel(kernel, {}, 3);
  ASSERT_FALSE(cases.empty());
  std::set<std::string> targets;
  bool saw_default = false;
  for (const CompileCase& c : cases) {
    EXPECT_EQ(c.status, "passed") << c.kernel << " " << c.report.target << " " << to_string(c.precision) << " ["
                                  << to_string(c.config) << "]: " << c.reason;
    targets.insert(c.report.target);
    saw_default = saw_default || c.is_default;
    EXPECT_GT(c.report.registers, 0) << "no ptxas resource report for " << to_string(c.config);
    EXPECT_TRUE(c.report.ptx_forms.count("ret") || c.report.ptx_forms.count("exit"))
        << "the simulator's decoded forms lack the kernel's return: " << to_string(c.config);
  }
  EXPECT_TRUE(saw_default);
  EXPECT_TRUE(targets.count("sm_90a")) << "every kernel compiles for Hopper";
}

INSTANTIATE_TEST_SUITE_P(Cuda, EveryCudaKernel, ::testing::ValuesIn(cuda_kernel_names()),
                         [](const auto& param_info) { return "k" + param_info.param; });

// Where a driver is installed, NVRTC (12.9+) serves repeated compilations from a cache of its
// own without ptxas's report: on an H100 the compile check above then saw 0 registers for every
// module compiled before. gemmlab switches that cache off when its CUDA code is loaded.
TEST(CudaKernels, NvrtcsOwnCacheIsOffSoEveryModuleComesWithItsResourceReport) {
  const char* disabled = std::getenv("CUDA_CACHE_DISABLE");
  ASSERT_NE(disabled, nullptr);
  EXPECT_STREQ(disabled, "1");
  const cuda::CompiledModule module =
      cuda::compile(cuda::compile_request("01_naive", {{"BLOCK", 16}}, Precision::fp32, "sm_80"));
  EXPECT_GT(module.usage.registers, 0) << module.log;
}

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

// Every CUDA space, on every compile target and in every precision: each constraint with its
// why, threads per block named `threads`, and the tile of C a block covers
// named `tile_m`, `tile_n` by the kernels that stage A and B in shared memory.
TEST(CudaSpaces, DeclareExpressionsThreadsAndTheStagedTile) {
  const std::map<std::string, std::pair<std::string, std::string>> staged = {
      {"03_smem_tiled", {"TILE", "TILE"}},     {"04_1d_register_tiled", {"BM", "BN"}},
      {"05_2d_register_tiled", {"BM", "BN"}},  {"06_vectorized", {"BM", "BN"}},
      {"07_warp_tiled", {"BM", "BN"}},         {"08_cp_async_pipeline", {"BM", "BN"}},
      {"09_wmma", {"BM", "BN"}},               {"10_mma_sync", {"BM", "BN"}},
      {"11_wgmma_tma", {"BM", "BN"}},          {"12_warp_specialized", {"BM", "BN"}}};
  for (const Kernel* k : registry().kernels("cuda"))
    for (const CompileTarget& t : k->compile_targets())
      for (Precision p : k->precisions()) {
        const SearchSpace s = k->space(t.device, p);
        const std::string where = std::string(k->name()) + " " + t.name + " " + std::string(to_string(p));
        for (const Constraint& c : s.constraints()) EXPECT_FALSE(c.why.empty()) << where << ": " << c.text << " says not why";
        const Config d = k->default_config(t.device, p);
        ASSERT_NE(s.find_named_value("threads"), nullptr) << where;
        EXPECT_GT(*s.value_of("threads", d), 0) << where;
        const auto tile = staged.find(std::string(k->name()));
        if (tile == staged.end()) {
          EXPECT_EQ(s.find_named_value("tile_m"), nullptr) << where << " stages nothing";
          continue;
        }
        EXPECT_EQ(s.value_of("tile_m", d), d.at(tile->second.first)) << where;
        EXPECT_EQ(s.value_of("tile_n", d), d.at(tile->second.second)) << where;
      }
}

// `gemmlab kernels` prints each constraint as the code evaluates it, and the named values with
// their definitions: the device limits with their values, the derived quantities as expressions.
TEST(CliKernels, CudaConstraintsReadAsExpressionsWithTheirNamedValues) {
  const testing::CliResult r = testing::run_cli("kernels --backend cuda");
  ASSERT_EQ(r.status, 0) << r;
  for (const char* line : {"threads % warp_size == 0", "(whole warps)", "with warp_size = 32",
                           "with threads = (BM/TM)*(BN/TN)", "with tile_m = BM",
                           "threads*registers <= registers_per_block", "with shared_bytes_optin = 232448"})
    EXPECT_TRUE(contains(r.out, line)) << line << "\n" << r.out;
}

// The datasheet limits of an architecture are the catalogue's part for it, nothing written here.
TEST(CudaTargets, DatasheetLimitsAreTheCataloguesParts) {
  const nlohmann::json h100 = testing::catalogue_part("sm_90");
  ASSERT_TRUE(h100.is_object());
  EXPECT_EQ(h100["id"], "nvidia-h100-sxm");
  testing::expect_catalogue_limits(cuda::gpu_limits_for_arch(90), h100);
  for (int cc : {80, 86, 89})
    testing::expect_catalogue_limits(cuda::gpu_limits_for_arch(cc),
                                     testing::catalogue_part("sm_" + std::to_string(cc)));
  EXPECT_THROW_MENTIONING(cuda::gpu_limits_for_arch(75), std::invalid_argument, {"75", "80", "90"});
}

// One fallback for defaults: where a device's shared memory rules out the Hopper kernels'
// preferred configuration, the default is the space's nearest valid configuration.
TEST(CudaSpaces, TheHopperDefaultIsTheNearestValidConfigurationWhereThePreferredDoesNotFit) {
  DeviceInfo smaller;
  smaller.backend = "cuda";
  smaller.gpu = cuda::gpu_limits_for_arch(90);
  smaller.gpu->shared_bytes_per_block_optin = 100 * 1024;
  const Config preferred{{"BM", 128}, {"BN", 256}, {"STAGES", 4}};
  for (const char* name : {"11_wgmma_tma", "12_warp_specialized"}) {
    const Kernel& k = registry().kernel("cuda", name);
    const SearchSpace s = k.space(smaller, Precision::fp16);
    EXPECT_FALSE(s.is_valid(preferred)) << name;
    const Config d = k.default_config(smaller, Precision::fp16);
    EXPECT_EQ(d, s.nearest_valid(preferred)) << name;
    EXPECT_TRUE(s.is_valid(d)) << name << ": " << to_string(d);
    DeviceInfo h100 = smaller;
    h100.gpu = cuda::gpu_limits_for_arch(90);
    EXPECT_EQ(k.default_config(h100, Precision::fp16), preferred) << name << ": it fits an H100";
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
  const auto devices = backend.devices();
  if (devices.empty() || functional_simulation(devices.front()))
    GTEST_SKIP() << "no CUDA GPU on this machine (or no NVIDIA driver): kernels run on the PTX simulator only";
  const EvaluationSetup setup = open_evaluation(backend, {.timed_reference = false});
  Device* device = setup.device.get();
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
  testing::expect_every_supported_kernel_verifies("cuda", *device, setup.truth.get(), options);
}

// The verification plan on the simulator: the default plan's shapes, but the tall-skinny ones
// 293 long instead of 1000 (a kernel computes whole tiles, so a 1000 x 1 C costs a simulator as
// much as 1000 x BN: most of the plan's time at 1000), every alpha/beta pair, and each case also
// with padded leading dimensions. On sim-sm_80, which runs the same sources compiled for sm_80
// after sim-sm_90a has run the whole plan, the plan without 256^3 and padding (CI's time).
VerifyOptions simulator_plan(const DeviceInfo& device) {
  const bool whole = device.name == "sim-sm_90a";
  VerifyOptions options;
  options.shapes.clear();
  for (const char* shape : {"1x1x1", "7x13x5", "127x129x131", "293x1x307", "1x293x307", "513x257x1", "256x256x256"})
    if (whole || std::string(shape) != "256x256x256") options.shapes.push_back(parse_shape(shape));
  options.padded_leading_dimensions = whole;
  return options;
}

// Every kernel and precision through the verification plan (its shapes, alpha/beta pairs, padded
// leading dimensions, the extremes of its space) on each simulated device that can run it.
class EveryCudaKernelSimulated : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryCudaKernelSimulated, PassesTheVerificationPlanOnTheSimulatedDevices) {
  Backend& backend = registry().backend("cuda");
  const Kernel& kernel = registry().kernel("cuda", GetParam());
  const auto truth = open_fp64_truth();
  int simulated = 0;
  for (const DeviceInfo& info : backend.devices()) {
    if (!functional_simulation(info) || !kernel.supported(info).ok) continue;
    ++simulated;
    const auto device = backend.open(info.index);
    const auto cases = verify_kernel(*device, kernel, truth.get(), simulator_plan(info));
    EXPECT_FALSE(cases.empty()) << info.name;
    for (const VerifyCase& c : cases)
      EXPECT_EQ(c.status, "passed") << info.name << " " << c.kernel << " " << to_string(c.problem.precision) << " "
                                    << c.problem.shape() << " [" << to_string(c.config) << "]: " << c.validation.reason;
  }
  EXPECT_GT(simulated, 0) << "no simulated device runs " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Cuda, EveryCudaKernelSimulated, ::testing::ValuesIn(cuda_kernel_names()),
                         [](const auto& param_info) { return "k" + param_info.param; });

TEST(CudaSimulatedDevices, AreListedWithTheirChipsLimitsAndLabelledSimulated) {
  std::vector<std::string> names;
  for (const DeviceInfo& d : registry().backend("cuda").devices()) {
    if (!functional_simulation(d)) continue;
    names.push_back(d.name);
    ASSERT_TRUE(d.gpu);
    EXPECT_TRUE(contains(d.vendor, "simulated")) << d.vendor;
    EXPECT_TRUE(d.has_feature("simulated"));
  }
  ASSERT_EQ(names, (std::vector<std::string>{"sim-sm_90a", "sim-sm_80"}));
  const auto devices = registry().backend("cuda").devices();
  const auto& h100 = *std::find_if(devices.begin(), devices.end(), [](const DeviceInfo& d) { return d.name == "sim-sm_90a"; });
  EXPECT_EQ(h100.gpu->compute_capability, 90);
  EXPECT_EQ(h100.gpu->multiprocessors, gpu_part("sm_90a").limits.multiprocessors);
  EXPECT_EQ(h100.gpu->shared_bytes_per_block_optin, gpu_part("sm_90a").limits.shared_bytes_per_block_optin);
}

TEST(CudaSimulatedDevices, HaveNoTimeOfTheirOwn) {
  Backend& backend = registry().backend("cuda");
  for (const DeviceInfo& info : backend.devices()) {
    if (!functional_simulation(info)) continue;
    const auto device = backend.open(info.index);
    EXPECT_THROW(device->time_once([] {}), std::invalid_argument) << info.name;
  }
}

// Without a GPU, device 0 of the cuda backend is simulated: run validates and counts, untimed;
// tune, which needs a time, is a usage error.
TEST(CudaSimulatedDevices, RunReportsCountsAndNoTimeAndTuneRefuses) {
  if (!functional_simulation(registry().backend("cuda").devices().front())) GTEST_SKIP() << "a GPU is device 0 here";
  const testing::CliResult run =
      testing::run_cli("run --backend cuda --kernel 03_smem_tiled --m 37 --n 29 --k 13 --no-cache --json");
  ASSERT_EQ(run.status, 0) << run;
  const nlohmann::json j = testing::parse_json(run);
  EXPECT_EQ(j["simulated"], true);
  EXPECT_TRUE(j["gflops"].is_null()) << run.out;
  EXPECT_GT(j["simulated_counts"]["fma_flops"].get<double>(), 0);
  EXPECT_GT(j["simulated_counts"]["global_load_sectors"].get<double>(), 0);
  // 03's default block has 32 x 32 threads: an SM holds at most 2048 threads, so at most 2 blocks.
  const nlohmann::json& c = j["simulated_counts"];
  EXPECT_GT(c["registers_per_thread"].get<double>(), 0);
  EXPECT_GE(c["blocks_per_sm"].get<double>(), 1);
  EXPECT_LE(c["blocks_per_sm"].get<double>(), 2);
  EXPECT_EQ(c["warps_per_sm"].get<double>(), 32 * c["blocks_per_sm"].get<double>());
  EXPECT_EQ(c["shared_bytes_per_block"].get<double>(), 2 * 32 * 32 * 4);
  const testing::CliResult tune = testing::run_cli("tune --backend cuda --kernel 01_naive --m 64 --n 64 --k 64");
  EXPECT_EQ(tune.status, 2) << tune;
  EXPECT_TRUE(contains(tune.err, "simulated")) << tune;
}

// ---- The simulator's sanitizer on deliberately faulty CUDA kernels (NVRTC, sm_80) -------------

// Compiles `body` as `extern "C" __global__ void k(const float* in, float* out)` and runs one CTA
// of `threads` threads on the PTX simulator, with `threads` floats of input and output. Returns
// the simulator's error, "" when the launch passes.
std::string simulate_faulty(const std::string& body, unsigned threads) {
  const cuda::CompiledModule module =
      cuda::compile({.source_name = "faulty.cu",
                     .source = "extern \"C\" __global__ void k(const float* in, float* out) {\n" + body + "\n}\n",
                     .headers = {}, .options = {}, .arch = "sm_80"});
  std::vector<float> in(threads, 1.0f), out(threads, 0.0f);
  const void* in_data = in.data();
  void* out_data = out.data();
  ptx::sim::Launch l;
  l.block = {threads, 1, 1};
  l.args = {&in_data, &out_data};
  const auto begin = [](const void* data) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(data)); };
  l.regions = {{.begin = begin(in_data), .end = begin(in_data) + threads * 4, .name = "in"},
               {.begin = begin(out_data), .end = begin(out_data) + threads * 4, .name = "out"}};
  l.label = "faulty kernel";
  try {
    ptx::sim::launch(*ptx::sim::Program::load(module.ptx, "k"), l);
  } catch (const ptx::sim::LaunchError& e) {
    return e.what();
  }
  return "";
}

TEST(CudaSanitizer, AnOutOfBoundsStoreIsReportedAtTheStore) {
  const std::string error = simulate_faulty("out[threadIdx.x + 1] = in[threadIdx.x];", 64);
  for (const char* part : {"st.global.f32", "outside every buffer", "thread (63,0,0)"})
    EXPECT_TRUE(contains(error, part)) << part << ": " << error;
}

TEST(CudaSanitizer, AMissingSyncthreadsIsReportedAtTheRead) {
  const std::string exchange = "__shared__ float s[64];\ns[threadIdx.x] = in[threadIdx.x] + threadIdx.x;\n";
  const std::string read = "out[threadIdx.x] = s[63 - threadIdx.x];";
  const std::string error = simulate_faulty(exchange + read, 64);
  for (const char* part : {"ld.shared.f32", "wrote since the last barrier", "thread (32,0,0)"})
    EXPECT_TRUE(contains(error, part)) << part << ": " << error;
  EXPECT_EQ(simulate_faulty(exchange + "__syncthreads();\n" + read, 64), "");
}

TEST(CudaSanitizer, AMissingCpAsyncWaitIsReportedAtTheRead) {
  const std::string copy =
      "__shared__ float s[64];\n"
      "const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(s + threadIdx.x));\n"
      "asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4;\" :: \"r\"(dst), \"l\"(in + threadIdx.x));\n"
      "asm volatile(\"cp.async.commit_group;\");\n";
  const std::string read = "__syncthreads();\nout[threadIdx.x] = s[63 - threadIdx.x];";
  const std::string error = simulate_faulty(copy + read, 64);
  for (const char* part : {"ld.shared.f32", "in flight"}) EXPECT_TRUE(contains(error, part)) << part << ": " << error;
  EXPECT_EQ(simulate_faulty(copy + "asm volatile(\"cp.async.wait_group 0;\");\n" + read, 64), "");
}

TEST(CudaSanitizer, ADivergentSyncthreadsIsReported) {
  const std::string error = simulate_faulty("if (threadIdx.x % 32 < 16) __syncthreads();\nout[threadIdx.x] = 1.0f;", 64);
  for (const char* part : {"bar.sync", "only some of the warp's lanes"})
    EXPECT_TRUE(contains(error, part)) << part << ": " << error;
}

TEST(CliVerify, CompileOnlyChecksCudaKernelsWithoutADevice) {
  const testing::CliResult r = testing::run_cli("verify --backend cuda --kernel 01_naive --compile-only --json");
  ASSERT_EQ(r.status, 0) << r;
  const nlohmann::json j = testing::parse_json(r);
  EXPECT_GT(j["passed"].get<int>(), 0) << r;
  EXPECT_EQ(j["failed"], 0) << r;
  for (const auto& c : j["cases"]) {
    for (const char* key : {"target", "precision", "params", "registers", "shared_bytes", "spill_bytes", "ptx_forms"})
      EXPECT_TRUE(c.contains(key)) << key;
    // The forms the simulator decoded: 01's dot product is fma.rn in the case's precision.
    const std::string fma = c["precision"] == "fp64" ? "fma.rn.f64" : "fma.rn.f32";
    EXPECT_TRUE(c["ptx_forms"].contains(fma)) << c["ptx_forms"].dump();
    EXPECT_GT(c["ptx_forms"].value(fma, 0), 0);
  }
}

// What the simulated device will execute: the PTX NVRTC produces on the way to each kernel's
// CUBIN, for every compile target and precision at the default configuration, parses into the
// kernel `gemm` with the contract's parameters (two tensor maps more for the TMA kernels), and
// every branch goes to a label of the kernel.
TEST(CudaPtx, EveryKernelsPtxParsesIntoItsEntryWithEveryBranchTargetDefined) {
  for (const Kernel* k : registry().kernels("cuda"))
    for (const CompileTarget& t : k->compile_targets())
      for (Precision p : k->precisions()) {
        const std::string where = std::string(k->name()) + " " + t.name + " " + std::string(to_string(p));
        const Config config = k->default_config(t.device, p);
        const cuda::CompiledModule compiled = cuda::compile(cuda::compile_request(std::string(k->name()), config, p, t.name));
        ASSERT_FALSE(compiled.ptx.empty()) << where;
        const ptx::Module module = ptx::parse(compiled.ptx);
        ASSERT_EQ(module.targets.size(), 1u) << where;
        EXPECT_EQ(module.targets[0], t.name) << where;
        const ptx::Kernel& gemm = module.kernel("gemm");
        EXPECT_TRUE(gemm.entry) << where;
        const std::size_t tensor_maps = k->name().starts_with("11_") || k->name().starts_with("12_") ? 2 : 0;
        EXPECT_EQ(gemm.params.size(), 11u + tensor_maps) << where;
        EXPECT_GT(gemm.body.size(), 20u) << where;
        for (const ptx::Instruction& in : gemm.body)
          if (in.opcode == "bra") {
            ASSERT_EQ(in.operands.size(), 1u) << where << ": " << in.text;
            EXPECT_TRUE(gemm.labels.contains(in.operands[0].name)) << where << ": " << in.text;
          }
      }
}

}  // namespace
}  // namespace gemmlab
