// The `gemmlab` program, run as a child process: exit status (0 ok, 1 wrong result, 2 bad
// input), error messages and the JSON documents of each subcommand.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "gemmlab/cpu.hpp"
#include "gemmlab/results_cache.hpp"
#include "gemmlab/strategy.hpp"
#include "cli_support.hpp"
#include "test_support.hpp"


namespace gemmlab {
namespace {

using nlohmann::json;
using testing::contains;
using testing::CliResult;
using testing::exits_2_saying;
using testing::parse_json;
using testing::read_file;
using testing::run_cli;
using testing::Scratch;

bool have_avx512() { return cpu::detect().has_feature("avx512f"); }

// 05 runs with AVX-512 or with AVX2 and FMA.
#define SKIP_WITHOUT_05() SKIP_IF_UNSUPPORTED(registry().kernel("cpu", "05_packed_avx512"))
// The named value 05's register constraint compares with: 32 zmm registers, or 16 ymm (AVX2).
std::string registers_05() { return have_avx512() ? "zmm_registers" : "ymm_registers"; }

// Runs `gemmlab <args>`, which must succeed (exit status 0) and print one JSON document: returns
// the document, or null after failing the test.
json run_json(const std::string& args, const std::string& env = "") {
  const CliResult r = run_cli(args, env);
  EXPECT_EQ(r.status, 0) << r;
  return r.status == 0 ? parse_json(r) : json();
}

// --- bad input: exit status 2 -----------------------------------------------------------------

TEST(CliRun, UnknownKernelExits2ListingTheKernels) {
  EXPECT_TRUE(exits_2_saying("run --kernel nope --m 8 --n 8 --k 8",
                             {"nope", "01_naive", "02_loop_order", "03_cache_blocked", "04_register_blocked_avx2",
                              "05_packed_avx512"}));
}

TEST(CliRun, UnknownBackendExits2NamingTheBackends) {
  EXPECT_TRUE(exits_2_saying("run --backend nope --kernel 01_naive --m 8 --n 8 --k 8", {"nope", "cpu"}));
}

TEST(CliRun, ParameterValueNotAllowedExits2ListingTheAllowedValues) {
  SKIP_WITHOUT_05();
  EXPECT_TRUE(exits_2_saying("run --kernel 05_packed_avx512 --m 8 --n 8 --k 8 --param MR=5",
                             {"MR=5", "4, 6, 8, 12, 14, 16"}));
}

TEST(CliRun, ConfigurationViolatingTheRegisterConstraintExits2) {
  SKIP_WITHOUT_05();
  EXPECT_TRUE(exits_2_saying(
      "run --kernel 05_packed_avx512 --m 8 --n 8 --k 8 --param MR=16 --param NV=4",
      {"MR*NV + NV + 1 <= " + registers_05(), registers_05() + (have_avx512() ? " = 32" : " = 16")}))
      << "stderr should quote the violated constraint and the named values it compares";
}

TEST(CliRun, UnknownParameterExits2ListingTheParameters) {
  EXPECT_TRUE(exits_2_saying("run --kernel 03_cache_blocked --m 8 --n 8 --k 8 --param FOO=1", {"FOO", "MC", "KC", "NC"}));
}

TEST(CliRun, MalformedParameterExits2) {
  for (const char* bad : {"MR", "MR=x", "=4"}) {
    const CliResult r = run_cli(std::string("run --kernel 03_cache_blocked --m 8 --n 8 --k 8 --param ") + bad);
    EXPECT_EQ(r.status, 2) << "--param " << bad << "\n" << r;
  }
}

TEST(CliRun, NegativeDimensionExits2NamingIt) {
  const CliResult r = run_cli("run --kernel 01_naive --m -1 --n 8 --k 8");
  EXPECT_EQ(r.status, 2) << r;
  EXPECT_TRUE(testing::mentions_word(r.err, "m")) << r;
}

TEST(CliRun, LeadingDimensionTooSmallExits2NamingIt) {
  const CliResult r = run_cli("run --kernel 01_naive --m 8 --n 8 --k 8 --lda 4");
  EXPECT_EQ(r.status, 2) << r;
  EXPECT_TRUE(testing::mentions_word(r.err, "lda")) << r;
}

TEST(CliRun, UnknownOrUnsupportedPrecisionExits2) {
  for (const std::string precision : {"fp128", "fp16"})
    EXPECT_TRUE(exits_2_saying("run --kernel 01_naive --m 8 --n 8 --k 8 --precision " + precision, {precision}));
}

TEST(CliRun, MissingRequiredOptionOrNonNumericValueExits2) {
  EXPECT_EQ(run_cli("run --kernel 01_naive --m 8 --n 8").status, 2);
  EXPECT_EQ(run_cli("run --m 8 --n 8 --k 8").status, 2);
  EXPECT_EQ(run_cli("run --kernel 01_naive --m eight --n 8 --k 8").status, 2);
  EXPECT_EQ(run_cli("run --kernel 01_naive --m 8 --n 8 --k 8 --no-such-option").status, 2);
}

TEST(CliRun, KernelNeedingHiddenInstructionSetExits2SayingUnsupported) {
  EXPECT_TRUE(exits_2_saying("run --kernel 05_packed_avx512 --m 8 --n 8 --k 8 --max-seconds 0.01",
                             {"avx512f"}, "GEMMLAB_CPU_DISABLE=avx512f,avx2"));
}

TEST(Cli, NoSubcommandExits2) {
  EXPECT_EQ(run_cli("").status, 2);
  EXPECT_EQ(run_cli("frobnicate").status, 2);
}

// --- successful runs ----------------------------------------------------------------------------

void expect_run_document(const json& j, const std::string& kernel, const std::string& precision, int m, int n, int k) {
  for (const char* key : {"backend", "device", "kernel", "params", "config_source", "m", "n", "k", "precision", "time_ms",
                          "gflops", "timing", "reference", "ratio_to_reference", "max_rel_error", "tolerance", "valid"})
    EXPECT_TRUE(j.contains(key)) << "the run document lacks \"" << key << "\":\n" << j.dump(2);
  if (::testing::Test::HasFailure()) return;
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_TRUE(j["device"].is_string() && !j["device"].get<std::string>().empty()) << j["device"];
  EXPECT_EQ(j["kernel"], kernel);
  EXPECT_TRUE(j["params"].is_object()) << j["params"];
  EXPECT_EQ(j["m"], m);
  EXPECT_EQ(j["n"], n);
  EXPECT_EQ(j["k"], k);
  EXPECT_EQ(j["precision"], precision);
  EXPECT_EQ(j["valid"], true) << j.dump(2);
  ASSERT_TRUE(j["time_ms"].is_number()) << j["time_ms"];
  EXPECT_GT(j["time_ms"].get<double>(), 0.0);
  EXPECT_EQ(j["timing"]["median_ms"], j["time_ms"]) << "the timing's times are in milliseconds too";
  EXPECT_TRUE(j["reference"]["time_ms"].is_number());
  ASSERT_TRUE(j["gflops"].is_number()) << j["gflops"];
  EXPECT_GT(j["gflops"].get<double>(), 0.0);
  ASSERT_TRUE(j["reference"].is_object());
  EXPECT_EQ(j["reference"]["name"], "openblas");
  ASSERT_TRUE(j["reference"]["gflops"].is_number());
  EXPECT_GT(j["reference"]["gflops"].get<double>(), 0.0);
  ASSERT_TRUE(j["ratio_to_reference"].is_number());
  EXPECT_GT(j["ratio_to_reference"].get<double>(), 0.0);
  ASSERT_TRUE(j["max_rel_error"].is_number()) << j["max_rel_error"];
  ASSERT_TRUE(j["tolerance"].is_number());
  const double eps = precision == "fp32" ? FLT_EPSILON : DBL_EPSILON;
  EXPECT_DOUBLE_EQ(j["tolerance"].get<double>(), (k + 2) * eps);
  EXPECT_LE(j["max_rel_error"].get<double>(), j["tolerance"].get<double>());
}

TEST(CliRun, PackedAvx512JsonReportsTimingReferenceAndValidation) {
  SKIP_WITHOUT_05();
  const json j = run_json("run --kernel 05_packed_avx512 --m 64 --n 48 --k 33 --threads 1 --max-seconds 0.05 --json");
  ASSERT_TRUE(j.is_object()) << j;
  expect_run_document(j, "05_packed_avx512", "fp32", 64, 48, 33);
  EXPECT_EQ(j["params"]["threads"], 1) << "--threads 1 sets the kernel's threads parameter";
  for (const char* p : {"MR", "NV", "MC", "KC", "NC"}) EXPECT_TRUE(j["params"].contains(p)) << p;
}

TEST(CliRun, CacheBlockedFp64WithPaddingAndScalarsJson) {
  const json j = run_json(
      "run --kernel 03_cache_blocked --m 37 --n 29 --k 41 --precision fp64 --alpha -0.75 --beta 1.25 "
      "--lda 45 --ldb 31 --ldc 30 --param MC=16 --threads 1 --max-seconds 0.05 --json");
  ASSERT_TRUE(j.is_object()) << j;
  expect_run_document(j, "03_cache_blocked", "fp64", 37, 29, 41);
  EXPECT_EQ(j.value("lda", 0), 45);
  EXPECT_EQ(j.value("ldb", 0), 31);
  EXPECT_EQ(j.value("ldc", 0), 30);
  EXPECT_EQ(j.value("alpha", 0.0), -0.75);
  EXPECT_EQ(j.value("beta", 0.0), 1.25);
  EXPECT_EQ(j["params"]["MC"], 16) << "--param MC=16 must reach the configuration";
}

TEST(CliRun, TextOutputSaysValidationPassed) {
  const CliResult r = run_cli("run --kernel 02_loop_order --m 9 --n 7 --k 5 --threads 1 --max-seconds 0.02");
  ASSERT_EQ(r.status, 0) << r;
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r;
  EXPECT_TRUE(contains(r.out, "openblas")) << r;
}

// Runs `gemmlab <args> --json` with the fp64 truth (and the timed reference) from a fake CBLAS that
// leaves C = beta*C: the kernel's correct result then disagrees with the "truth". Checks the exit
// status is 1 (wrong result) and returns the JSON document.
json run_against_a_wrong_truth(const std::string& args) {
  const CliResult r = run_cli(args + " --json", "GEMMLAB_OPENBLAS_LIBRARY='" GEMMLAB_FAKE_CBLAS "'");
  EXPECT_EQ(r.status, 1) << r;
  return parse_json(r);
}

TEST(CliRun, WrongResultExits1) {
  const json j = run_against_a_wrong_truth("run --kernel 01_naive --m 5 --n 4 --k 3 --max-seconds 0.01");
  if (j.is_object()) {
    EXPECT_EQ(j["valid"], false);
    EXPECT_FALSE(j.value("reason", std::string()).empty()) << "a failed run should say why";
    EXPECT_TRUE(j["time_ms"].is_null()) << "an invalid kernel is not timed";
  }
}

// --- verify ------------------------------------------------------------------------------------

TEST(CliVerify, LoopOrderOnTwoShapesPassesEveryCase) {
  const json j = run_json("verify --kernel 02_loop_order --shapes 7x13x5,1x1x1 --json");
  ASSERT_TRUE(j.is_object() && j.contains("cases") && j["cases"].is_array()) << j;
  // 1 configuration (no parameters) x 2 shapes x 2 scalars x 2 precisions.
  EXPECT_EQ(j["cases"].size(), 8u) << j.dump(2);
  EXPECT_EQ(j["passed"], 8);
  EXPECT_EQ(j["failed"], 0);
  std::set<std::string> shapes, precisions;
  for (const json& c : j["cases"]) {
    EXPECT_EQ(c["kernel"], "02_loop_order");
    EXPECT_EQ(c["backend"], "cpu");
    EXPECT_EQ(c["status"], "passed") << c.dump();
    shapes.insert(c["shape"].get<std::string>());
    precisions.insert(c["precision"].get<std::string>());
    EXPECT_TRUE(c["max_rel_error"].is_number());
    EXPECT_LE(c["max_rel_error"].get<double>(), c["tolerance"].get<double>());
  }
  EXPECT_EQ(shapes, (std::set<std::string>{"7x13x5", "1x1x1"}));
  EXPECT_EQ(precisions, (std::set<std::string>{"fp32", "fp64"}));
}

TEST(CliVerify, PaddedDoublesTheCasesAndUsesLongerLeadingDimensions) {
  const json j = run_json("verify --kernel 02_loop_order --shapes 3x4x5 --precision fp64 --padded --json");
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["cases"].size(), 4u) << "2 scalars x {packed, padded}\n" << j.dump(2);
  std::set<int> ldcs;
  for (const json& c : j["cases"]) ldcs.insert(c["ldc"].get<int>());
  EXPECT_EQ(ldcs, (std::set<int>{4, 7}));
}

TEST(CliVerify, BadShapeOrUnknownKernelExits2) {
  EXPECT_TRUE(exits_2_saying("verify --kernel 02_loop_order --shapes 7x13", {"7x13"}));
  EXPECT_TRUE(exits_2_saying("verify --kernel nope --shapes 1x1x1", {"01_naive"}));
}

TEST(CliVerify, SampleAddsConfigurationsFromTheSpaceAndRejectsWhatIsNotACount) {
  const json plain = run_json("verify --kernel 03_cache_blocked --shapes 7x13x5 --precision fp32 --json");
  const json sampled = run_json("verify --kernel 03_cache_blocked --shapes 7x13x5 --precision fp32 --sample 5 --json");
  ASSERT_TRUE(plain.is_object() && sampled.is_object()) << plain << sampled;
  EXPECT_EQ(sampled["failed"], 0) << sampled.dump(2);
  std::set<std::string> before, after;
  for (const json& c : plain["cases"]) before.insert(c["params"].dump());
  for (const json& c : sampled["cases"]) after.insert(c["params"].dump());
  EXPECT_TRUE(std::includes(after.begin(), after.end(), before.begin(), before.end()));
  EXPECT_GT(after.size(), before.size()) << "the 5 sampled configurations cannot all be extremes";
  EXPECT_LE(after.size(), before.size() + 5);
  for (const char* bad : {"x", "-3", "5x", "1e3"})
    EXPECT_TRUE(exits_2_saying(std::string("verify --kernel 01_naive --shapes 1x1x1 --sample '") + bad + "'",
                               {"--sample"}))
        << bad;
}

TEST(CliVerify, KernelNeedingHiddenInstructionSetIsReportedUnsupported) {
  const CliResult r =
      run_cli("verify --kernel 05_packed_avx512 --shapes 1x1x1 --json", "GEMMLAB_CPU_DISABLE=avx512f,avx2");
  ASSERT_EQ(r.status, 0) << "unsupported is not a failure\n" << r;
  const json j = parse_json(r);
  ASSERT_TRUE(j.is_object()) << r;
  EXPECT_EQ(j["unsupported"], 1);
  EXPECT_EQ(j["passed"], 0);
  ASSERT_EQ(j["cases"].size(), 1u);
  EXPECT_EQ(j["cases"][0]["status"], "unsupported");
  EXPECT_TRUE(contains(j["cases"][0]["reason"].get<std::string>(), "avx512f")) << j.dump(2);
}

TEST(CliVerify, WrongResultsExit1) {
  const json j = run_against_a_wrong_truth("verify --kernel 01_naive --shapes 3x2x4 --precision fp32");
  if (j.is_object()) {
    EXPECT_GT(j["failed"].get<int>(), 0) << j.dump(2);
  }
}

// --- kernels and devices -----------------------------------------------------------------------

TEST(CliKernels, JsonListsTheSixCpuKernelsWithTheirSpaces) {
  const json j = run_json("kernels --backend cpu --json");
  ASSERT_TRUE(j.is_object() && j.contains("kernels") && j["kernels"].is_array()) << j;
  std::vector<std::string> names;
  for (const json& k : j["kernels"]) {
    for (const char* key : {"name", "backend", "parameters", "named_values", "constraints", "raw_size",
                            "default_config", "summary", "precisions", "supported"})
      ASSERT_TRUE(k.contains(key)) << "kernel entry lacks \"" << key << "\": " << k.dump(2);
    names.push_back(k["name"].get<std::string>());
    EXPECT_EQ(k["backend"], "cpu");
    ASSERT_TRUE(k["parameters"].is_array());
    ASSERT_TRUE(k["constraints"].is_array());
    ASSERT_TRUE(k["default_config"].is_object());
    double size = 1;
    for (const json& p : k["parameters"]) {
      const std::string name = p["name"].get<std::string>();
      ASSERT_TRUE(p["values"].is_array() && !p["values"].empty()) << p.dump();
      size *= static_cast<double>(p["values"].size());
      ASSERT_TRUE(k["default_config"].contains(name)) << k["name"] << ": default_config lacks " << name;
      const auto& values = p["values"];
      EXPECT_NE(std::find(values.begin(), values.end(), k["default_config"][name]), values.end())
          << k["name"] << ": the default " << name << "=" << k["default_config"][name] << " is not an allowed value";
    }
    EXPECT_EQ(k["default_config"].size(), k["parameters"].size()) << k.dump(2);
    EXPECT_DOUBLE_EQ(k["raw_size"].get<double>(), size) << k["name"];
    // Each constraint as the code evaluates it, and what it protects.
    for (const json& c : k["constraints"])
      EXPECT_TRUE(c.is_object() && c["expression"].is_string() && c["why"].is_string()) << c;
    ASSERT_TRUE(k["named_values"].is_array());
    for (const json& v : k["named_values"])
      EXPECT_TRUE(v["name"].is_string() && v["definition"].is_string() && v["help"].is_string() &&
                  (v["value"].is_number_integer() || v["value"].is_null()))
          << v;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"01_naive", "02_loop_order", "03_cache_blocked",
                                             "04_register_blocked_avx2", "05_packed_avx512", "06_small_m"}));
  const json& packed = j["kernels"][4];
  std::set<std::string> params;
  for (const json& p : packed["parameters"]) params.insert(p["name"].get<std::string>());
  EXPECT_EQ(params, (std::set<std::string>{"MR", "NV", "MC", "KC", "NC", "threads", "PACK_A", "PACK_B",
                                           "SPLIT_ROWS"}));
  EXPECT_EQ(packed["constraints"].size(), 6u);
}

TEST(CliKernels, EachKernelHasItsOwnSourceHash) {
  const json j = run_json("kernels --backend cpu --json");
  std::set<std::string> hashes;
  for (const auto& k : j["kernels"]) {
    const std::string hash = k["source_hash"];
    EXPECT_EQ(hash.size(), 64u) << k["name"];
    EXPECT_EQ(hash.find_first_not_of("0123456789abcdef"), std::string::npos) << hash;
    EXPECT_TRUE(hashes.insert(hash).second) << "two kernels share a hash: " << k["name"];
  }
  EXPECT_GE(hashes.size(), 5u);
}

// A kernel that stages blocks of A and B names the tile of C they cover tile_m x tile_n (the sweep
// command computes memory traffic from it): 03 and 05 block MC x NC of C; 01, 02 and 04 stage
// nothing and name none.
TEST(CliKernels, KernelsThatStageBlocksNameTheirTileOfC) {
  const json j = run_json("kernels --backend cpu --json");
  ASSERT_TRUE(j.is_object()) << j;
  using Tile = std::map<std::string, std::string>;  // tile_m, tile_n -> definition
  std::map<std::string, Tile> tiles;
  for (const json& k : j["kernels"]) {
    Tile& tile = tiles[k["name"].get<std::string>()];
    for (const json& v : k["named_values"])
      if (v["name"] == "tile_m" || v["name"] == "tile_n") tile[v["name"].get<std::string>()] = v["definition"];
  }
  EXPECT_EQ(tiles, (std::map<std::string, Tile>{{"01_naive", {}},
                                                {"02_loop_order", {}},
                                                {"03_cache_blocked", {{"tile_m", "MC"}, {"tile_n", "NC"}}},
                                                {"04_register_blocked_avx2", {}},
                                                {"05_packed_avx512", {{"tile_m", "MC"}, {"tile_n", "NC"}}},
                                                {"06_small_m", {}}}));
}

TEST(CliKernels, Fp64SpacesAndTextOutput) {
  const CliResult fp64 = run_cli("kernels --backend cpu --json --precision fp64");
  ASSERT_EQ(fp64.status, 0) << fp64;
  const json j = parse_json(fp64);
  ASSERT_TRUE(j.is_object()) << fp64;
  for (const json& k : j["kernels"]) EXPECT_EQ(k.value("space_precision", ""), "fp64");
  const CliResult text = run_cli("kernels --backend cpu");
  ASSERT_EQ(text.status, 0) << text;
  EXPECT_TRUE(contains(text.out, "05_packed_avx512") && contains(text.out, "MR")) << text;
  // The constraints are listed for the precision their sizes were computed in.
  // 05's registers: 32 zmm with AVX-512, else 16 ymm (its AVX2 micro-kernels).
  EXPECT_TRUE(contains(text.out, "constraints for fp32:\n      MR*NV + NV + 1 <= " + registers_05() + "  ("))
      << text;
  EXPECT_TRUE(contains(text.out, "      with " + registers_05() + (have_avx512() ? " = 32  (" : " = 16  (")))
      << text;
  const CliResult text64 = run_cli("kernels --backend cpu --precision fp64");
  EXPECT_TRUE(contains(text64.out, "constraints for fp64:")) << text64;
  EXPECT_EQ(run_cli("kernels --precision fp128").status, 2);
}

TEST(CliDevices, JsonWithoutMeasurementListsTheCpu) {
  const json j = run_json("devices --json --no-measure");
  ASSERT_TRUE(j.is_object() && j.contains("devices") && j["devices"].is_array()) << j;
  ASSERT_GE(j["devices"].size(), 1u) << j.dump(2);
  const json& d = j["devices"][0];
  EXPECT_EQ(d["backend"], "cpu");
  std::size_t cpus = 0, simulated = 0;
  for (const json& device : j["devices"]) {
    cpus += device["backend"] == "cpu";
    simulated += device["backend"] == "systolic";
  }
  EXPECT_EQ(cpus, 1u);
  EXPECT_EQ(simulated, 6u) << "one simulated device per systolic preset";
  EXPECT_EQ(d["index"], 0);
  EXPECT_GE(d["cores"].get<int>(), 1);
  EXPECT_TRUE(d["features"].is_array());
  EXPECT_TRUE(d["caches"].is_array() && !d["caches"].empty());
  EXPECT_GT(d["peak_gflops_fp32"].get<double>(), 0.0);
  EXPECT_TRUE(d["measured"].is_null()) << "--no-measure must not measure: " << d["measured"];
}

TEST(CliDevices, HiddenFeaturesDoNotShowInTheList) {
  const json j = run_json("devices --json --no-measure", "GEMMLAB_CPU_DISABLE=avx512f,avx2");
  ASSERT_TRUE(j.is_object()) << j;
  for (const json& f : j["devices"][0]["features"]) {
    EXPECT_NE(f, "avx512f");
    EXPECT_NE(f, "avx2");
  }
}

// --- help --------------------------------------------------------------------------------------

TEST(CliHelp, EverySubcommandPrintsHelpAndExits0) {
  for (const auto& [args, option] : {std::pair{"--help", "run"}, std::pair{"run --help", "--kernel"},
                                     std::pair{"verify --help", "--shapes"}, std::pair{"kernels --help", "--precision"},
                                     std::pair{"devices --help", "--no-measure"}}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 0) << "gemmlab " << args << "\n" << r;
    EXPECT_TRUE(contains(r.out, option)) << "gemmlab " << args << " should mention " << option << "\n" << r;
  }
}


// --- tune and replay ----------------------------------------------------------------------

TEST(CliTune, JsonHasTheBestTheCountsAndTheHistory) {
  const json j = run_json("tune --kernel 03_cache_blocked --m 33 --n 31 --k 29 --budget 5 --seed 4 --strategy random --json");
  for (const char* key : {"best", "evaluations", "reused_from_cache", "failed", "invalid", "strategy", "seed", "history"})
    EXPECT_TRUE(j.contains(key)) << "missing key " << key << "\n" << j;
  EXPECT_EQ(j["evaluations"], 5);
  EXPECT_EQ(j["history"].size(), 5u);
  EXPECT_EQ(j["strategy"], "random");
  for (const char* key : {"params", "gflops", "ratio_to_reference", "max_rel_error"})
    EXPECT_TRUE(j["best"].contains(key)) << "best lacks " << key << "\n" << j;
  double best = 0;
  for (const auto& h : j["history"]) best = std::max(best, h["gflops"].get<double>());
  EXPECT_EQ(j["best"]["gflops"].get<double>(), best);
}

TEST(CliTune, TextEndsWithTheTopConfigurationsAndTheFailureCounts) {
  const CliResult r = run_cli("tune --kernel 04_register_blocked_avx2 --m 40 --n 40 --k 40 --budget 4");
  ASSERT_EQ(r.status, 0) << r;
  EXPECT_TRUE(contains(r.out, "rank")) << r;
  EXPECT_TRUE(contains(r.out, "failed: 0, invalid: 0")) << r;
  EXPECT_TRUE(contains(r.out, "4/4")) << "one progress line per evaluation when not on a terminal\n" << r;
}

TEST(CliTune, BadInputExitsWithStatusTwo) {
  for (const std::string args : {"tune --kernel 03_cache_blocked --m 8 --n 8 --k 8 --strategy magic",
                                 "tune --kernel nope --m 8 --n 8 --k 8",
                                 "tune --kernel 03_cache_blocked --m -8 --n 8 --k 8",
                                 "tune --kernel 03_cache_blocked --m 8 --n 8 --k 8 --budget 0",
                                 "tune --kernel 03_cache_blocked --m 8 --n 8 --k 8 --timeout-factor 0",
                                 "tune --kernel 03_cache_blocked --m 8 --n 8 --k 8 --reference nope"})
    EXPECT_TRUE(exits_2_saying(args));
}

TEST(CliBlasTable, BadInputExitsWithStatusTwo) {
  // Small enough that a check gone missing fails quickly (the cache is the test's own).
  const std::string one = " --shapes 8x8x8 --precision fp32 --library-threads 1 --budget 1";
  for (const std::string& args : std::vector<std::string>{
           "blas-table --tune --shapes 8x8x8 --budget 0", "blas-table --tune --max-seconds -1" + one,
           "blas-table --tune --max-seconds nan" + one, "blas-table --precision fp16",
           "blas-table --tune --shapes 8x8"})
    EXPECT_TRUE(exits_2_saying(args)) << args;
}

TEST(CliBlasTable, TunesWithTheBudgetTheMeasuredTablesUsedByDefault) {
  const CliResult r = run_cli("blas-table --help");
  ASSERT_EQ(r.status, 0) << r;
  EXPECT_TRUE(contains(r.out, "--budget UINT=80")) << r;
  EXPECT_TRUE(contains(r.out, "--max-seconds FLOAT=15")) << r;
}

TEST(CliTune, EvaluatesInAWorkerProcessUnlessToldOtherwise) {
  for (const std::string mode : {"", " --in-process"}) {
    const CliResult r = run_cli("tune --kernel 02_loop_order --m 20 --n 21 --k 22 --budget 1 --json" + mode);
    ASSERT_EQ(r.status, 0) << mode << "\n" << r;
    const json j = parse_json(r);
    EXPECT_EQ(j["history"][0]["status"], "ok") << r;
    EXPECT_EQ(j["worker_restarts"], 0) << r;
  }
  const CliResult help = run_cli("--help");
  EXPECT_FALSE(contains(help.out, "worker")) << "the worker subcommand is internal\n" << help;
}

// --update retunes some classes and keeps the table's others: here a made-up entry of a class
// nothing tunes (its kernel's code changed since, say) stays as it was, the tuned class is
// replaced by what the tuning found, and a table that is missing or of another machine is a
// usage error before anything is tuned. A build keeps the cache's entries of --precision only.
TEST(CliBlasTable, UpdateRetunesTheGivenShapesAndKeepsTheTablesOtherClasses) {
  const Scratch scratch;
  const std::string dir = scratch.dir().string();
  const std::string out = dir + "/table.json", cache = dir + "/cache.sqlite";
  const std::string tune = "blas-table --tune --update --cache '" + cache + "' --out '" + out +
                           "' --shapes 8x8x8 --precision fp32 --library-threads 1 --budget 1 --json";
  EXPECT_TRUE(exits_2_saying(tune, {"--update", "no table"}));
  json table = run_json("blas-table --no-cache --out '" + out + "' --json")["contents"];
  ASSERT_TRUE(table["entries"].empty()) << table;
  const json tuned_class = {{"precision", "fp32"},
                            {"transposes", "NN"},
                            {"m_bucket", 3},
                            {"n_bucket", 3},
                            {"k_bucket", 3},
                            {"library_threads", 1},
                            {"kernel", "01_naive"},
                            {"params", json::object()},
                            {"source", "made up: to be replaced"}};
  const json other_class = {{"precision", "fp64"},
                            {"transposes", "NT"},
                            {"m_bucket", 9},
                            {"n_bucket", 9},
                            {"k_bucket", 9},
                            {"library_threads", 1},
                            {"kernel", "01_naive"},
                            {"params", json::object()},
                            {"source", "made up: to be kept"}};
  table["entries"] = json::array({tuned_class, other_class});
  std::ofstream(out) << table.dump();

  const json j = run_json(tune);
  EXPECT_EQ(j["tuned"], 1) << j;
  EXPECT_EQ(j["kept"], 1) << j;
  int tuned = 0, kept = 0;
  for (const json& e : j["contents"]["entries"]) {
    if (e["m_bucket"] == 3 && e["precision"] == "fp32") {
      ++tuned;
      EXPECT_TRUE(e["source"].get<std::string>().starts_with("tuned")) << e;
    }
    json without_name = e;
    without_name.erase("class");  // the class in words, written for the reader
    if (without_name == other_class) ++kept;
  }
  EXPECT_EQ(tuned, 1) << j;
  EXPECT_EQ(kept, 1) << j;
  EXPECT_EQ(j["contents"]["entries"].size(), 2u) << j;
  // A build takes the cache's entries of the precisions asked for: here fp32 only.
  const std::string build = "blas-table --cache '" + cache + "' --out '" + dir +
                            "/built.json' --library-threads 1 --json --precision ";
  EXPECT_EQ(run_json(build + "fp32")["contents"]["entries"].size(), 1u);
  EXPECT_EQ(run_json(build + "fp64")["contents"]["entries"].size(), 0u);

  json elsewhere = j["contents"];
  elsewhere["device"] = "another machine";
  elsewhere["device_name"] = "Another CPU";
  std::ofstream(out) << elsewhere.dump();
  EXPECT_TRUE(exits_2_saying(tune, {"another device", "Another CPU"}));
}

TEST(CliTune, ConstraintExpressionsFromTheCommandLineAndAFileNarrowTheSpace) {
  const Scratch scratch;
  const std::string dir = scratch.dir().string();
  {
    std::ofstream file(dir + "/extra.txt");
    file << "# the tests' own constraints\n\nKC >= 256\n  NC % 64 == 0 || NC == 16\n";
  }
  const json j = run_json("tune --kernel 03_cache_blocked --m 20 --n 20 --k 20 --budget 6 --no-cache --json "
                          "--constraint 'MC == 32' --constraints-file '" + dir + "/extra.txt'");
  EXPECT_EQ(j["evaluations"], 6);
  for (const auto& h : j["history"]) {
    EXPECT_EQ(h["params"]["MC"], 32) << h;
    EXPECT_GE(h["params"]["KC"], 256) << h;
    const int nc = h["params"]["NC"];
    EXPECT_TRUE(nc % 64 == 0 || nc == 16) << h;
  }
}

TEST(CliTune, AMalformedOrUnknownConstraintIsExitStatusTwoSayingWhere) {
  const std::string tune = "tune --kernel 03_cache_blocked --m 8 --n 8 --k 8 --no-cache ";
  EXPECT_TRUE(exits_2_saying(tune + "--constraint 'MC == (32'", {"column 10"}));
  EXPECT_TRUE(exits_2_saying(tune + "--constraint 'MR == 4'", {"'MR'", "MC, KC, NC"}));
  EXPECT_TRUE(exits_2_saying(tune + "--constraint 'MC < 0'"));
  EXPECT_TRUE(exits_2_saying(tune + "--constraints-file /nonexistent/c.txt", {"/nonexistent/c.txt"}));
}

// --- the results cache -------------------------------------------------------------------

// Starts `gemmlab <args> >out_path` in the background.
pid_t start_cli(const std::string& args, const std::string& out_path) {
  const std::string command = "exec '" GEMMLAB_CLI "' " + args + " >'" + out_path + "' 2>'" + out_path + ".err'";
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  EXPECT_EQ(::posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  return pid;
}


std::size_t results_in(const std::string& cache_path) {
  std::size_t n = 0;
  for (const auto& g : ResultsCache(cache_path).groups()) n += g.results;
  return n;
}

std::vector<json> history_params(const json& j) {
  std::vector<json> params;
  for (const auto& h : j["history"]) params.push_back(h["params"]);
  return params;
}

TEST(CliCache, ARerunReusesEveryResultAndSaysSo) {
  const Scratch scratch;
  const std::string dir = scratch.dir().string();
  const std::string args = "tune --kernel 02_loop_order --m 30 --n 31 --k 32 --budget 1 --json --cache '" + dir + "/c.sqlite'";
  const CliResult first = run_cli(args);
  ASSERT_EQ(first.status, 0) << first;
  EXPECT_EQ(parse_json(first)["reused_from_cache"], 0);
  const CliResult second = run_cli(args);
  ASSERT_EQ(second.status, 0) << second;
  const json j = parse_json(second);
  EXPECT_EQ(j["reused_from_cache"], 1) << second;
  EXPECT_EQ(j["history"][0]["from_cache"], true) << second;
  EXPECT_EQ(j["best"]["gflops"], parse_json(first)["best"]["gflops"]) << "the cached measurement is the one reused";
  const CliResult off = run_cli("tune --kernel 02_loop_order --m 30 --n 31 --k 32 --budget 1 --json --no-cache");
  ASSERT_EQ(off.status, 0) << off;
  EXPECT_EQ(parse_json(off)["reused_from_cache"], 0);
}

TEST(CliCache, AfterKillNineTheSameCommandContinuesFromTheCachedResults) {
  const Scratch scratch;
  const std::string dir = scratch.dir().string();
  const std::string options = "tune --kernel 03_cache_blocked --m 160 --n 150 --k 140 --budget 40 --strategy random --seed 9 --json";
  const std::string killed_cache = dir + "/killed.sqlite";
  const pid_t pid = start_cli(options + " --cache '" + killed_cache + "'", dir + "/killed.json");
  ASSERT_GT(pid, 0);
  // Kill it once a few results are in, at whatever it is doing then.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline &&
         (!std::filesystem::exists(killed_cache) || results_in(killed_cache) < 4))
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the run ended before it was killed; the test needs a longer run\n" << read_file(dir + "/killed.json.err");
  const std::size_t stored = results_in(killed_cache);
  ASSERT_GE(stored, 4u);
  ASSERT_LT(stored, 40u);

  const CliResult resumed = run_cli(options + " --cache '" + killed_cache + "'");
  ASSERT_EQ(resumed.status, 0) << resumed;
  const json r = parse_json(resumed);
  EXPECT_EQ(r["evaluations"], 40);
  EXPECT_EQ(r["reused_from_cache"], stored) << "every result stored before the kill is reused, nothing else";
  EXPECT_EQ(results_in(killed_cache), 40u);

  // The resumed run took the same path as a run that was never interrupted.
  const CliResult whole = run_cli(options + " --cache '" + dir + "/whole.sqlite'");
  ASSERT_EQ(whole.status, 0) << whole;
  EXPECT_EQ(history_params(r), history_params(parse_json(whole)));
}

TEST(CliCache, TwoRunsSharingOneCacheBothComplete) {
  const Scratch scratch;
  const std::string dir = scratch.dir().string();
  const std::string cache = dir + "/shared.sqlite";
  std::vector<pid_t> runs;
  for (int seed : {1, 2})
    runs.push_back(start_cli("tune --kernel 03_cache_blocked --m 200 --n 200 --k 200 --budget 40 --strategy random --json --seed " +
                                 std::to_string(seed) + " --cache '" + cache + "'",
                             dir + "/run" + std::to_string(seed) + ".json"));
  for (std::size_t i = 0; i < runs.size(); ++i) {
    int status = 0;
    ASSERT_EQ(::waitpid(runs[i], &status, 0), runs[i]);
    const std::string out = dir + "/run" + std::to_string(i + 1) + ".json";
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(out) << read_file(out + ".err");
    EXPECT_EQ(json::parse(read_file(out))["evaluations"], 40);
  }
  std::set<json> distinct;
  for (int seed : {1, 2})
    for (const auto& p : history_params(json::parse(read_file(dir + "/run" + std::to_string(seed) + ".json")))) distinct.insert(p);
  EXPECT_EQ(results_in(cache), distinct.size()) << "every configuration either run evaluated is stored once";
}

TEST(CliCache, AFileThatIsNotAGemmlabCacheIsAClearErrorAndIsLeftAlone) {
  const Scratch scratch;
  const std::string dir = scratch.dir().string();
  const std::string path = dir + "/not-a-cache.sqlite";
  {
    std::ofstream out(path, std::ios::binary);
    out << "these are someone's notes, not a database\n";
  }
  const std::string before = read_file(path);
  EXPECT_TRUE(exits_2_saying("tune --kernel 02_loop_order --m 8 --n 8 --k 8 --budget 1 --cache '" + path + "'", {path}));
  EXPECT_EQ(read_file(path), before) << "the file was modified";
  EXPECT_TRUE(exits_2_saying("tune --kernel 02_loop_order --m 8 --n 8 --k 8 --budget 1 --no-cache --cache '" + path + "'"));
}

TEST(CliReplay, JsonReportsEveryStrategyAtTheBudgets) {
  const json j = run_json(std::string("replay --record '") + GEMMLAB_TEST_DATA + "/small_record.json' --budget 6 --runs 5 --json");
  ASSERT_EQ(j["strategies"].size(), strategy_names().size()) << j;
  for (const auto& s : j["strategies"]) {
    EXPECT_TRUE(s.contains("name"));
    EXPECT_DOUBLE_EQ(s["fraction_of_optimum"]["6"].get<double>(), 1.0) << s.dump();
    EXPECT_TRUE(s.contains("evals_to_within_5pct"));
  }
}

// The recorded Xgemm parameters as opencl/03_register_tiled's: CLBlast's M side is our N side.
TEST(CliReplay, MappingTranslatesTheRecordsParametersAndBestConfiguration) {
  const std::string record = std::string(GEMMLAB_SHARED_DATA) + "/kernel_tuner_gemm/RTX_3090.json.gz";
  if (!std::ifstream(record)) GTEST_SKIP() << record << " is not here";
  const json j = run_json("replay --record '" + record + "' --mapping --json");
  std::map<std::string, std::string> ours;
  for (const auto& row : j["mapping"]) ours[row["record"].get<std::string>()] = row["ours"].get<std::string>();
  EXPECT_EQ(ours["MWG"], "NWG");
  EXPECT_EQ(ours["VWM"], "VWN");
  EXPECT_EQ(ours["SA"], "SB");
  EXPECT_EQ(ours["STRM"], "");
  const json& best = j["best_as_03_register_tiled"];
  ASSERT_TRUE(best.is_object() && best.contains("NWG") && best.contains("MDIMC")) << j.dump(2);
  for (const auto& row : j["mapping"]) {
    if (row["ours"].get<std::string>().empty() || row["ours"] == "precision") continue;
    EXPECT_EQ(best[row["ours"].get<std::string>()], row["best_value"]) << row.dump();
  }
}

TEST(CliReplay, AMissingOrBrokenRecordIsAClearErrorWithStatusTwo) {
  EXPECT_TRUE(exits_2_saying("replay --record /nonexistent/record.json", {"/nonexistent/record.json"}));
  EXPECT_TRUE(exits_2_saying(std::string("replay --record '") + GEMMLAB_TEST_DATA + "/small_record.json' --strategy magic",
                             {"bayesian"}))
      << "the error lists the strategies";
}

}  // namespace
}  // namespace gemmlab
