// The Kokkos backend on the execution spaces of the installed Kokkos (Serial in CI): every kernel on
// the verification plan in fp32 and fp64 with padded leading dimensions, both KokkosBlas::gemm
// references against the fp64 host reference, configurations outside a space rejected with the
// broken constraint named, and the CLI's run / verify / tune / devices on the backend.
#include <array>
#include <iostream>
#include <cmath>
#include <limits>

#include "cli_support.hpp"
#include "gemmlab/kokkos.hpp"
#include "gemmlab/validate.hpp"
#include "gemmlab/verify.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

namespace gemmlab::kokkos {
namespace {

using namespace gemmlab::testing;
using nlohmann::json;

Backend& backend() { return registry().backend("kokkos"); }

TEST(KokkosBackend, HasADevicePerExecutionSpace) {
  const auto devices = backend().devices();
  ASSERT_EQ(static_cast<int>(devices.size()), space_count());
  ASSERT_GE(devices.size(), 1u);
  for (const DeviceInfo& d : devices) {
    EXPECT_EQ(d.backend, "kokkos");
    EXPECT_GE(d.cores, 1);
    const SpaceLimits limits = space_limits(d.index);
    EXPECT_TRUE(d.has_feature("kokkos-" + limits.space)) << d.name;
    EXPECT_NE(d.name.find(limits.space), std::string::npos) << d.name;
    EXPECT_GE(limits.team_size_max, 1);
    EXPECT_GE(limits.vector_length_max, 1);
    EXPECT_GT(limits.scratch_bytes_max, 0);
  }
  EXPECT_THROW_MENTIONING(backend().open(space_count()), std::invalid_argument, {"kokkos", "device"});
}

TEST(KokkosDevice, CopiesRoundTripThroughTheSpacesMemory) {
  auto device = backend().open(0);
  std::vector<double> in(1000), out(1000, 0.0);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = 0.5 * static_cast<double>(i) - 3;
  auto buffer = device->allocate(in.size() * sizeof(double));
  ASSERT_EQ(buffer->bytes(), in.size() * sizeof(double));
  device->upload(*buffer, in.data(), buffer->bytes());
  device->download(out.data(), *buffer, buffer->bytes());
  EXPECT_EQ(in, out);
}

// One test per kernel and precision, so that CTest runs them in parallel (under AddressSanitizer
// at -O0 the whole plan takes minutes).
void expect_verification_plan_passes(const std::string& name, Precision precision) {
  auto device = backend().open(0);
  VerifyOptions options;
  options.padded_leading_dimensions = true;
  options.precisions = {precision};
  int cases = 0;
  for (const VerifyCase& c : verify_kernel(*device, registry().kernel("kokkos", name), &openblas(), options)) {
    ++cases;
    EXPECT_EQ(c.status, "passed") << c.kernel << " " << c.problem.shape() << " lda=" << c.problem.lda << " "
                                  << to_string(c.problem.precision) << " {" << to_string(c.config)
                                  << "}: " << c.validation.reason;
  }
  // 7 shapes, 2 scalar pairs, packed and padded, at least the default configuration.
  EXPECT_GE(cases, 28);
}

TEST(KokkosKernels, MdrangePassesTheVerificationPlanInFp32) { expect_verification_plan_passes("01_mdrange", Precision::fp32); }
TEST(KokkosKernels, MdrangePassesTheVerificationPlanInFp64) { expect_verification_plan_passes("01_mdrange", Precision::fp64); }
TEST(KokkosKernels, TeamScratchPassesTheVerificationPlanInFp32) {
  expect_verification_plan_passes("02_team_scratch", Precision::fp32);
}
TEST(KokkosKernels, TeamScratchPassesTheVerificationPlanInFp64) {
  expect_verification_plan_passes("02_team_scratch", Precision::fp64);
}
TEST(KokkosKernels, TeamRegisterBlockedPassesTheVerificationPlanInFp32) {
  expect_verification_plan_passes("03_team_register_blocked", Precision::fp32);
}
TEST(KokkosKernels, TeamRegisterBlockedPassesTheVerificationPlanInFp64) {
  expect_verification_plan_passes("03_team_register_blocked", Precision::fp64);
}
TEST(KokkosKernels, ThereAreThreeKernels) {
  std::vector<std::string> names;
  for (const Kernel* kernel : registry().kernels("kokkos")) names.emplace_back(kernel->name());
  EXPECT_EQ(names, (std::vector<std::string>{"01_mdrange", "02_team_scratch", "03_team_register_blocked"}));
}

// Runs `kernel` at `config` on the host case's operands, C starting as `c_start` (the layout of
// c_initial, guard zone included), and checks the result.
ValidationResult run_and_check(Device& device, const Kernel& kernel, const Config& config, const HostCase& host,
                               const std::byte* c_start) {
  const std::vector<std::byte> out = run_on_device(device, host, c_start, [&](const Operands& operands) {
    kernel.prepare(device, host.problem(), config)->run(operands);
  });
  return host.check(out.data());
}

// beta == 0: C is never read, so NaN in C does not reach the result (03: on the first K step only).
TEST(KokkosKernels, BetaZeroIgnoresNanInC) {
  auto device = backend().open(0);
  const Problem p = Problem::packed(37, 41, 300, Precision::fp64, 1.5, 0.0);
  HostCase host(p, 11);
  host.compute_expected(&openblas());
  std::vector<double> nan_c(host.c_initial().size() / sizeof(double), std::numeric_limits<double>::quiet_NaN());
  std::memcpy(nan_c.data() + p.c_elements(), host.c_initial().data() + p.c_elements() * sizeof(double),
              host.c_initial().size() - p.c_elements() * sizeof(double));  // the guard zone as it was
  for (const Kernel* kernel : registry().kernels("kokkos")) {
    Config config = kernel->default_config(device->info(), p.precision);
    if (kernel->name() == "03_team_register_blocked") config["KT"] = 64;  // several K steps
    const ValidationResult v =
        run_and_check(*device, *kernel, config, host, reinterpret_cast<const std::byte*>(nan_c.data()));
    EXPECT_TRUE(v.valid) << kernel->name() << ": " << v.reason;
  }
}

// 03 with MT not a multiple of RM: each tile's last row block is partial. Its rows past the tile
// belong to the next tile down, so they must be staged as zeros and never written: with beta != 0
// and several tiles and K steps, a write there would be read back as that tile's C.
TEST(KokkosKernels, TeamRegisterBlockedWithAPartialLastRowBlockWritesOnlyItsTile) {
  auto device = backend().open(0);
  const Kernel& kernel = registry().kernel("kokkos", "03_team_register_blocked");
  for (const Precision precision : {Precision::fp32, Precision::fp64}) {
    Config config = kernel.default_config(device->info(), precision);
    config["MT"] = 16;  // 2 blocks of 12 rows: 24 staged, 16 stored
    config["RM"] = 12;
    config["NT"] = 64;
    config["KT"] = 16;
    // The widest register block this host's registers hold (AVX-512 hosts: 32 fp32 or 16 fp64
    // columns; AVX2 hosts fewer); the test is about the partial row block, not the width.
    const SearchSpace space = kernel.space(device->info(), precision);
    bool fits = false;
    for (const ParamValue rn : {32, 16, 8}) {
      config["RN"] = rn;
      try {
        space.check(config);
        fits = true;
        break;
      } catch (const ConfigError&) {
      }
    }
    if (!fits) {
      std::cout << "no 12-row register block fits this host's registers in " << to_string(precision) << "\n";
      continue;
    }
    for (const auto& [m, n, k] : {std::array<std::int64_t, 3>{53, 70, 37}, {1, 1, 1}, {16, 64, 16}, {97, 5, 130}}) {
      HostCase host(Problem::packed(m, n, k, precision, 1.25, 0.5), 7);
      host.compute_expected(&openblas());
      const ValidationResult v = run_and_check(*device, kernel, config, host, host.c_initial().data());
      EXPECT_TRUE(v.valid) << host.problem().shape() << " " << to_string(precision) << ": " << v.reason;
    }
  }
}

TEST(KokkosKernels, AConfigurationOutsideTheSpaceIsAConfigErrorNamingTheConstraint) {
  auto device = backend().open(0);
  const Kernel& k = registry().kernel("kokkos", "03_team_register_blocked");
  Config c = k.default_config(device->info(), Precision::fp32);
  c["MT"] = 8;
  c["RM"] = 12;  // a register block taller than the tile
  EXPECT_THROW_CONTAINING(k.prepare(*device, Problem::packed(8, 8, 8), c), ConfigError, {"RM <= MT"});
  c = k.default_config(device->info(), Precision::fp32);
  c["RN"] = 5;  // no such variant
  EXPECT_THROW_MENTIONING(k.prepare(*device, Problem::packed(8, 8, 8), c), ConfigError, {"RN"});
  // Tiles larger than level-0 scratch.
  const Kernel& scratch = registry().kernel("kokkos", "02_team_scratch");
  Config big = scratch.default_config(device->info(), Precision::fp64);
  const std::int64_t limit = space_limits(0).scratch_bytes_max;
  big["MT"] = 256;
  big["NT"] = 512;
  big["KT"] = 256;
  big["LEVEL"] = 0;
  const std::int64_t staged = (256 * 256 + 256 * 512 + 256 * 512) * 8 + 3 * 128;  // A, B, accumulators; aligned
  ASSERT_GT(staged, limit) << "level-0 scratch larger than any tile here";
  EXPECT_THROW_CONTAINING(scratch.prepare(*device, Problem::packed(8, 8, 8, Precision::fp64), big), ConfigError,
                          {"staged_bytes <= scratch_size_max", "staged_bytes = " + std::to_string(staged),
                           "scratch_size_max = " + std::to_string(limit)});
}

// A kernel's default is its preference (the one documented in its file, here the host's) where
// the device's space accepts it, else the valid configuration nearest to it: no kernel shrinks its
// tiles its own way. On the host, 02's fp64 tiles (41 KB) are larger than level-0 scratch where
// that is 32 KiB.
TEST(KokkosKernels, DefaultsAreThePreferenceOrTheNearestValidConfiguration) {
  auto device = backend().open(0);
  ASSERT_TRUE(space_limits(0).host) << "the preferences below are the host's";
  const Kernel& scratch = registry().kernel("kokkos", "02_team_scratch");
  const Kernel& blocked = registry().kernel("kokkos", "03_team_register_blocked");
  const Config scratch_preferred{{"MT", 32}, {"NT", 64}, {"KT", 32}, {"TEAM", 1}, {"VEC", 1}, {"LEVEL", 0}};
  Config blocked_preferred{{"MT", 512}, {"NT", 512}, {"KT", 256}, {"RM", 8}, {"RN", 32},
                           {"TEAM", 1}, {"VEC", 1}, {"LEVEL", 1}};
  for (const Precision precision : {Precision::fp32, Precision::fp64}) {
    blocked_preferred["RN"] = precision == Precision::fp32 ? 32 : 16;
    for (const auto& [kernel, preferred] : {std::pair{&scratch, scratch_preferred}, {&blocked, blocked_preferred}}) {
      const SearchSpace s = kernel->space(device->info(), precision);
      const Config expected = s.is_valid(preferred) ? preferred : s.nearest_valid(preferred);
      EXPECT_EQ(kernel->default_config(device->info(), precision), expected)
          << kernel->name() << " " << to_string(precision) << ": preferred " << to_string(preferred);
    }
  }
}

// The team kernels stage tiles of A and B for an MT x NT tile of C: their spaces name it tile_m x
// tile_n (the sweep command computes memory traffic from it); 01 stages nothing and names none.
TEST(KokkosKernels, TeamKernelsNameTheTileOfCTheyStageFor) {
  auto device = backend().open(0);
  for (const Kernel* kernel : registry().kernels("kokkos"))
    for (const Precision precision : {Precision::fp32, Precision::fp64}) {
      const SearchSpace s = kernel->space(device->info(), precision);
      const Config c = kernel->default_config(device->info(), precision);
      const bool stages = kernel->name() != "01_mdrange";
      EXPECT_EQ(s.value_of("tile_m", c), stages ? std::optional<ParamValue>(c.at("MT")) : std::nullopt) << kernel->name();
      EXPECT_EQ(s.value_of("tile_n", c), stages ? std::optional<ParamValue>(c.at("NT")) : std::nullopt) << kernel->name();
    }
}

TEST(KokkosKernels, SourceHashesAreDistinctAndStable) {
  std::set<std::string> hashes;
  for (const Kernel* kernel : registry().kernels("kokkos")) {
    const std::string h = kernel->source_hash();
    EXPECT_EQ(h.size(), 64u) << kernel->name();
    EXPECT_EQ(h, kernel->source_hash());
    hashes.insert(h);
  }
  EXPECT_EQ(hashes.size(), 3u);
}

TEST(KokkosReference, BothKokkosBlasReferencesMatchTheHostReference) {
  auto device = backend().open(0);
  for (const std::string name : {"kokkoskernels", "kokkoskernels-native"}) {
    auto reference = backend().make_reference(name, *device);
    EXPECT_FALSE(reference->version().empty());
    reference->set_threads(device->info().cores);
    for (Precision precision : {Precision::fp32, Precision::fp64})
      for (const Problem& shape : {Problem::packed(37, 53, 29, precision, -0.75, 1.25),
                                   with_padding(Problem::packed(31, 17, 45, precision, 1.0, 0.0), 3),
                                   Problem::packed(1, 1, 1, precision, 2.0, 0.5)}) {
        HostCase host(shape, 5);
        const std::vector<std::byte> out = run_on_device(*device, host, host.c_initial().data(),
                                                         [&](const Operands& operands) { reference->gemm(shape, operands); });
        host.compute_expected(&openblas());
        const ValidationResult v = host.check(out.data());
        EXPECT_TRUE(v.valid) << name << " " << shape.shape() << " lda=" << shape.lda << " "
                             << to_string(precision) << ": " << v.reason;
      }
  }
  EXPECT_THROW_MENTIONING(backend().make_reference("cublas", *device), std::invalid_argument, {"kokkoskernels"});
}

// --- the CLI ---------------------------------------------------------------------------------------

TEST(KokkosCli, RunVerifiesAndReportsTheReference) {
  const CliResult r = run_cli("run --backend kokkos --kernel 03_team_register_blocked --m 65 --n 70 --k 33 "
                              "--max-seconds 0.05 --json");
  ASSERT_EQ(r.status, 0) << r;
  const json j = parse_json(r);
  ASSERT_TRUE(j.is_object()) << r;
  EXPECT_NE(j.dump().find("kokkoskernels"), std::string::npos) << j.dump(2);
  EXPECT_NE(j.dump().find("03_team_register_blocked"), std::string::npos) << j.dump(2);
}

TEST(KokkosCli, VerifyPassesEveryCaseOfEveryKernel) {
  for (const char* kernel : {"01_mdrange", "02_team_scratch", "03_team_register_blocked"}) {
    const CliResult r = run_cli(std::string("verify --backend kokkos --kernel ") + kernel +
                                " --shapes 7x13x5,1x1x1,33x65x17 --padded --json");
    ASSERT_EQ(r.status, 0) << kernel << "\n" << r;
    const json j = parse_json(r);
    EXPECT_EQ(j["failed"], 0) << kernel << "\n" << j.dump(2);
    EXPECT_GE(j["passed"].get<int>(), 3 * 2 * 2 * 2) << kernel;
  }
}

TEST(KokkosCli, TuneEndsWithTheBestAndTheKokkosBlasReference) {
  const CliResult r = run_cli("tune --backend kokkos --kernel 03_team_register_blocked --m 48 --n 40 --k 36 "
                              "--budget 3 --seed 2 --strategy random --no-cache --json");
  ASSERT_EQ(r.status, 0) << r;
  const json j = parse_json(r);
  ASSERT_TRUE(j.contains("best") && j["best"].contains("params")) << r;
  EXPECT_EQ(j["reference"]["name"], "kokkoskernels") << j.dump(2);
  EXPECT_GT(j["reference"]["gflops"].get<double>(), 0) << j.dump(2);
  EXPECT_GT(j["best"]["ratio_to_reference"].get<double>(), 0) << j.dump(2);
}

TEST(KokkosCli, AConfigurationOutsideTheSpaceExits2NamingTheConstraint) {
  EXPECT_TRUE(exits_2_saying("run --backend kokkos --kernel 03_team_register_blocked --m 8 --n 8 --k 8 "
                             "--param MT=8 --param RM=12",
                             {"RM <= MT"}));
}

TEST(KokkosCli, DevicesListsTheKokkosDevice) {
  const CliResult r = run_cli("devices --json --no-measure");
  ASSERT_EQ(r.status, 0) << r;
  EXPECT_NE(r.out.find("\"kokkos\""), std::string::npos) << r;
}

}  // namespace
}  // namespace gemmlab::kokkos
