// Every CPU kernel against the fp64 reference: the verification plan's shapes x precisions x
// scalars x {packed, padded} with the default configuration; empty and zero-depth problems;
// the extremes of each parameter range; rejection of bad configurations.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/evaluate.hpp"
#include "gemmlab/verify.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::cpu_device;
Reference& fp64_truth() { return testing::openblas(); }

std::vector<std::string> cpu_kernel_names() {
  std::vector<std::string> names;
  for (const Kernel* k : registry().kernels("cpu")) names.emplace_back(k->name());
  return names;
}

// "-0.75" -> "m0p75": parameter names may only hold [A-Za-z0-9_].
std::string number_name(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  std::string out;
  for (const char* c = text; *c; ++c) out += *c == '-' ? 'm' : *c == '.' ? 'p' : *c;
  return out;
}

std::string describe(const Problem& p) {
  std::ostringstream out;
  out << p.shape() << " " << to_string(p.precision) << " alpha=" << p.alpha << " beta=" << p.beta
      << " lda/ldb/ldc=" << p.lda << "/" << p.ldb << "/" << p.ldc;
  return out.str();
}

struct KernelCase {
  std::string kernel;
  Problem problem;
  bool padded = false;
};

std::string case_name(const KernelCase& c) {
  const Problem& p = c.problem;
  return c.kernel + "_" + p.shape() + "_" + std::string(to_string(p.precision)) + "_a" + number_name(p.alpha) +
         "_b" + number_name(p.beta) + (c.padded ? "_padded" : "_packed");
}

std::vector<KernelCase> verification_plan() {
  std::vector<KernelCase> cases;
  for (const Kernel* k : registry().kernels("cpu"))
    for (const Problem& shape : default_verification_shapes())
      for (Precision precision : {Precision::fp32, Precision::fp64}) {
        if (!k->has_precision(precision)) continue;
        for (const Scalars& s : default_verification_scalars())
          for (bool padded : {false, true}) {
            Problem p = padded ? with_padding(shape, 3) : shape;
            p.precision = precision;
            p.alpha = s.alpha;
            p.beta = s.beta;
            cases.push_back({std::string(k->name()), p, padded});
          }
      }
  return cases;
}

class KernelVerification : public ::testing::TestWithParam<KernelCase> {};

TEST_P(KernelVerification, DefaultConfigurationMatchesTheFp64Reference) {
  const KernelCase& c = GetParam();
  const Kernel& kernel = registry().kernel("cpu", c.kernel);
  SKIP_IF_UNSUPPORTED(kernel);
  const Config config = kernel.default_config(cpu_device().info(), c.problem.precision);
  EvaluationOptions options;
  options.time = false;
  const Evaluation e = evaluate(cpu_device(), kernel, config, c.problem, &fp64_truth(), nullptr, options);
  EXPECT_TRUE(e.validation.valid) << c.kernel << " {" << to_string(config) << "} on " << describe(c.problem)
                                  << ": expected a valid result, got: " << e.validation.reason
                                  << " (max relative error " << e.validation.max_rel_error << ", tolerance "
                                  << e.validation.tolerance << ")";
  EXPECT_LE(e.validation.max_rel_error, e.validation.tolerance);
  EXPECT_FALSE(e.kernel.has_value()) << "time = false must not time the kernel";
  EXPECT_FALSE(e.reference.has_value()) << "time = false must not time the reference";
}

INSTANTIATE_TEST_SUITE_P(Plan, KernelVerification, ::testing::ValuesIn(verification_plan()),
                         [](const ::testing::TestParamInfo<KernelCase>& param_info) { return case_name(param_info.param); });

// --- per-kernel edge cases ----------------------------------------------------------------

class KernelEdgeCases : public ::testing::TestWithParam<std::string> {
 protected:
  const Kernel& kernel() const { return registry().kernel("cpu", GetParam()); }
  Config defaults(Precision p) const { return kernel().default_config(cpu_device().info(), p); }

  // Prepares and runs the kernel on the given host arrays (the CPU device's memory is the host's).
  template <class T>
  void run(const Problem& p, std::vector<T>& a, std::vector<T>& b, std::vector<T>& c) const {
    auto exe = kernel().prepare(cpu_device(), p, defaults(p.precision));
    exe->run({a.data(), b.data(), c.data()});
    cpu_device().synchronize();
  }

  // Runs 3x4x0 with beta = 0 and ldc = 6 in `precision` (element type T) on a C of NaN, padding and
  // four elements past the end included: every element of C becomes 0, the padding is not written.
  template <class T>
  void expect_zero_depth_beta_zero_overwrites_nan(Precision precision) const {
    Problem p = with_padding(Problem::packed(3, 4, 0, precision, 1.0, 0.0), 2);  // ldc = 6
    std::vector<T> a(4, T(1)), b(4, T(1)), c(p.c_elements() + 4, std::numeric_limits<T>::quiet_NaN());
    run(p, a, b, c);
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t j = 0; j < p.n; ++j) {
        const T v = c[static_cast<std::size_t>(i * p.ldc + j)];
        EXPECT_TRUE(v == T(0)) << GetParam() << " " << to_string(precision) << ": C[" << i << "][" << j << "] = " << v
                               << ", expected 0";
      }
    EXPECT_TRUE(std::isnan(c[4])) << "padding C[0][4] was written";
  }
};

TEST_P(KernelEdgeCases, EmptyAndZeroDepthProblemsPassTheValidator) {
  SKIP_IF_UNSUPPORTED(kernel());
  for (const char* shape : {"0x5x3", "5x0x3", "0x0x0", "5x4x0", "1x1x0", "17x33x0"})
    for (Precision precision : {Precision::fp32, Precision::fp64})
      for (double beta : {0.0, 1.25})
        for (bool padded : {false, true}) {
          Problem p = parse_shape(shape);
          if (padded) p = with_padding(p, 3);
          p.precision = precision;
          p.alpha = -0.75;
          p.beta = beta;
          EvaluationOptions options;
          options.time = false;
          const Evaluation e =
              evaluate(cpu_device(), kernel(), defaults(precision), p, &fp64_truth(), nullptr, options);
          EXPECT_TRUE(e.validation.valid) << GetParam() << " on " << describe(p) << ": " << e.validation.reason;
        }
}

TEST_P(KernelEdgeCases, EmptyProblemsTouchNothing) {
  SKIP_IF_UNSUPPORTED(kernel());
  for (const char* shape : {"0x5x3", "5x0x3", "0x0x0"}) {
    Problem p = parse_shape(shape);
    p.precision = Precision::fp64;
    p.beta = 0.0;
    std::vector<double> a(32, 1.0), b(32, 1.0), c(32, 7.0);
    run(p, a, b, c);
    for (std::size_t i = 0; i < c.size(); ++i)
      ASSERT_EQ(c[i], 7.0) << GetParam() << " on " << shape << " changed C[" << i << "] to " << c[i];
  }
}

TEST_P(KernelEdgeCases, ZeroDepthWithBetaZeroOverwritesNaNWithZero) {
  SKIP_IF_UNSUPPORTED(kernel());
  expect_zero_depth_beta_zero_overwrites_nan<float>(Precision::fp32);
  expect_zero_depth_beta_zero_overwrites_nan<double>(Precision::fp64);
}

TEST_P(KernelEdgeCases, ZeroDepthWithBetaNonZeroScalesC) {
  SKIP_IF_UNSUPPORTED(kernel());
  const Problem p = Problem::packed(3, 5, 0, Precision::fp64, 1.0, -1.5);
  std::vector<double> a(1, 1.0), b(1, 1.0), c(15);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<double>(i) + 1;
  run(p, a, b, c);
  for (std::size_t i = 0; i < c.size(); ++i)
    EXPECT_EQ(c[i], -1.5 * (static_cast<double>(i) + 1)) << GetParam() << ": C element " << i << " should be beta * C";
}

TEST_P(KernelEdgeCases, AlphaZeroScalesCByBetaWithoutReadingAOrB) {
  SKIP_IF_UNSUPPORTED(kernel());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double beta : {0.0, 0.5}) {
    const Problem p = Problem::packed(4, 6, 3, Precision::fp64, 0.0, beta);
    std::vector<double> a(12, nan), b(18, nan), c(24, beta == 0 ? nan : 2.0);
    run(p, a, b, c);
    for (std::size_t i = 0; i < c.size(); ++i)
      EXPECT_EQ(c[i], beta * 2.0) << GetParam() << " alpha=0 beta=" << beta << ": C element " << i << " = " << c[i]
                                  << " (A and B hold NaN; BLAS does not read them when alpha is 0)";
  }
}

TEST_P(KernelEdgeCases, ExtremeConfigurationsPassOnOddShapes) {
  SKIP_IF_UNSUPPORTED(kernel());
  VerifyOptions options;
  options.shapes = {parse_shape("97x131x67"), parse_shape("13x17x5"), parse_shape("1x33x3")};
  options.scalars = default_verification_scalars();
  options.padded_leading_dimensions = true;
  const std::vector<VerifyCase> cases = verify_kernel(cpu_device(), kernel(), &fp64_truth(), options);
  std::size_t expected = 0;
  const std::size_t layouts = kernel().reads_transposed() ? 4 : 1;  // NN, TN, NT, TT
  for (Precision precision : kernel().precisions())
    expected += kernel().space(cpu_device().info(), precision).extremes(defaults(precision)).size() *
                options.shapes.size() * options.scalars.size() * 2 * layouts;
  EXPECT_EQ(cases.size(), expected)
      << "one case per configuration x shape x scalars x padding x layout x precision";
  std::set<std::string> seen;
  for (const VerifyCase& c : cases) seen.insert(c.problem.transposes());
  EXPECT_EQ(seen.size(), layouts);
  int failures = 0;
  for (const VerifyCase& c : cases) {
    EXPECT_EQ(c.status, "passed") << c.kernel << " {" << to_string(c.config) << "} on " << describe(c.problem)
                                  << ": " << c.validation.reason;
    if (c.status != "passed" && ++failures >= 10) break;
  }
}

// Configurations from the inside of the space, not only its corners: a parameter that changes
// which code runs (06's STREAM, 05's MR x NV variants) meets every other parameter's values, in
// every layout, with rows, columns and depth left over from every block.
TEST_P(KernelEdgeCases, SampledConfigurationsPassOnOddShapesInEveryLayout) {
  SKIP_IF_UNSUPPORTED(kernel());
  VerifyOptions options;
  options.shapes = {parse_shape("15x37x19"), parse_shape("1x45x7")};
  options.scalars = {{-0.75, 1.25}};
  options.sample = 48;
  const std::vector<VerifyCase> cases = verify_kernel(cpu_device(), kernel(), &fp64_truth(), options);
  ASSERT_FALSE(cases.empty());
  int failures = 0;
  for (const VerifyCase& c : cases) {
    EXPECT_EQ(c.status, "passed") << c.kernel << " {" << to_string(c.config) << "} on " << describe(c.problem)
                                  << ": " << c.validation.reason;
    if (c.status != "passed" && ++failures >= 10) break;
  }
}

TEST_P(KernelEdgeCases, OneExecutableRunsOnDifferentOperandsAndPrecisionsItWasBuiltFor) {
  SKIP_IF_UNSUPPORTED(kernel());
  for (Precision precision : {Precision::fp32, Precision::fp64}) {
    Problem p = with_padding(Problem::packed(33, 29, 17, precision, -0.75, 1.25), 1);
    auto exe = kernel().prepare(cpu_device(), p, defaults(precision));
    for (std::uint64_t seed : {1u, 2u}) {
      HostCase host(p, seed);
      HostBuffer<std::byte> a(host.a().size()), b(host.b().size()), c(host.c_initial().size());
      std::memcpy(a.data(), host.a().data(), a.size());
      std::memcpy(b.data(), host.b().data(), b.size());
      std::memcpy(c.data(), host.c_initial().data(), c.size());
      exe->run({a.data(), b.data(), c.data()});
      cpu_device().synchronize();
      host.compute_expected(&fp64_truth());
      const ValidationResult r = host.check(c.data());
      EXPECT_TRUE(r.valid) << GetParam() << " " << describe(p) << " seed " << seed << ": " << r.reason;
    }
  }
}

TEST_P(KernelEdgeCases, PrepareRejectsAnUnknownParameter) {
  SKIP_IF_UNSUPPORTED(kernel());
  Config c = defaults(Precision::fp32);
  c["FOO"] = 1;
  EXPECT_THROW_MENTIONING(kernel().prepare(cpu_device(), Problem::packed(4, 4, 4), c), ConfigError, {"FOO"});
}

TEST_P(KernelEdgeCases, PrepareRejectsAValueOutsideTheAllowedSet) {
  SKIP_IF_UNSUPPORTED(kernel());
  const SearchSpace space = kernel().space(cpu_device().info(), Precision::fp32);
  if (space.parameters().empty()) {  // nothing to put out of range; the default is then empty too
    EXPECT_TRUE(defaults(Precision::fp32).empty()) << to_string(defaults(Precision::fp32));
    return;
  }
  for (const Parameter& param : space.parameters()) {
    Config c = defaults(Precision::fp32);
    c[param.name] = param.values.back() + 1;
    EXPECT_THROW_MENTIONING(kernel().prepare(cpu_device(), Problem::packed(4, 4, 4), c), ConfigError, {param.name})
        << param.name << "=" << c[param.name];
  }
}

TEST_P(KernelEdgeCases, PrepareRejectsPrecisionsItHasNot) {
  SKIP_IF_UNSUPPORTED(kernel());
  EXPECT_THROW_CONTAINING(
      kernel().prepare(cpu_device(), Problem::packed(4, 4, 4, Precision::fp16), defaults(Precision::fp32)),
      std::invalid_argument, {"fp16"});
}

TEST_P(KernelEdgeCases, PrepareRejectsAnInvalidProblem) {
  SKIP_IF_UNSUPPORTED(kernel());
  Problem p = Problem::packed(4, 4, 4);
  p.ldb = 3;
  EXPECT_THROW_MENTIONING(kernel().prepare(cpu_device(), p, defaults(Precision::fp32)), std::invalid_argument,
                          {"ldb"});
}

TEST_P(KernelEdgeCases, DescribesItself) {
  const Kernel& k = kernel();
  EXPECT_EQ(k.name(), GetParam());
  EXPECT_EQ(k.backend(), "cpu");
  EXPECT_FALSE(k.summary().empty());
  EXPECT_TRUE(k.has_precision(Precision::fp32));
  EXPECT_TRUE(k.has_precision(Precision::fp64));
  EXPECT_FALSE(k.has_precision(Precision::fp16));
}

INSTANTIATE_TEST_SUITE_P(Cpu, KernelEdgeCases, ::testing::ValuesIn(cpu_kernel_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) { return param_info.param; });

// A kernel's default is its preference where the device's space accepts it, else the valid
// configuration nearest to it: no kernel shrinks its blocks its own way. The preferences of 03 and
// 05 fit caches of 48 KiB / 2 MiB / 32 MiB; with 32 KiB / 256 KiB and no L3 they do not.
TEST(CpuKernelDefaults, AreThePreferenceOrTheNearestValidConfiguration) {
  DeviceInfo large = cpu_device().info();
  large.cores = 4;
  large.features = {"sse2", "avx", "avx2", "fma", "avx512f"};
  DeviceInfo small = large;
  large.caches = {{1, "Data", 48 << 10, 1}, {2, "Unified", 2 << 20, 1}, {3, "Unified", 32 << 20, 4}};
  small.caches = {{1, "Data", 32 << 10, 1}, {2, "Unified", 256 << 10, 1}};
  const Kernel& blocked = registry().kernel("cpu", "03_cache_blocked");
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  // The preferences, as the kernel files document them.
  const Config blocked_fp32{{"MC", 64}, {"KC", 256}, {"NC", 1024}};
  const Config packed_fp32{{"MR", 6},      {"NV", 4},     {"MC", 2688},  {"KC", 1024},     {"NC", 256},
                           {"threads", 4}, {"PACK_A", 0}, {"PACK_B", 1}, {"SPLIT_ROWS", 0}};
  Config packed_fp64 = packed_fp32;
  packed_fp64["KC"] = 512;
  for (const auto& [kernel, precision, preferred] :
       {std::tuple{&blocked, Precision::fp32, blocked_fp32}, {&packed, Precision::fp32, packed_fp32},
        {&packed, Precision::fp64, packed_fp64}}) {
    const std::string what = std::string(kernel->name()) + " " + std::string(to_string(precision));
    EXPECT_EQ(kernel->default_config(large, precision), preferred) << what;
    const SearchSpace s = kernel->space(small, precision);
    ASSERT_FALSE(s.is_valid(preferred)) << what << ": the small caches fit the preference";
    EXPECT_EQ(kernel->default_config(small, precision), s.nearest_valid(preferred)) << what;
  }
  // 03: NC 1024 -> 512 and KC 256 -> 64 (3 places; as near as NC -> 128, and first in enumeration
  // order, which has smaller KC first).
  EXPECT_EQ(blocked.default_config(small, Precision::fp32), (Config{{"MC", 64}, {"KC", 64}, {"NC", 512}}));
  // Without AVX-512, 05's AVX2 micro-kernel: 6 x 2, KC 512 (fp64 256) and NC 256, which fit a
  // 32 KiB L1d and a 512 KiB L2 exactly.
  DeviceInfo avx2 = small;
  avx2.features = {"sse2", "avx", "avx2", "fma"};
  avx2.caches = {{1, "Data", 32 << 10, 1}, {2, "Unified", 512 << 10, 1}, {3, "Unified", 32 << 20, 4}};
  const Config avx2_fp32{{"MR", 6},      {"NV", 2},     {"MC", 2688},  {"KC", 512},      {"NC", 256},
                         {"threads", 4}, {"PACK_A", 0}, {"PACK_B", 1}, {"SPLIT_ROWS", 0}};
  Config avx2_fp64 = avx2_fp32;
  avx2_fp64["KC"] = 256;
  EXPECT_EQ(packed.default_config(avx2, Precision::fp32), avx2_fp32);
  EXPECT_EQ(packed.default_config(avx2, Precision::fp64), avx2_fp64);
}

// A search starts from the default, then from each other tile that fills the 32 zmm registers
// (05's four, each with the deepest KC whose A panel fits half of a 48 KiB L1d), then from the
// default reading B where it lies (a quarter as deep, NC 512), each valid on the device and none
// twice; 06 also from a shallow KB, 6 x 4 in both orders and the depth split
// between threads; a kernel without variants starts from its default alone. On small caches the variants are
// moved to valid blocks as the default is.
// 05's default reading B where it lies, as its starting configurations give it: a quarter as
// deep, 512 columns wide.
Config reading_b_in_place(Config default_config) {
  default_config["PACK_B"] = 0;
  default_config["KC"] = default_config.at("KC") / 4;
  default_config["NC"] = 512;
  return default_config;
}

TEST(CpuKernelStartingConfigs, AreTheDefaultThenEachRegisterFillingTile) {
  DeviceInfo large = cpu_device().info();
  large.cores = 4;
  large.features = {"sse2", "avx", "avx2", "fma", "avx512f"};
  large.caches = {{1, "Data", 48 << 10, 1}, {2, "Unified", 2 << 20, 1}, {3, "Unified", 32 << 20, 4}};
  DeviceInfo small = large;
  small.caches = {{1, "Data", 32 << 10, 1}, {2, "Unified", 256 << 10, 1}};
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  for (const DeviceInfo* caches : {&large, &small})
    for (Precision precision : {Precision::fp32, Precision::fp64}) {
      const DeviceInfo& device = *caches;
      const std::string what = std::string(to_string(precision)) + (caches == &large ? " large" : " small");
      const std::vector<Config> starts = packed.starting_configs(device, precision);
      ASSERT_FALSE(starts.empty()) << what;
      EXPECT_EQ(starts.front(), packed.default_config(device, precision)) << what;
      const SearchSpace s = packed.space(device, precision);
      std::set<std::pair<ParamValue, ParamValue>> tiles;
      for (std::size_t i = 0; i < starts.size(); ++i) {
        EXPECT_TRUE(s.is_valid(starts[i])) << what << ": " << to_string(starts[i]);
        for (std::size_t j = 0; j < i; ++j) EXPECT_NE(starts[i], starts[j]) << what;
        tiles.insert({starts[i].at("MR"), starts[i].at("NV")});
      }
      if (caches == &large) {
        EXPECT_EQ(tiles, (std::set<std::pair<ParamValue, ParamValue>>{{14, 2}, {12, 2}, {8, 3}, {6, 4}})) << what;
        // Each the deepest KC of the space with MR*KC*4 bytes <= 24 KiB (14 x 2: 384, as 448 would
        // take 24.5 KiB); fp64's half as deep.
        const std::map<std::pair<ParamValue, ParamValue>, ParamValue> deepest_fp32{
            {{6, 4}, 1024}, {{8, 3}, 768}, {{12, 2}, 512}, {{14, 2}, 384}};
        int in_place_b = 0;
        for (const Config& start : starts) {
          if (start.at("PACK_B") == 0) {
            EXPECT_EQ(start, reading_b_in_place(starts.front())) << what;
            ++in_place_b;
            continue;
          }
          EXPECT_EQ(start.at("KC") * (precision == Precision::fp32 ? 1 : 2),
                    deepest_fp32.at({start.at("MR"), start.at("NV")}))
              << what << ": " << to_string(start);
        }
        EXPECT_EQ(in_place_b, 1) << what;
      }
    }
  // Without AVX-512: 6 x 2, then 4 x 3 (the 16 ymm registers' tiles with the fewest loads per FMA),
  // then the default reading B where it lies, then (several cores) the default with the threads
  // splitting the rows.
  DeviceInfo avx2 = large;
  avx2.features = {"sse2", "avx", "avx2", "fma"};
  for (Precision precision : {Precision::fp32, Precision::fp64}) {
    const std::vector<Config> starts = packed.starting_configs(avx2, precision);
    ASSERT_EQ(starts.size(), 4u) << to_string(precision);
    EXPECT_EQ(std::pair(starts[0].at("MR"), starts[0].at("NV")), std::pair(ParamValue{6}, ParamValue{2}));
    EXPECT_EQ(std::pair(starts[1].at("MR"), starts[1].at("NV")), std::pair(ParamValue{4}, ParamValue{3}));
    EXPECT_EQ(starts[2], reading_b_in_place(starts[0]));
    Config rows = starts[0];
    rows["SPLIT_ROWS"] = 1;
    EXPECT_EQ(starts[3], rows);
    for (const Config& start : starts)
      EXPECT_TRUE(packed.space(avx2, precision).is_valid(start)) << to_string(start);
  }
  DeviceInfo avx2_one_core = avx2;
  avx2_one_core.cores = 1;
  EXPECT_EQ(packed.starting_configs(avx2_one_core, Precision::fp32).size(), 3u);
  // 06: its default, then the shallow block for B streamed from memory, then the 6 x 4 tile in
  // both orders, then (several cores) the threads splitting the depth.
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  const std::vector<Config> small_m_starts = small_m.starting_configs(large, Precision::fp32);
  ASSERT_EQ(small_m_starts.size(), 5u);
  EXPECT_EQ(small_m_starts[0], small_m.default_config(large, Precision::fp32));
  Config shallow = small_m_starts[0];
  shallow["KB"] = 24;
  EXPECT_EQ(small_m_starts[1], shallow);
  Config wide = small_m_starts[0];
  wide["MR"] = 6;
  wide["NV"] = 4;
  EXPECT_EQ(small_m_starts[2], wide);
  EXPECT_TRUE(small_m.space(large, Precision::fp32).is_valid(wide));
  Config rows = wide;
  rows["STREAM"] = 1;
  EXPECT_EQ(small_m_starts[3], rows);
  EXPECT_TRUE(small_m.space(large, Precision::fp32).is_valid(rows));
  Config split = small_m_starts[0];
  split["SPLIT_K"] = 1;
  EXPECT_EQ(small_m_starts[4], split);
  DeviceInfo one_core = large;
  one_core.cores = 1;
  EXPECT_EQ(small_m.starting_configs(one_core, Precision::fp32).size(), 4u);
  const Kernel& blocked = registry().kernel("cpu", "03_cache_blocked");
  EXPECT_EQ(blocked.starting_configs(large, Precision::fp32),
            std::vector<Config>{blocked.default_config(large, Precision::fp32)});
}

// `config` of `kernel` on `p`, untimed, against the fp64 reference.
void expect_matches_reference_on(Device& device, const Kernel& kernel, const Config& config,
                                 const Problem& p) {
  ASSERT_TRUE(kernel.space(device.info(), p.precision).is_valid(config)) << to_string(config);
  EvaluationOptions options;
  options.time = false;
  const Evaluation e = evaluate(device, kernel, config, p, &fp64_truth(), nullptr, options);
  EXPECT_TRUE(e.validation.valid) << "{" << to_string(config) << "} on " << describe(p) << " "
                                  << p.transposes() << " (" << device.info().name
                                  << "): " << e.validation.reason;
}

// The same on `shape` in one of the four transpose layouts (bit 0: A transposed, bit 1: B), every
// leading dimension 5 longer than its rows.
void expect_matches_reference_in_layout(const Kernel& kernel, const Config& config, Problem shape, int layout,
                                        Device& device = cpu_device()) {
  shape.trans_a = (layout & 1) != 0;
  shape.trans_b = (layout & 2) != 0;
  expect_matches_reference_on(device, kernel, config, with_padding(shape, 5));
}

// 05 with PACK_A=0 reads a row-major A's full panels where they lie and packs the rest (the last
// panel, of fewer than MR rows; every panel of a transposed A); PACK_A=1 packs them all. Both, on
// poisoned C, with A's rows padded, where the threads share the A panels (many columns) and where
// they split the rows (few), in every layout.
TEST(PackedKernel, ReadsARowMajorAInPlaceOrPackedWithTheSameResult) {
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  SKIP_IF_UNSUPPORTED(packed);
  int cases = 0;
  for (ParamValue pack_a : {0, 1})
    for (ParamValue threads : {1, 2})
      for (auto [m, n] :
           {std::pair<std::int64_t, std::int64_t>{45, 300}, {45, 40}})  // MR=6: 7 panels and 3 rows
        for (int layout = 0; layout < 4; ++layout) {
          Config config = packed.default_config(cpu_device().info(), Precision::fp32);
          config["MR"] = 6;
          config["NV"] = 2;
          config["MC"] = 48;  // a second block of rows
          config["KC"] = 32;  // three blocks of depth: in place, the panel starts pc into A's rows
          config["NC"] = 128;
          config["threads"] = std::min<ParamValue>(threads, std::max(1, cpu_device().info().cores));
          config["PACK_A"] = pack_a;
          expect_matches_reference_in_layout(packed, config,
                                             Problem::packed(m, n, 77, Precision::fp32, -0.75, 1.25), layout);
          ++cases;
        }
  EXPECT_EQ(cases, 32);
}

// The CPU device opened with AVX-512 hidden: 05 and 06 run their AVX2 code on it.
std::unique_ptr<Device> open_without_avx512() {
  const testing::ScopedEnv hide("GEMMLAB_CPU_DISABLE", "avx512f");
  std::unique_ptr<Device> device = registry().backend("cpu").open(0);  // detects in its constructor
  EXPECT_FALSE(device->info().has_feature("avx512f"));
  return device;
}

// The devices that run each instruction set's tiles the CPU has: the CPU as it is and, where it
// has AVX-512 and AVX2, the CPU with AVX-512 hidden (held in `hidden`).
std::vector<Device*> each_instruction_set(std::unique_ptr<Device>& hidden) {
  std::vector<Device*> devices = {&cpu_device()};
  if (cpu_device().info().has_feature("avx512f") && cpu_device().info().has_feature("avx2")) {
    hidden = open_without_avx512();
    devices.push_back(hidden.get());
  }
  return devices;
}

// 05's AVX2 micro-kernels, which a CPU without AVX-512 runs, checked on any CPU with AVX2: the CPU
// device opened again with AVX-512 hidden. Every tile the 16 ymm registers allow (8), both
// precisions, every layout, rows padded, beta not 0: shapes with a last panel of fewer than MR
// rows and a last tile of columns ending inside a vector (the masked loads and stores).

TEST(PackedKernel, TheAvx2MicroKernelsMatchTheReferenceWithAvx512Hidden) {
  const std::unique_ptr<Device> avx2 = open_without_avx512();
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  if (const Support s = packed.supported(avx2->info()); !s.ok) GTEST_SKIP() << s.reason;
  for (Precision precision : {Precision::fp32, Precision::fp64}) {
    const SearchSpace space = packed.space(avx2->info(), precision);
    const int lanes = precision == Precision::fp32 ? 8 : 4;
    int tiles = 0;
    for (ParamValue mr : {4, 6, 8, 12, 14, 16})
      for (ParamValue nv : {1, 2, 3, 4}) {
        Config config = packed.default_config(avx2->info(), precision);
        config["MR"] = mr;
        config["NV"] = nv;
        config["MC"] = 336;  // a multiple of every MR
        config["KC"] = 32;   // three blocks of depth
        config["NC"] = 192;  // a multiple of every NR
        config["threads"] = 1;
        if (!space.is_valid(config)) continue;
        ++tiles;
        for (int layout = 0; layout < 4; ++layout)
          expect_matches_reference_in_layout(
              packed, config, Problem::packed(2 * mr + 3, 2 * nv * lanes + 5, 77, precision, -0.75, 1.25),
              layout, *avx2);
      }
    EXPECT_EQ(tiles, 8) << "MR x NV with MR*NV + NV + 1 <= 16: 4x1-3, 6x1-2, 8x1, 12x1, 14x1";
  }
}

// 06 with SPLIT_K=1: the threads split the depth, thread 0 writing C (scaled by beta) and the
// others partial products that are added at the end. In the axpy form (tile and row order) and
// the dot form (a transposed B), in every layout, with padded rows (the padding poisoned), beta
// 0 (C poisoned: never to be read) and not: a depth that divides unevenly, a depth of 1 (a thread
// with no steps of k, whose partial product must not be added), a last block of k shorter than
// KB, and more rows than one pass.
// 06's AVX2 tiles, which a CPU without AVX-512 runs, checked on any CPU with AVX2 (AVX-512 hidden):
// every tile the 16 ymm registers allow (23) in tile order and (B transposed) the dot form, and
// every MR x NV in row order (48: its sums live for one step; B transposed, the dot form then
// takes as many rows as its tiles fit), both precisions, every layout, rows padded, beta not 0; a last pass
// of one row, a last tile of columns ending inside a vector and a last block of k shorter than KB (the k tail
// of the dot form).
TEST(SmallMKernel, TheAvx2TilesMatchTheReferenceWithAvx512Hidden) {
  const std::unique_ptr<Device> avx2 = open_without_avx512();
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  if (const Support s = small_m.supported(avx2->info()); !s.ok) GTEST_SKIP() << s.reason;
  for (Precision precision : {Precision::fp32, Precision::fp64}) {
    const SearchSpace space = small_m.space(avx2->info(), precision);
    const int lanes = precision == Precision::fp32 ? 8 : 4;
    int tiles = 0, row_tiles = 0;
    for (ParamValue mr : {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16})
      for (ParamValue nv : {1, 2, 3, 4})
        for (ParamValue stream : {0, 1}) {
          Config config = small_m.default_config(avx2->info(), precision);
          config["MR"] = mr;
          config["NV"] = nv;
          config["STREAM"] = stream;
          config["KB"] = stream == 1 ? 256 : 32;  // the row form reads the whole depth
          config["threads"] = 1;
          config["SPLIT_K"] = 0;
          if (!space.is_valid(config)) continue;
          tiles += stream == 0;
          row_tiles += stream == 1;
          for (int layout = 0; layout < 4; ++layout)
            expect_matches_reference_in_layout(
                small_m, config, Problem::packed(2 * mr + 1, 2 * nv * lanes + 3, 77, precision, -0.75, 1.25),
                layout, *avx2);
        }
    EXPECT_EQ(tiles, 23) << "MR x NV with MR*NV + NV + 1 <= 16";
    EXPECT_EQ(row_tiles, 48) << "every MR x NV";
  }
}

// 06 with each (MR, NV) of `tiles` on each instruction set the CPU has, in both precisions, with A
// as stored and transposed, on one thread and on two splitting the columns or the depth: `check`
// gets the device, the configuration (KB and STREAM its own to set), its vector lanes and trans_a.
// Returns how many cases ran.
int for_each_small_m_setting(
    std::initializer_list<std::pair<ParamValue, ParamValue>> tiles,
    const std::function<void(Device&, Precision, Config, std::int64_t lanes, bool trans_a)>& check) {
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  std::unique_ptr<Device> avx2;
  const ParamValue threads = std::min(2, std::max(1, cpu_device().info().cores));
  int cases = 0;
  for (Device* device : each_instruction_set(avx2))
    for (Precision precision : {Precision::fp32, Precision::fp64})
      for (auto [mr, nv] : tiles)
        for (bool trans_a : {false, true})
          for (auto [team, split_k] :
               {std::pair<ParamValue, ParamValue>{1, 0}, {threads, 0}, {threads, threads > 1}}) {
            Config config = small_m.default_config(device->info(), precision);
            config["MR"] = mr;
            config["NV"] = nv;
            config["SPLIT_K"] = split_k;
            config["threads"] = team;
            const std::int64_t vector_bytes = device->info().has_feature("avx512f") ? 64 : 32;
            check(*device, precision, config, vector_bytes / std::int64_t(element_size(precision)), trans_a);
            ++cases;
          }
  return cases;
}

// The instruction sets for_each_small_m_setting covers.
int instruction_sets() {
  std::unique_ptr<Device> avx2;
  return static_cast<int>(each_instruction_set(avx2).size());
}

// 05 with SPLIT_ROWS=1: the threads split C's rows however many columns it has, each packing its
// own A blocks and all of B. Two threads (the runtime may grant fewer), on poisoned C, padded, in
// every layout, with beta 0 and not: rows that split unevenly (45 of MR=6: 24 and 21), fewer rows
// than a panel for each thread (5: the second thread has none), one row, a second block of rows
// and a last panel of columns ending inside a vector. SPLIT_ROWS=0 on the same shapes splits the
// columns of the wide ones.
TEST(PackedKernel, SplitsTheRowsBetweenThreadsWhenAskedToWithTheSameResult) {
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  SKIP_IF_UNSUPPORTED(packed);
  std::unique_ptr<Device> hidden;
  int cases = 0;
  for (Device* device : each_instruction_set(hidden))
    for (Precision precision : {Precision::fp32, Precision::fp64})
      for (ParamValue split_rows : {0, 1})
        for (std::int64_t m : {45, 5, 1, 113})
          for (double beta : {0.0, 1.25})
            for (int layout = 0; layout < 4; ++layout) {
              Config config = packed.default_config(device->info(), precision);
              config["MR"] = 6;
              config["NV"] = 2;
              config["MC"] = 48;  // 113 rows: a second block for the first thread
              config["KC"] = 32;  // three blocks of depth
              config["NC"] = 128;
              config["threads"] = std::min<ParamValue>(2, std::max(1, device->info().cores));
              config["SPLIT_ROWS"] = split_rows;
              expect_matches_reference_in_layout(
                  packed, config, Problem::packed(m, 301, 77, precision, -0.75, beta), layout, *device);
              ++cases;
            }
  EXPECT_EQ(cases, 128 * instruction_sets());
}

// 05 with PACK_B=0 reads a row-major B's panels where they lie, all but a last panel that ends
// inside a vector (packed alone, as its loads would run past B's last row); a transposed B is
// packed either way. Both settings against the fp64 reference, on poisoned C, with B's rows
// padded, both precisions: a last panel ending inside a vector, one of whole vectors narrower than
// NR, one as wide as NR; one thread and two sharing the A panels; three blocks of depth; every
// layout; each instruction set the CPU has.
TEST(PackedKernel, ReadsARowMajorBInPlaceOrPackedWithTheSameResult) {
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  SKIP_IF_UNSUPPORTED(packed);
  std::unique_ptr<Device> hidden;
  int cases = 0;
  for (Device* device : each_instruction_set(hidden))
    for (Precision precision : {Precision::fp32, Precision::fp64}) {
      const std::int64_t nr = 2 * (device->info().has_feature("avx512f") ? 64 : 32) / element_size(precision);
      for (ParamValue pack_b : {0, 1})
        for (ParamValue threads : {1, 2})
          for (std::int64_t n : {9 * nr + 5, 9 * nr + nr / 2, 10 * nr})
            for (int layout = 0; layout < 4; ++layout) {
              Config config = packed.default_config(device->info(), precision);
              config["MR"] = 6;
              config["NV"] = 2;
              config["MC"] = 48;
              config["KC"] = 32;  // three blocks of depth: in place, the panel starts pc rows into B
              config["NC"] = std::max<std::int64_t>(64, 4 * nr);  // 4 panels, or the space's smallest NC
              config["threads"] = std::min<ParamValue>(threads, std::max(1, device->info().cores));
              config["PACK_B"] = pack_b;
              expect_matches_reference_in_layout(
                  packed, config, Problem::packed(45, n, 77, precision, -0.75, 1.25), layout, *device);
              ++cases;
            }
    }
  EXPECT_EQ(cases, 96 * instruction_sets());
}

// Where M is not a multiple of MR, 05's last panel of A runs a micro-kernel only as tall as its
// rows, reading them from the MR-tall packed panel. Every such height of every MR of the space, on
// each instruction set the CPU has (the AVX-512 and AVX2 micro-kernels are separate code), both
// precisions, the first panel read in place (PACK_A=0) or packed, a transposed A (every panel
// packed), a last tile of columns narrower than NR, C poisoned (beta 0) and not, two blocks of depth.
TEST(PackedKernel, RunsALastPanelOfFewerThanMrRowsAtEachHeight) {
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  SKIP_IF_UNSUPPORTED(packed);
  std::unique_ptr<Device> hidden;
  int cases = 0, heights = 0, expected_heights = 0;
  for (Device* device : each_instruction_set(hidden))
    for (Precision precision : {Precision::fp32, Precision::fp64}) {
      // MR*1 + 1 + 1 registers: every MR fits 32 zmm; 16 does not fit 16 ymm.
      expected_heights +=
          device->info().has_feature("avx512f") ? 3 + 5 + 7 + 11 + 13 + 15 : 3 + 5 + 7 + 11 + 13;
      const SearchSpace space = packed.space(device->info(), precision);
      const std::int64_t lanes = (device->info().has_feature("avx512f") ? 64 : 32) / element_size(precision);
      for (ParamValue mr : {4, 6, 8, 12, 14, 16}) {
        Config config = packed.default_config(device->info(), precision);
        config["MR"] = mr;
        config["NV"] = 1;
        config["MC"] = 336;  // a multiple of every MR
        config["KC"] = 32;   // 45 steps: two blocks of depth
        config["NC"] = 128;
        config["threads"] = 1;
        if (!space.is_valid(config)) continue;
        for (std::int64_t rows = 1; rows < mr; ++rows, ++heights)
          for (ParamValue pack_a : {0, 1})
            for (bool trans_a : {false, true}) {
              config["PACK_A"] = pack_a;
              Problem p =
                  Problem::packed(mr + rows, 2 * lanes + 3, 45, precision, -0.75, trans_a ? 0.0 : 1.25);
              p.trans_a = trans_a;
              expect_matches_reference_on(*device, packed, config, with_padding(p, 3));
              ++cases;
            }
      }
    }
  EXPECT_EQ(heights, expected_heights);
  EXPECT_EQ(cases, 4 * heights);
}

// Where B's rows lie a multiple of 4 KiB apart, 06's axpy form copies each strip of B on the first
// pass of rows and the later passes read the copy. Checked with such a B (rows of 1024 floats or
// 512 doubles: 4 KiB), on the instruction sets the CPU has: three passes of rows (the last of one
// row), a last tile of columns of fewer vectors than the others and ending inside one, blocks of
// depth and a short last one, A as stored (beta 1.25) and transposed (beta 0), one thread, and two
// splitting the columns or the depth.
TEST(SmallMKernel, ReadsACopyOfEachStripWhereBsRowsAliasAndMatchesTheReference) {
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  SKIP_IF_UNSUPPORTED(small_m);
  const int cases = for_each_small_m_setting(
      {{6, 2}, {4, 3}, {2, 1}},
      [&](Device& device, Precision precision, Config config, std::int64_t lanes, bool trans_a) {
        const std::int64_t mr = config["MR"], nv = config["NV"];
        config["KB"] = 32;  // 77 steps: two blocks and a short one
        config["STREAM"] = 0;
        const std::int64_t edge = std::max<std::int64_t>(1, (nv - 1) * lanes - 3);  // fewer vectors than NV
        Problem p =
            Problem::packed(2 * mr + 1, 2 * nv * lanes + edge, 77, precision, -0.75, trans_a ? 0.0 : 1.25);
        p.trans_a = trans_a;
        p = with_padding(p, 3);
        p.ldb = 4096 / std::int64_t(element_size(precision));  // 4 KiB
        expect_matches_reference_on(device, small_m, config, p);
      });
  EXPECT_EQ(cases, 36 * instruction_sets());
}

TEST(SmallMKernel, SplitsTheDepthBetweenThreadsAndMatchesTheReference) {
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  SKIP_IF_UNSUPPORTED(small_m);
  const ParamValue threads = std::min(2, std::max(1, cpu_device().info().cores));
  if (threads < 2) GTEST_SKIP() << "one core: nothing to split";
  int cases = 0;
  for (ParamValue stream : {0, 1})
    for (auto [m, n, k] : {std::array<std::int64_t, 3>{13, 45, 77}, {3, 40, 1}, {1, 70, 129}})
      for (int layout = 0; layout < 8; ++layout) {
        Config config = small_m.default_config(cpu_device().info(), Precision::fp32);
        config["MR"] = 6;  // 13 rows: three passes
        config["NV"] = 2;
        config["KB"] = stream ? 256 : 32;  // 77 steps: two blocks and a short one per thread
        config["STREAM"] = stream;
        config["threads"] = threads;
        config["SPLIT_K"] = 1;
        const double beta = layout < 4 ? 1.25 : 0.0;
        expect_matches_reference_in_layout(
            small_m, config, Problem::packed(m, n, k, Precision::fp32, -0.75, beta), layout % 4);
        ++cases;
      }
  EXPECT_EQ(cases, 48);
}

// 06's row form (STREAM=1) keeps a block of C's rows within half of L2 while B's rows stream
// past: a C wider than that is done in blocks of columns, each starting B's rows anew. 16 rows
// (one full pass) and 1 more, wide enough for a second, partial block that ends off a vector,
// in both precisions, on poisoned C (beta 0) and not, with A read in place or transposed.
TEST(SmallMKernel, TheRowFormCoversAWideCInBlocksOfColumns) {
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  SKIP_IF_UNSUPPORTED(small_m);
  int cases = 0;
  for (Precision precision : {Precision::fp32, Precision::fp64})
    for (double beta : {1.25, 0.0})
      for (int layout : {0, 1}) {
        Config config = small_m.default_config(cpu_device().info(), precision);
        config["MR"] = 16;
        config["NV"] = 1;
        config["KB"] = 256;
        config["STREAM"] = 1;
        config["threads"] = 1;
        const std::int64_t l2 = *small_m.space(cpu_device().info(), precision).value_of("L2", config);
        const std::int64_t block = l2 / 2 / static_cast<std::int64_t>(element_size(precision)) / 16;
        expect_matches_reference_in_layout(
            small_m, config, Problem::packed(17, block + 37, 19, precision, -0.75, beta), layout);
        ++cases;
      }
  EXPECT_EQ(cases, 8);
}

// Where two of a pass's rows of C lie a multiple of 4 KiB apart, 06's row form sums them in a copy
// whose rows do not, and copies it to C at the end. Checked with C's rows 4 KiB apart (1024
// floats, 512 doubles), on the instruction sets the CPU has: passes of 16 and of 3 rows and a last
// pass of one (which sums in place), a last vector of columns ending inside it, groups of B's rows
// and a short last one, beta 1.25 and 0 (C poisoned), A as stored and transposed, one thread and
// two splitting the columns or the depth.
TEST(SmallMKernel, TheRowFormSumsInACopyWhereCsRowsAliasAndMatchesTheReference) {
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  SKIP_IF_UNSUPPORTED(small_m);
  const int cases = for_each_small_m_setting({{16, 1}, {3, 2}}, [&](Device& device, Precision precision,
                                                                    Config config, std::int64_t lanes,
                                                                    bool trans_a) {
    const std::int64_t mr = config["MR"], nv = config["NV"];
    config["KB"] = 256;
    config["STREAM"] = 1;
    Problem p = Problem::packed(2 * mr + 1, 3 * nv * lanes + 5, 77, precision, -0.75, trans_a ? 0.0 : 1.25);
    p.trans_a = trans_a;
    p = with_padding(p, 3);
    p.ldc = 4096 / std::int64_t(element_size(precision));  // 4 KiB
    expect_matches_reference_on(device, small_m, config, p);
  });
  EXPECT_EQ(cases, 24 * instruction_sets());
}

// A BLAS table tuned before SPLIT_K names 06 configurations without it: they stay valid, and run
// as they were tuned, the threads splitting C.
TEST(SmallMKernel, AConfigurationFromBeforeTheDepthSplitSplitsC) {
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  DeviceInfo avx512 = cpu_device().info();  // where the entry was tuned: its 14 x 2 tile needs 32 registers
  avx512.features = {"sse2", "avx", "avx2", "fma", "avx512f"};
  const SearchSpace space = small_m.space(avx512, Precision::fp32);
  const Config before = {{"KB", 256}, {"MR", 14}, {"NV", 2}, {"STREAM", 0}, {"threads", 1}};
  Config expected = before;
  expected["SPLIT_K"] = 0;
  EXPECT_EQ(space.upgraded(before), expected);
  EXPECT_TRUE(space.is_valid(space.upgraded(before)));
}

// A kernel that reads A and B untransposed only refuses a transposed problem as unsupported
// (verify reports it so), before building anything.
TEST(KernelTransposes, AKernelThatReadsThemUntransposedOnlyIsUnsupported) {
  const Kernel& blocked = registry().kernel("cpu", "03_cache_blocked");
  ASSERT_FALSE(blocked.reads_transposed());
  Problem p = Problem::packed(8, 8, 8);
  p.trans_b = true;
  const Config config = blocked.default_config(cpu_device().info(), Precision::fp32);
  EXPECT_THROW_MENTIONING(blocked.prepare(cpu_device(), p, config), Unsupported, {"03_cache_blocked", "NT"});
  EXPECT_TRUE(registry().kernel("cpu", "01_naive").reads_transposed());
  EXPECT_TRUE(registry().kernel("cpu", "05_packed_avx512").reads_transposed());
}

// The verification plan's sample: after the extremes, configurations at equal steps through the
// valid space in enumeration order, none twice; the whole space when asked for more than it has.
TEST(VerificationSample, SpreadsOverTheValidSpaceAfterTheExtremes) {
  SearchSpace s;
  s.add("A", {1, 2, 3, 4, 5, 6, 7, 8, 9}, "").add("B", {1, 2}, "");
  s.require("A + B <= 9");  // valid: A=1..8 with B=1 and A=1..7 with B=2, A-major: 15 in all
  const Config defaults{{"A", 4}, {"B", 1}};
  const std::vector<Config> extremes = s.extremes(defaults);
  EXPECT_EQ(sampled_configurations(s, defaults, 0), extremes);

  const std::vector<Config> three = sampled_configurations(s, defaults, 3);
  ASSERT_GE(three.size(), extremes.size());
  EXPECT_TRUE(std::equal(extremes.begin(), extremes.end(), three.begin())) << "the extremes come first";
  // Steps through the 15 valid configurations: indices 0, 7 and 14: (1,1), (4,2), (8,1).
  for (const Config& c : {Config{{"A", 1}, {"B", 1}}, Config{{"A", 4}, {"B", 2}}, Config{{"A", 8}, {"B", 1}}})
    EXPECT_EQ(std::count(three.begin(), three.end(), c), 1) << to_string(c);
  EXPECT_LE(three.size(), extremes.size() + 3);

  const std::vector<Config> all = sampled_configurations(s, defaults, 1000);
  EXPECT_EQ(all.size(), 15u);
  const std::vector<Config> valid = s.enumerate();
  EXPECT_EQ(std::set<Config>(all.begin(), all.end()), std::set<Config>(valid.begin(), valid.end()));
}

TEST(KernelRegistry, HoldsTheSixCpuKernelsInCurriculumOrder) {
  EXPECT_EQ(cpu_kernel_names(), (std::vector<std::string>{"01_naive", "02_loop_order", "03_cache_blocked",
                                                          "04_register_blocked_avx2", "05_packed_avx512",
                                                          "06_small_m"}));
  const auto backends = registry().backend_names();
  EXPECT_EQ(backends.front(), "cpu") << "the cpu backend is always built, and first";
  std::size_t all = 0;
  for (const auto& b : backends) all += registry().kernels(b).size();
  EXPECT_EQ(registry().kernels().size(), all);
}

TEST(KernelRegistry, UnknownNamesThrowListingWhatExists) {
  EXPECT_THROW_MENTIONING(registry().kernel("cpu", "nope"), UnknownName, {"nope", "01_naive", "05_packed_avx512"});
  EXPECT_THROW_MENTIONING(registry().kernel("nope", "01_naive"), UnknownName, {"nope", "cpu"});
  EXPECT_THROW_MENTIONING(registry().backend("cuda9"), UnknownName, {"cuda9", "cpu"});
  EXPECT_THROW(registry().kernels("nope"), UnknownName);
}

}  // namespace
}  // namespace gemmlab
