// The CPU backend: detection of the host, device memory and timing, and the
// GEMMLAB_CPU_DISABLE switch that hides instruction sets to exercise the unsupported path.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/evaluate.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/verify.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::ScopedEnv;

std::string features_of(const DeviceInfo& d) {
  std::string out;
  for (const auto& f : d.features) out += f + " ";
  return out;
}

TEST(CpuDetect, ReportsCoresCachesAndClock) {
  const DeviceInfo d = cpu::detect();
  EXPECT_EQ(d.backend, "cpu");
  EXPECT_EQ(d.index, 0);
  EXPECT_GE(d.cores, 1);
  EXPECT_GT(d.clock_ghz, 0.0) << "no clock frequency found in sysfs or /proc/cpuinfo";
  EXPECT_LT(d.clock_ghz, 10.0) << "implausible clock " << d.clock_ghz << " GHz";
  ASSERT_FALSE(d.caches.empty()) << "no caches read from sysfs or cpuid";
  for (const CacheLevel& c : d.caches) {
    EXPECT_GE(c.level, 1);
    EXPECT_LE(c.level, 4);
    EXPECT_GT(c.size_bytes, 0) << "L" << c.level << " " << c.type;
    EXPECT_GE(c.shared_by_cores, 1);
    EXPECT_TRUE(c.type == "Data" || c.type == "Instruction" || c.type == "Unified") << "cache type " << c.type;
  }
  EXPECT_GT(d.cache_bytes(1), 0) << "no L1 data cache";
  EXPECT_GT(d.cache_bytes(2), 0) << "no L2 cache";
  EXPECT_FALSE(d.measured.has_value()) << "detect() must not measure";
}

// Golden registers built from the documented layout of cpuid leaf 4 / 0x8000001D (Intel SDM vol. 2A,
// AMD APM vol. 3): size = ways * partitions * line size * sets, each field stored minus one.
TEST(CpuidCaches, DeterministicCacheParametersDecodeToSizeLevelTypeAndSharing) {
  // L1 data, level 1, up to 2 logical processors; 12 ways, 1 partition, 64-byte lines, 64 sets.
  const auto l1 = cpu::cache_from_cpuid_subleaf(0x1u | (1u << 5) | (1u << 14), (11u << 22) | 63u, 63u);
  ASSERT_TRUE(l1.has_value());
  EXPECT_EQ(l1->type, "Data");
  EXPECT_EQ(l1->level, 1);
  EXPECT_EQ(l1->size_bytes, 48 * 1024);
  EXPECT_EQ(l1->shared_by_cores, 2);
  // Unified level 3, up to 64 logical processors; 16 ways, 2 partitions, 64-byte lines, 16384 sets.
  const auto l3 = cpu::cache_from_cpuid_subleaf(0x3u | (3u << 5) | (63u << 14), (15u << 22) | (1u << 12) | 63u,
                                                16383u);
  ASSERT_TRUE(l3.has_value());
  EXPECT_EQ(l3->type, "Unified");
  EXPECT_EQ(l3->level, 3);
  EXPECT_EQ(l3->size_bytes, 32ll * 1024 * 1024);
  EXPECT_EQ(l3->shared_by_cores, 64);
  const auto instruction = cpu::cache_from_cpuid_subleaf(0x2u | (1u << 5), 7u << 22 | 63u, 63u);
  ASSERT_TRUE(instruction.has_value());
  EXPECT_EQ(instruction->type, "Instruction");
  EXPECT_EQ(instruction->size_bytes, 32 * 1024);
  EXPECT_FALSE(cpu::cache_from_cpuid_subleaf(0u, 0xffffffffu, 0xffffffffu).has_value()) << "type 0 ends the list";
}

TEST(CpuidCaches, AmdLegacyLeavesGiveL1L2PrivateAndL3SharedByAllCores) {
  // 0x80000005: ECX[31:24] = 32 KiB L1d, EDX[31:24] = 64 KiB L1i; 0x80000006: ECX[31:16] = 512 KiB
  // L2, EDX[31:18] = 64 units of 512 KiB = 32 MiB L3.
  const auto caches = cpu::caches_from_amd_legacy_leaves(32u << 24, 64u << 24, 512u << 16, 64u << 18, 8);
  ASSERT_EQ(caches.size(), 4u);
  EXPECT_EQ(caches[0].level, 1);
  EXPECT_EQ(caches[0].type, "Data");
  EXPECT_EQ(caches[0].size_bytes, 32 * 1024);
  EXPECT_EQ(caches[1].type, "Instruction");
  EXPECT_EQ(caches[1].size_bytes, 64 * 1024);
  EXPECT_EQ(caches[2].level, 2);
  EXPECT_EQ(caches[2].size_bytes, 512 * 1024);
  EXPECT_EQ(caches[2].shared_by_cores, 1);
  EXPECT_EQ(caches[3].level, 3);
  EXPECT_EQ(caches[3].size_bytes, 32ll * 1024 * 1024);
  EXPECT_EQ(caches[3].shared_by_cores, 8);
  EXPECT_TRUE(cpu::caches_from_amd_legacy_leaves(0, 0, 0, 0, 8).empty()) << "zero sizes mean no cache";
}

TEST(CpuDetect, PeakAndVectorWidthFollowFromTheFeatures) {
  const DeviceInfo d = cpu::detect();
  const int expected_width = d.has_feature("avx512f") ? 512 : d.has_feature("avx") ? 256 : 128;
  EXPECT_EQ(d.simd_width_bits, expected_width) << "features: " << features_of(d);
  EXPECT_GE(d.fma_units_per_core, 1);
  EXPECT_GT(d.peak_gflops_fp32, 0.0);
  EXPECT_DOUBLE_EQ(d.peak_gflops_fp64, d.peak_gflops_fp32 / 2);
  const double fma = d.has_feature("fma") ? 2.0 : 1.0;
  EXPECT_NEAR(d.peak_gflops_fp32, d.cores * d.clock_ghz * d.fma_units_per_core * (d.simd_width_bits / 32.0) * fma,
              1e-9 * d.peak_gflops_fp32);
#if defined(__x86_64__)
  EXPECT_TRUE(d.has_feature("sse2")) << "every x86-64 CPU has SSE2; features: " << features_of(d);
#endif
}

TEST(DeviceInfo, HasFeatureAndCacheBytesLookUpTheLists) {
  DeviceInfo d;
  d.features = {"avx2", "fma"};
  d.caches = {{1, "Instruction", 32768, 1}, {1, "Data", 49152, 1}, {2, "Unified", 2 << 20, 1}};
  EXPECT_TRUE(d.has_feature("avx2"));
  EXPECT_FALSE(d.has_feature("avx512f"));
  EXPECT_FALSE(d.has_feature("avx"));
  EXPECT_EQ(d.cache_bytes(1), 49152) << "L1 must be the data cache, not the instruction cache";
  EXPECT_EQ(d.cache_bytes(2), 2 << 20);
  EXPECT_EQ(d.cache_bytes(3), 0) << "unknown level: 0";
}

TEST(DeviceInfo, TheFingerprintFollowsTheModelNotTheMomentaryClock) {
  const DeviceInfo d = cpu::detect();
  DeviceInfo other_clock = d;
  other_clock.clock_ghz += 0.7;  // the OS reports the current clock, which varies
  other_clock.measured.reset();
  EXPECT_EQ(fingerprint(other_clock), fingerprint(d));
  EXPECT_EQ(fingerprint(cpu::detect()), fingerprint(d)) << "stable across detections";
  DeviceInfo more_cores = d;
  more_cores.cores += 1;
  EXPECT_NE(fingerprint(more_cores), fingerprint(d));
  DeviceInfo fewer_features = d;
  fewer_features.features.pop_back();
  EXPECT_NE(fingerprint(fewer_features), fingerprint(d));
  EXPECT_TRUE(fingerprint(d).starts_with("cpu:" + d.name)) << fingerprint(d);
}

TEST(DeviceInfo, JsonCarriesTheGpuLimitsOfAGpuAndNoneForTheCpu) {
  DeviceInfo gpu;
  gpu.backend = "cuda";
  gpu.gpu = GpuLimits{.compute_capability = 90, .multiprocessors = 132, .shared_bytes_per_block_optin = 232448};
  const nlohmann::json j = gpu;
  ASSERT_TRUE(j.contains("gpu"));
  EXPECT_EQ(j["gpu"]["compute_capability"], 90);
  EXPECT_EQ(j["gpu"]["multiprocessors"], 132);
  EXPECT_EQ(j["gpu"]["shared_bytes_per_block_optin"], 232448);
  EXPECT_FALSE(nlohmann::json(cpu::detect()).contains("gpu"));
}

TEST(CpuBackend, ListsOneDeviceAndOpensOnlyIndexZero) {
  Backend& backend = registry().backend("cpu");
  EXPECT_EQ(backend.name(), "cpu");
  const auto devices = backend.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].index, 0);
  auto device = backend.open(0);
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(device->info().name, devices[0].name);
  EXPECT_EQ(device->info().cores, devices[0].cores);
  EXPECT_THROW_MENTIONING(backend.open(1), std::invalid_argument, {"1"});
  EXPECT_THROW(backend.open(-1), std::invalid_argument);
}

TEST(CpuDevice, MemoryIsAlignedAndCopiesRoundTrip) {
  auto device = registry().backend("cpu").open(0);
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{4096}}) {
    auto buffer = device->allocate(bytes);
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(buffer->bytes(), bytes);
    ASSERT_NE(buffer->data(), nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer->data()) % 64, 0u);
    std::vector<unsigned char> in(bytes), out(bytes, 0);
    for (std::size_t i = 0; i < bytes; ++i) in[i] = static_cast<unsigned char>(i * 7 + 1);
    device->upload(*buffer, in.data(), bytes);
    device->synchronize();
    device->download(out.data(), *buffer, bytes);
    EXPECT_EQ(in, out) << bytes << " bytes";
  }
}

TEST(CpuDevice, TimeOnceRunsTheLaunchOnce) {
  auto device = registry().backend("cpu").open(0);
  int calls = 0;
  const double t = device->time_once([&] { ++calls; });
  EXPECT_EQ(calls, 1);
  EXPECT_GE(t, 0.0);
}

TEST(CpuDisable, HidesTheListedFeaturesFromDetect) {
  const ScopedEnv env("GEMMLAB_CPU_DISABLE", "avx512f,avx2");
  const DeviceInfo d = cpu::detect();
  EXPECT_FALSE(d.has_feature("avx512f")) << "features: " << features_of(d);
  EXPECT_FALSE(d.has_feature("avx2")) << "features: " << features_of(d);
  EXPECT_LE(d.simd_width_bits, 256);
}

TEST(CpuDisable, OnlyTheListedFeaturesAreHidden) {
  const DeviceInfo native = cpu::detect();
  const ScopedEnv env("GEMMLAB_CPU_DISABLE", "avx512f");
  const DeviceInfo d = cpu::detect();
  EXPECT_FALSE(d.has_feature("avx512f"));
  for (const char* f : {"sse2", "avx", "avx2", "fma"})
    EXPECT_EQ(d.has_feature(f), native.has_feature(f)) << f << " should not be affected";
}

TEST(CpuDisable, UnsetVariableRestoresTheNativeFeatures) {
  const DeviceInfo before = cpu::detect();
  { const ScopedEnv env("GEMMLAB_CPU_DISABLE", "avx512f,avx2,fma,avx,sse2"); }
  const DeviceInfo after = cpu::detect();
  EXPECT_EQ(after.features, before.features);
}

TEST(CpuDisable, Kernels04And05ReportUnsupportedNamingTheInstructionSet) {
  const ScopedEnv env("GEMMLAB_CPU_DISABLE", "avx512f,avx2");
  const DeviceInfo d = cpu::detect();
  const Support s04 = registry().kernel("cpu", "04_register_blocked_avx2").supported(d);
  EXPECT_FALSE(s04.ok);
  EXPECT_TRUE(testing::mentions_word(s04.reason, "avx2")) << "reason: " << s04.reason;
  const Support s05 = registry().kernel("cpu", "05_packed_avx512").supported(d);
  EXPECT_FALSE(s05.ok);
  EXPECT_TRUE(testing::mentions_word(s05.reason, "avx512f")) << "reason: " << s05.reason;
  for (const char* portable : {"01_naive", "02_loop_order", "03_cache_blocked"}) {
    const Support s = registry().kernel("cpu", portable).supported(d);
    EXPECT_TRUE(s.ok) << portable << " needs no vector extension, yet: " << s.reason;
  }
}

TEST(CpuDisable, PrepareOnADeviceOpenedWithHiddenFeaturesThrowsUnsupported) {
  const ScopedEnv env("GEMMLAB_CPU_DISABLE", "avx512f,avx2");
  auto device = registry().backend("cpu").open(0);  // detects in its constructor
  ASSERT_FALSE(device->info().has_feature("avx512f"));
  ASSERT_FALSE(device->info().has_feature("avx2"));
  const Problem p = Problem::packed(16, 16, 16);
  for (const auto& [name, feature] : {std::pair{"04_register_blocked_avx2", "avx2"}, std::pair{"05_packed_avx512", "avx512f"}}) {
    const Kernel& k = registry().kernel("cpu", name);
    const Config config = k.default_config(device->info(), p.precision);
    EXPECT_THROW_MENTIONING(k.prepare(*device, p, config), Unsupported, {feature}) << name;
    EvaluationOptions options;
    options.time = false;
    EXPECT_THROW(evaluate(*device, k, config, p, nullptr, nullptr, options), Unsupported) << name;
    const std::vector<VerifyCase> cases = verify_kernel(*device, k, nullptr, VerifyOptions{});
    ASSERT_EQ(cases.size(), 1u) << name << ": verify should report one unsupported case";
    EXPECT_EQ(cases[0].status, "unsupported");
    EXPECT_TRUE(testing::mentions_word(cases[0].validation.reason, feature)) << cases[0].validation.reason;
  }
  // The portable kernels still run and validate.
  EvaluationOptions options;
  options.time = false;
  const Kernel& k = registry().kernel("cpu", "03_cache_blocked");
  const Evaluation e = evaluate(*device, k, k.default_config(device->info(), p.precision), p, nullptr, nullptr, options);
  EXPECT_TRUE(e.validation.valid) << e.validation.reason;
}

TEST(CpuCeilings, MeasuredValuesArePositive) {
  // One core and a small triad (64 MiB per array when no cache is known): about a second.
  DeviceInfo info = cpu::detect();
  info.cores = 1;
  info.caches.clear();
  const MeasuredCeilings c = cpu::measure_ceilings(info);
  EXPECT_GT(c.triad_gb_per_s, 0.0);
  if (info.has_feature("avx512f") || (info.has_feature("avx2") && info.has_feature("fma"))) {
    EXPECT_GT(c.fma_gflops_fp32, 0.0);
    EXPECT_GT(c.fma_gflops_fp64, 0.0);
    EXPECT_GT(c.fma_gflops_fp32_one_core, 0.0);
    EXPECT_GT(c.fma_gflops_fp64_one_core, 0.0);
  }
}

// The FMA loop a benchmark alternates with its GEMM (cpu::run_fma_loop). Its operation count
// follows from the vector width (Intel SDM: a zmm register holds 16 fp32 or 8 fp64 values, a ymm
// half as many; an FMA is two operations per lane): fp64 does half fp32's work, the count grows
// with iterations and threads, and each iteration of a thread issues at least 8 vector FMAs
// (latency 4 x 2 pipes: fewer would leave the pipes idle and read low).
TEST(CpuCeilings, FmaRunCountsTheVectorOperationsOfTheLoop) {
  const DeviceInfo info = cpu::detect();
  const bool avx512 = info.has_feature("avx512f");
  if (!avx512 && !(info.has_feature("avx2") && info.has_feature("fma")))
    GTEST_SKIP() << "no FMA loop for this CPU";
  const double lanes_fp32 = avx512 ? 16 : 8;
  const cpu::FmaRun single = cpu::run_fma_loop(info, 1, Precision::fp32, 1000);
  EXPECT_GT(single.seconds, 0.0);
  const double fmas_per_iteration = single.flops / 1000 / (2 * lanes_fp32);
  EXPECT_EQ(fmas_per_iteration, std::floor(fmas_per_iteration)) << "whole vector FMAs";
  EXPECT_GE(fmas_per_iteration, 8.0);
  EXPECT_DOUBLE_EQ(cpu::run_fma_loop(info, 1, Precision::fp64, 1000).flops, single.flops / 2);
  EXPECT_DOUBLE_EQ(cpu::run_fma_loop(info, 1, Precision::fp32, 3000).flops, 3 * single.flops);
  const cpu::FmaRun two = cpu::run_fma_loop(info, 2, Precision::fp32, 1000);
  EXPECT_DOUBLE_EQ(two.flops, 2 * single.flops);
  EXPECT_GT(two.seconds, 0.0);
}

TEST(CpuCeilings, FmaRunIsEmptyWhereThereIsNoLoop) {
  DeviceInfo info = cpu::detect();
  for (const auto& [threads, precision, iterations] :
       {std::tuple{0, Precision::fp32, 1000L}, {1, Precision::fp32, 0L}, {1, Precision::bf16, 1000L}}) {
    const cpu::FmaRun run = cpu::run_fma_loop(info, threads, precision, iterations);
    EXPECT_EQ(run.flops, 0.0) << threads << " " << to_string(precision) << " " << iterations;
    EXPECT_EQ(run.seconds, 0.0);
  }
  info.features.clear();  // no AVX-512F, no AVX2 + FMA
  EXPECT_EQ(cpu::run_fma_loop(info, 1, Precision::fp32, 1000).flops, 0.0);
}

}  // namespace
}  // namespace gemmlab
