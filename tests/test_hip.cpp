// The HIP backend. Without an AMD GPU everything but running is checked: every kernel compiles with
// hipcc for every configured target at its default configuration and the extremes of its space;
// the listings say no default configuration uses scratch memory and that the matrix-core kernels
// contain their instructions; the listing reader and the spaces are checked on their own. Tests
// that run kernels skip with the reason when there is no HIP device.
#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

#include "cli_support.hpp"
#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/hip.hpp"
#include "gemmlab/verify.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::contains;

std::vector<std::string> hip_kernel_names() { return testing::kernel_names("hip"); }

bool is_matrix_core(const std::string& name) { return name == "09_mfma" || name == "10_wmma"; }

class EveryHipKernel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryHipKernel, CompilesForItsTargetsWithoutScratchAndWithItsInstructions) {
  const Kernel& kernel = registry().kernel("hip", GetParam());
  if (kernel.compile_targets().empty())
    GTEST_SKIP() << "none of this build's targets (GEMMLAB_HIP_TARGETS) runs " << GetParam();
  const auto cases = compile_check_kernel(kernel, {});
  ASSERT_FALSE(cases.empty());
  std::set<std::string> targets;
  for (const CompileCase& c : cases) {
    // compile_check_kernel fails a default configuration that uses scratch, and HipKernel fails a
    // matrix-core listing without its instruction.
    EXPECT_EQ(c.status, "passed") << c.kernel << " " << c.report.target << " " << to_string(c.precision) << " ["
                                  << to_string(c.config) << "]: " << c.reason;
    targets.insert(c.report.target);
    EXPECT_GT(c.report.registers, 0);
    EXPECT_GT(c.report.scalar_registers, 0);
    EXPECT_GT(c.report.instruction_classes.count("valu"), 0u);
    if (c.is_default) {
      EXPECT_EQ(c.report.spill_bytes, 0) << "scratch at the default configuration";
    }
    const auto found = c.report.instruction_classes.find("matrix");
    const int matrix = found == c.report.instruction_classes.end() ? 0 : found->second;
    if (is_matrix_core(c.kernel)) {
      EXPECT_GT(matrix, 0) << c.report.target;
    } else {
      EXPECT_EQ(matrix, 0) << "a SIMT kernel with matrix instructions";
    }
  }
  // Every configured target that has the kernel's instructions, and only those.
  std::set<std::string> expected;
  for (const std::string& t : hip::configured_targets())
    if (kernel.supported(hip::device_info_for_target(t)).ok) expected.insert(t);
  EXPECT_EQ(targets, expected);
  if (GetParam() == "09_mfma") {
    EXPECT_FALSE(targets.count("gfx1100")) << "no MFMA on RDNA3";
  }
  if (GetParam() == "10_wmma") {
    EXPECT_FALSE(targets.count("gfx90a")) << "no WMMA on CDNA";
  }
}

INSTANTIATE_TEST_SUITE_P(Hip, EveryHipKernel, ::testing::ValuesIn(hip_kernel_names()),
                         [](const auto& param_info) { return "k" + param_info.param; });

TEST(HipKernels, TheCurriculumIsTheCudaSimtStepsPlusTheMatrixCoreSteps) {
  EXPECT_EQ(hip_kernel_names(),
            (std::vector<std::string>{"01_naive", "02_coalesced", "03_smem_tiled", "04_1d_register_tiled",
                                      "05_2d_register_tiled", "06_vectorized", "07_warp_tiled", "09_mfma", "10_wmma"}));
  for (const Kernel* k : registry().kernels("hip")) EXPECT_TRUE(k->compilation() == Compilation::at_run_time_and_build) << k->name();
  EXPECT_EQ(registry().kernel("hip", "09_mfma").precisions(), (std::vector<Precision>{Precision::fp16, Precision::bf16}));
}

TEST(HipTargets, DescribeWaveSizeMatrixInstructionsAndLimits) {
  const DeviceInfo cdna = hip::device_info_for_target("gfx90a");
  ASSERT_TRUE(cdna.gpu);
  EXPECT_EQ(cdna.gpu->warp_size, 64);
  EXPECT_TRUE(cdna.has_feature("mfma"));
  EXPECT_FALSE(cdna.has_feature("wmma"));
  EXPECT_EQ(cdna.gpu->shared_bytes_per_block, 64 * 1024);
  const DeviceInfo rdna = hip::device_info_for_target("gfx1100");
  EXPECT_EQ(rdna.gpu->warp_size, 32);
  EXPECT_TRUE(rdna.has_feature("wmma"));
  EXPECT_EQ(hip::device_info_for_target("gfx940").gpu->warp_size, 64);
  EXPECT_THROW(hip::device_info_for_target("gfx803"), std::invalid_argument);
  EXPECT_THROW(hip::device_info_for_target("sm_90"), std::invalid_argument) << "an NVIDIA part";
}

// The targets' limits are the datasheet catalogue's AMD parts, and so are the clock and the
// compute units their peaks are computed from.
TEST(HipTargets, LimitsComeFromTheDatasheetCatalogue) {
  for (const char* target : {"gfx90a", "gfx940", "gfx942", "gfx1100"}) {
    const DeviceInfo d = hip::device_info_for_target(target);
    const nlohmann::json part = testing::catalogue_part(target);
    ASSERT_TRUE(part.is_object()) << target;
    testing::expect_catalogue_limits(*d.gpu, part);
    const nlohmann::json& v = part["limits"]["values"];
    EXPECT_EQ(d.cores, v["multiprocessors"]["value"].get<int>()) << target;
    EXPECT_DOUBLE_EQ(d.clock_ghz, v["clock_ghz"]["value"].get<double>()) << target;
    const double fp32_per_cu_clock = v["fp32_flops_per_cu_per_clock"]["value"].get<double>();
    EXPECT_DOUBLE_EQ(d.peak_gflops_fp32, d.cores * fp32_per_cu_clock * d.clock_ghz) << target;
    EXPECT_EQ(d.name, part["limits"].value("device_name", part["name"].get<std::string>())) << target;
  }
}

TEST(HipTargets, MatrixCoreKernelsRunOnlyWhereTheirInstructionsExist) {
  const Kernel& mfma = registry().kernel("hip", "09_mfma");
  const Kernel& wmma = registry().kernel("hip", "10_wmma");
  EXPECT_TRUE(mfma.supported(hip::device_info_for_target("gfx90a")).ok);
  EXPECT_FALSE(mfma.supported(hip::device_info_for_target("gfx1100")).ok);
  EXPECT_TRUE(wmma.supported(hip::device_info_for_target("gfx1100")).ok);
  EXPECT_FALSE(wmma.supported(hip::device_info_for_target("gfx90a")).ok);
  EXPECT_FALSE(mfma.supported(DeviceInfo{}).ok) << "no device: compiled only";
}

TEST(HipSpaces, WaveSizeAndRegisterBudgetsAreConstraints) {
  const DeviceInfo cdna = hip::device_info_for_target("gfx90a");
  const DeviceInfo rdna = hip::device_info_for_target("gfx1100");
  const Kernel& mfma = registry().kernel("hip", "09_mfma");
  const SearchSpace s = mfma.space(cdna, Precision::fp16);
  // 16 blocks per wave: 520 estimated VGPRs, more than a lane has even with one wave per SIMD.
  EXPECT_FALSE(s.is_valid({{"WAVES_M", 2}, {"WAVES_N", 2}, {"BLOCKS_M", 4}, {"BLOCKS_N", 4}}));
  // 8 blocks: fits with 4 waves (one per SIMD), not with 16 (four per SIMD share its registers).
  EXPECT_TRUE(s.is_valid({{"WAVES_M", 2}, {"WAVES_N", 2}, {"BLOCKS_M", 4}, {"BLOCKS_N", 2}}));
  EXPECT_FALSE(s.is_valid({{"WAVES_M", 4}, {"WAVES_N", 4}, {"BLOCKS_M", 4}, {"BLOCKS_N", 2}}));
  const SearchSpace w = registry().kernel("hip", "10_wmma").space(rdna, Precision::bf16);
  EXPECT_TRUE(w.is_valid({{"WAVES_M", 2}, {"WAVES_N", 2}, {"BLOCKS_M", 2}, {"BLOCKS_N", 2}}));
  EXPECT_FALSE(w.is_valid({{"WAVES_M", 2}, {"WAVES_N", 2}, {"BLOCKS_M", 4}, {"BLOCKS_N", 2}})) << "spills";
  // Work-groups are whole waves: 07's one warp tile, 32 work-items, is a whole RDNA wave and half
  // a CDNA one; two warp tiles are a whole wave on both.
  const Kernel& warp_tiled = registry().kernel("hip", "07_warp_tiled");
  const Config one_warp{{"BM", 32}, {"BN", 32},     {"BK", 8}, {"WM", 32},
                        {"WN", 32}, {"WNITER", 1}, {"TM", 4}, {"TN", 4}};
  Config two_warps = one_warp;
  two_warps["BN"] = 64;
  EXPECT_TRUE(warp_tiled.space(rdna, Precision::fp32).is_valid(one_warp));
  EXPECT_FALSE(warp_tiled.space(cdna, Precision::fp32).is_valid(one_warp));
  EXPECT_TRUE(warp_tiled.space(cdna, Precision::fp32).is_valid(two_warps));
  // The CUDA default of 05 needs more than the 128 VGPRs hipcc gives a gfx1100 lane; CDNA takes it.
  const Kernel& tiled = registry().kernel("hip", "05_2d_register_tiled");
  const Config cuda_default{{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}};
  EXPECT_TRUE(tiled.space(cdna, Precision::fp32).is_valid(cuda_default));
  EXPECT_FALSE(tiled.space(rdna, Precision::fp32).is_valid(cuda_default));
  EXPECT_TRUE(tiled.space(rdna, Precision::fp32).is_valid(tiled.default_config(rdna, Precision::fp32)));
}

// Every HIP space, on every target and in every precision: each constraint with its why,
// the whole-wave constraint on the spec's `threads`, and the tile of C a work-group covers named
// `tile_m`, `tile_n` (the SIMT steps that stage A and B in LDS, and the matrix-core steps).
TEST(HipSpaces, DeclareExpressionsWholeWavesAndTheTileOfC) {
  for (const Kernel* k : registry().kernels("hip"))
    for (const char* target : {"gfx90a", "gfx940", "gfx1100"}) {
      const DeviceInfo d = hip::device_info_for_target(target);
      if (!k->supported(d).ok) continue;
      for (Precision p : k->precisions()) {
        const SearchSpace s = k->space(d, p);
        const std::string where = std::string(k->name()) + " " + target + " " + std::string(to_string(p));
        for (const Constraint& c : s.constraints()) EXPECT_FALSE(c.why.empty()) << where << ": " << c.text << " says not why";
        EXPECT_EQ(std::count_if(s.constraints().begin(), s.constraints().end(),
                                [](const Constraint& c) { return c.text == "threads % warp_size == 0"; }),
                  1)
            << where;
        ASSERT_NE(s.find_named_value("warp_size"), nullptr) << where;
        EXPECT_EQ(s.find_named_value("warp_size")->value, d.gpu->warp_size) << where;
        const Config c = k->default_config(d, p);
        const std::string name(k->name());
        if (name == "01_naive" || name == "02_coalesced") {
          EXPECT_EQ(s.find_named_value("tile_m"), nullptr) << where;
        } else if (name == "03_smem_tiled") {
          EXPECT_EQ(s.value_of("tile_m", c), c.at("TILE")) << where;
        } else if (is_matrix_core(name)) {
          const ParamValue block = name == "09_mfma" ? 32 : 16;
          EXPECT_EQ(s.value_of("tile_m", c), block * c.at("WAVES_M") * c.at("BLOCKS_M")) << where;
          EXPECT_EQ(s.value_of("tile_n", c), block * c.at("WAVES_N") * c.at("BLOCKS_N")) << where;
        } else {
          EXPECT_EQ(s.value_of("tile_m", c), c.at("BM")) << where;
          EXPECT_EQ(s.value_of("tile_n", c), c.at("BN")) << where;
        }
      }
    }
}

TEST(HipCompiler, ReadsTheListingsResourcesAndInstructions) {
  const std::string listing = R"(	.text
	.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
	.protected	gemm
	.globl	gemm
gemm:                                   ; @gemm
; %bb.0:
	s_load_dwordx4 s[0:3], s[4:5], 0x0
	s_waitcnt lgkmcnt(0)
	v_mov_b32_e32 v1, 0
	global_load_dwordx2 v[2:3], v1, s[0:1]
	ds_read_b64 v[4:5], v1
.LBB0_1:                                ; %loop
	v_mfma_f32_32x32x8f16 a[0:15], v[2:3], v[4:5], a[0:15]
	v_mfma_f32_32x32x8f16 a[16:31], v[2:3], v[4:5], a[16:31]
	s_add_u32 s6, s6, 8
	s_cbranch_scc1 .LBB0_1
	s_endpgm
.Lfunc_end0:
	.size	gemm, .Lfunc_end0-gemm
	v_add_f32 v0, v0, v0 ; after the function: not counted
  - .agpr_count:     32
    .group_segment_fixed_size: 8192
    .private_segment_fixed_size: 0
    .sgpr_count:     24
    .vgpr_count:     6
    .wavefront_size: 64
)";
  const hip::IsaReport r = hip::parse_isa(listing);
  EXPECT_TRUE(r.known);
  EXPECT_EQ(r.vgprs, 6);
  EXPECT_EQ(r.agprs, 32);
  EXPECT_EQ(r.sgprs, 24);
  EXPECT_EQ(r.lds_bytes, 8192);
  EXPECT_EQ(r.scratch_bytes, 0);
  EXPECT_EQ(r.wavefront_size, 64);
  EXPECT_EQ(r.matrix_instructions, (std::map<std::string, int>{{"v_mfma_f32_32x32x8f16", 2}}));
  EXPECT_EQ(r.instruction_classes, (std::map<std::string, int>{{"branch", 2},
                                                               {"global_memory", 1},
                                                               {"lds", 1},
                                                               {"matrix", 2},
                                                               {"salu", 1},
                                                               {"scalar_memory", 1},
                                                               {"valu", 1},
                                                               {"wait", 1}}));
  EXPECT_FALSE(hip::parse_isa("gemm:\n\ts_endpgm\n").known) << "no metadata: resources unknown";
}

TEST(HipCompiler, AProgramThatDoesNotCompileIsAnErrorWithHipccsMessage) {
  const hip::CompileRequest request{.source_name = "broken.hip",
                                    .source = "extern \"C\" __global__ void gemm() { undeclared_name = 1; }\n",
                                    .headers = {},
                                    .options = {},
                                    .target = "gfx90a"};
  try {
    hip::compile_assembly(request);
    FAIL() << "compiled";
  } catch (const hip::CompileError& e) {
    EXPECT_TRUE(contains(e.what(), "undeclared_name")) << e.what();
    EXPECT_TRUE(contains(e.what(), "gfx90a")) << e.what();
  }
}

TEST(HipCompiler, ACompileOnlyOutsideTheSpaceIsAConfigErrorBeforeHipccRuns) {
  const Kernel& mfma = registry().kernel("hip", "09_mfma");
  const CompileTarget target{"gfx90a", hip::device_info_for_target("gfx90a")};
  EXPECT_THROW(mfma.compile_only(target, Precision::fp16, {{"WAVES_M", 3}, {"WAVES_N", 2}, {"BLOCKS_M", 2}, {"BLOCKS_N", 2}}),
               ConfigError);
}

TEST(HipBackend, RunsEveryKernelWhereAnAmdGpuIsPresent) {
  Backend& backend = registry().backend("hip");
  if (backend.devices().empty())
    GTEST_SKIP() << "no HIP device on this machine (no AMD GPU or no ROCm runtime): kernels are compiled and "
                    "layout-checked only";
  const EvaluationSetup setup = open_evaluation(backend, {.timed_reference = false});
  Device* device = setup.device.get();
  VerifyOptions options;
  options.shapes = {parse_shape("1x1x1"), parse_shape("7x13x5"), parse_shape("127x129x131"), parse_shape("513x257x1")};
  testing::expect_every_supported_kernel_verifies("hip", *device, setup.truth.get(), options);
}

TEST(HipBackend, WithoutADeviceOpeningOneIsAClearError) {
  Backend& backend = registry().backend("hip");
  if (!backend.devices().empty()) GTEST_SKIP() << "a HIP device is present";
  try {
    backend.open(0);
    FAIL() << "opened a device that is not there";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "no HIP device 0")) << e.what();
  }
  const testing::CliResult r = testing::run_cli("run --backend hip --kernel 09_mfma --precision fp16 --m 64 --n 64 --k 64");
  EXPECT_EQ(r.status, 2) << r;
  EXPECT_TRUE(contains(r.err, "HIP")) << r;
}

TEST(CliKernels, HipListingReportsResourcesAndInstructionsPerTarget) {
  // The user's module cache, which the build filled with these compilations (the tests' own
  // XDG_CACHE_HOME would start empty and compile them again).
  const char* home = std::getenv("HOME");
  const std::string env = home != nullptr ? "XDG_CACHE_HOME=" + std::string(home) + "/.cache" : "";
  const testing::CliResult r = testing::run_cli("kernels --backend hip --json", env);
  ASSERT_EQ(r.status, 0) << r;
  const nlohmann::json j = testing::parse_json(r);
  int matrix_reports = 0;
  for (const auto& k : j["kernels"]) {
    ASSERT_TRUE(k.contains("targets")) << k["name"];
    for (const auto& t : k["targets"]) {
      ASSERT_FALSE(t.contains("error")) << t;
      // The compile report's one JSON shape (AMD: registers are VGPRs, spill_bytes scratch).
      for (const char* key : {"target", "precision", "params", "registers", "scalar_registers", "accumulation_registers",
                              "shared_bytes", "shared_limit", "spill_bytes", "stack_bytes", "instruction_classes"})
        EXPECT_TRUE(t.contains(key)) << key;
      EXPECT_GT(t["registers"].get<int>(), 0) << k["name"] << " " << t["target"];
      EXPECT_EQ(t["spill_bytes"], 0) << k["name"] << " " << t["target"];
      matrix_reports += !t["matrix_instructions"].empty();
    }
  }
  EXPECT_EQ(matrix_reports, 2 * static_cast<int>(hip::configured_targets().size()))
      << "09_mfma on each CDNA target and 10_wmma on gfx1100, fp16 and bf16";
}

}  // namespace
}  // namespace gemmlab
