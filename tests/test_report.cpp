// The hardware comparison: `gemmlab sweep` (GFLOP/s against size for each kernel, its tuned
// configuration from the results cache where one exists, the reference beside it, the ceilings),
// RAPL power readings, and `gemmlab report` rendering fixture results into index.html whose plots
// a headless Chromium loads.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "cli_support.hpp"
#include "gemmlab/cpu.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::contains;
using testing::parse_json;
using testing::run_cli;

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

TEST(CliSweep, EachKernelAtEachShapeWithTheReferenceCeilingsTilesAndLimits) {
  const testing::CliResult r = run_cli(
      "sweep --backend cpu --kernels 01_naive,03_cache_blocked,04_register_blocked_avx2 --sizes 32,16 "
      "--shapes 40x8x24 --max-seconds 0.05 --no-cache --json");
  ASSERT_EQ(r.status, 0) << r;
  const nlohmann::json j = parse_json(r);
  EXPECT_EQ(j["kind"], "sweep");
  EXPECT_EQ(j["schema"], 2);
  EXPECT_EQ(j["backend"], "cpu");
  for (const char* key : {"date", "command", "device", "device_fingerprint", "reference", "power_source", "results"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_GT(j["device"]["measured"]["fma_gflops_fp32"].get<double>(), 0) << "ceilings measured";
  EXPECT_TRUE(contains(j["command"].get<std::string>(), "--sizes 32,16"));
  std::set<std::string> seen;
  for (const auto& row : j["results"]) {
    seen.insert(row["kernel"].get<std::string>() + " " + std::to_string(row["m"].get<int>()) + "x" +
                std::to_string(row["n"].get<int>()) + "x" + std::to_string(row["k"].get<int>()));
    EXPECT_TRUE(row["valid"].get<bool>()) << row;
    EXPECT_GT(row["gflops"].get<double>(), 0) << row;
    EXPECT_GT(row["reference"]["gflops"].get<double>(), 0) << row;
    EXPECT_GT(row["time_ms"].get<double>(), 0) << "times in milliseconds, as run writes them\n" << row;
    EXPECT_FALSE(row.contains("time_s")) << row;
    EXPECT_GE(row["timing"]["spread"].get<double>(), 0) << row;
    EXPECT_EQ(row["config_source"], "default");
    if (row["kernel"] == "03_cache_blocked") {
      // A 16x16 problem with MC x NC tiles: one tile, every operand read once.
      ASSERT_TRUE(row.contains("arithmetic_intensity")) << row;
      EXPECT_GT(row["bytes_moved"].get<double>(), 0);
      EXPECT_GE(row["parallel_tiles"].get<int>(), 1);
    }
    if (row["kernel"] == "04_register_blocked_avx2") {
      // Its register tile cannot grow: the listing says which constraint stops it.
      bool registers = false;
      for (const auto& limit : row["growth_limits"])
        for (const auto& c : limit.value("constraints", nlohmann::json::array()))
          registers =
              registers ||
              contains(c["expression"].get<std::string>() + " " + c["why"].get<std::string>(), "registers");
      EXPECT_TRUE(registers) << row["growth_limits"];
    }
  }
  // Sizes are sorted; the extra shape is there; 3 kernels x 3 shapes.
  EXPECT_EQ(seen.size(), 9u);
  EXPECT_TRUE(seen.count("01_naive 40x8x24"));
  if (!fs::exists("/sys/class/powercap/intel-rapl:0/energy_uj")) {
    EXPECT_EQ(j["power_source"], "not measured");
  }
}

TEST(CliSweep, UsesTheTunedConfigurationFromTheResultsCache) {
  const fs::path dir = fresh_dir("sweep-cache");
  const std::string cache = (dir / "results.sqlite").string();
  const testing::CliResult tuned = run_cli("tune --backend cpu --kernel 03_cache_blocked --m 24 --n 24 --k 24 "
                                           "--budget 4 --in-process --json --cache " + cache);
  ASSERT_EQ(tuned.status, 0) << tuned;
  const nlohmann::json best = parse_json(tuned)["best"]["params"];
  const testing::CliResult r = run_cli("sweep --backend cpu --kernels 03_cache_blocked --sizes 24 --shapes 8x8x8 "
                                       "--max-seconds 0.05 --no-ceilings --json --cache " + cache);
  ASSERT_EQ(r.status, 0) << r;
  const nlohmann::json j = parse_json(r);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_TRUE(contains(j["results"][0]["config_source"].get<std::string>(), "tuned")) << j["results"][0];
  EXPECT_EQ(j["results"][0]["params"], best);
  // 8x8x8 was not tuned: the nearest tuned shape's configuration, saying so.
  EXPECT_TRUE(contains(j["results"][1]["config_source"].get<std::string>(), " for 24x24x24")) << j["results"][1];
  EXPECT_EQ(j["results"][1]["params"], best);
}

TEST(CliSweep, BadInputExitsWithStatusTwo) {
  for (const char* args : {"sweep --backend cpu --sizes 0", "sweep --backend cpu --sizes 16,x",
                           "sweep --backend cpu --kernels no_such_kernel --sizes 16", "sweep --backend cpu --shapes 4x4",
                           "sweep --backend nope --sizes 16", "sweep --backend cpu --precision fp16 --sizes 16"}) {
    const testing::CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r;
    EXPECT_FALSE(r.err.empty()) << args;
  }
}

TEST(RaplMeter, AveragePowerBetweenReadingsAcrossACounterWrap) {
  const fs::path root = fresh_dir("powercap");
  fs::create_directories(root / "intel-rapl:0");
  fs::create_directories(root / "intel-rapl:0:0");  // a sub-domain (cores): inside the package, not added
  write(root / "intel-rapl:0" / "max_energy_range_uj", "10000000\n");
  write(root / "intel-rapl:0" / "energy_uj", "9500000\n");
  write(root / "intel-rapl:0:0" / "energy_uj", "0\n");
  auto meter = cpu::RaplMeter::open(root.string());
  ASSERT_TRUE(meter);
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  write(root / "intel-rapl:0" / "energy_uj", "1500000\n");  // wrapped: 0.5 J + 1.5 J = 2 J
  const auto watts = meter->watts();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(watts);
  EXPECT_NEAR(*watts, 2.0 / seconds, 2.0 / seconds * 0.05);
  EXPECT_FALSE(cpu::RaplMeter::open((root / "nothing-here").string())) << "no counters: not measured";
  write(root / "intel-rapl:0" / "energy_uj", "not a number\n");
  EXPECT_FALSE(cpu::RaplMeter::open(root.string())) << "unreadable counters: not measured";
}

TEST(CliSweep, ReportsRaplPowerWhereTheCountersAreReadable) {
  const fs::path root = fresh_dir("powercap-cli");
  fs::create_directories(root / "intel-rapl:0");
  write(root / "intel-rapl:0" / "max_energy_range_uj", "262143328850\n");
  write(root / "intel-rapl:0" / "energy_uj", "1000\n");
  const testing::CliResult r = run_cli("sweep --backend cpu --kernels 02_loop_order --sizes 16 --shapes 8x8x8 "
                                       "--max-seconds 0.05 --no-ceilings --no-cache --json",
                                       "GEMMLAB_POWERCAP_ROOT=" + root.string());
  ASSERT_EQ(r.status, 0) << r;
  const nlohmann::json j = parse_json(r);
  EXPECT_EQ(j["power_source"], "RAPL package energy");
  // The counter never moves here: 0 W, and no GFLOP/s per watt rather than a division by zero.
  const auto& power = j["results"][0]["power"]["kernel"];
  EXPECT_EQ(power["watts"].get<double>(), 0.0);
  EXPECT_TRUE(power["gflops_per_watt"].is_null());
}

std::string fixture(const char* name) { return std::string(GEMMLAB_TEST_DATA) + "/report/" + name; }

std::string report_inputs() {
  std::string args;
  for (const char* f : {"sweep-cpu.json", "sweep-tpu.json", "tune-random.json", "tune-annealing.json", "blas-bench.json"})
    args += " --in " + fixture(f);
  return args;
}

TEST(CliReport, RendersEveryPlotTheTableAndTheExplanationsFromFixtureResults) {
  const fs::path out = fresh_dir("report");
  const testing::CliResult r = run_cli("report" + report_inputs() + " --out " + out.string());
  ASSERT_EQ(r.status, 0) << r;
  const std::string page = testing::read_file((out / "index.html").string());
  for (const char* plot :
       {"gflops_vs_size", "roofline_0", "roofline_1", "staircase", "convergence", "heatmap", "blas_vs_peers"}) {
    EXPECT_TRUE(contains(page, std::string("src=\"") + plot + ".png\"")) << plot;
    for (const char* ext : {".png", ".svg"}) {
      const fs::path file = out / (std::string(plot) + ext);
      ASSERT_TRUE(fs::exists(file)) << file;
      EXPECT_GT(fs::file_size(file), 1000u) << file;
    }
  }
  // Measured beside the datasheet (the catalogue's Ice Lake-SP and TPU v5e entries, scaled), the
  // explanations, and power said to be not measured rather than estimated.
  EXPECT_TRUE(contains(page, "Xeon Platinum 8380")) << "datasheet entry of the CPU family";
  EXPECT_TRUE(contains(page, "TPU v5e"));
  EXPECT_TRUE(contains(page, "one simulated array of the chip"));
  EXPECT_TRUE(contains(page, "memory-bound") || contains(page, "compute-bound"));
  EXPECT_TRUE(contains(page, "could not grow further because of"));
  EXPECT_TRUE(contains(page, "not measured"));
  EXPECT_TRUE(contains(page, "openblas"));
  // The BLAS library's benchmark: its section, the peers' versions and the bar's summary.
  EXPECT_TRUE(contains(page, "The BLAS library against its peers"));
  EXPECT_TRUE(contains(page, "oneDNN fixture"));
  EXPECT_TRUE(contains(page, "<td>0.71</td><td>1x4096x4096 (0.50)</td>"));
}

// Sweeps written now (schema 2: time_ms, reference.gflops) and the committed ones of schema 1
// (time_s, reference_gflops) render together, each with its vendor BLAS figures.
TEST(CliReport, ReadsTodaysSweepsBesideTheCommittedOnes) {
  const fs::path out = fresh_dir("report-schemas");
  const std::string sweep = (out / "sweep-now.json").string();
  ASSERT_EQ(run_cli("sweep --backend cpu --kernels 02_loop_order --sizes 16,32 --max-seconds 0.02 --no-ceilings "
                    "--no-cache --out " + sweep).status, 0);
  const testing::CliResult alone = run_cli("report --in " + sweep + " --out " + (out / "alone").string());
  ASSERT_EQ(alone.status, 0) << alone;
  EXPECT_TRUE(contains(testing::read_file((out / "alone" / "index.html").string()), "(vendor BLAS)"))
      << "the reference's GFLOP/s are read from a schema-2 sweep";
  const testing::CliResult both = run_cli("report --in " + sweep + report_inputs() + " --out " + (out / "both").string());
  ASSERT_EQ(both.status, 0) << both;
}

TEST(CliReport, BadInputExitsWithStatusTwo) {
  const fs::path dir = fresh_dir("report-bad");
  write(dir / "not.json", "{ this is not json");
  write(dir / "other.json", "{\"something\": 1}");
  for (const std::string& args : {"report --in " + (dir / "missing.json").string() + " --out " + (dir / "o").string(),
                                  "report --in " + (dir / "not.json").string() + " --out " + (dir / "o").string(),
                                  "report --in " + (dir / "other.json").string() + " --out " + (dir / "o").string(),
                                  std::string("report --out ") + (dir / "o").string()}) {
    const testing::CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r;
    EXPECT_FALSE(r.err.empty()) << args;
  }
}

// End to end: Chromium, headless, loads index.html; the page's own script counts the images that
// loaded (data-plots-loaded="loaded/total" on <body>).
TEST(CliReport, HeadlessChromiumLoadsEveryPlot) {
  const char* chromium = nullptr;
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(candidate)) chromium = candidate;
  if (chromium == nullptr) GTEST_SKIP() << "no Chromium here (scripts/install-deps.sh installs Debian's chromium)";
  const fs::path out = fresh_dir("report-chromium");
  ASSERT_EQ(run_cli("report" + report_inputs() + " --out " + out.string()).status, 0);
  const std::string command = std::string(chromium) +
                              " --headless --no-sandbox --disable-gpu --user-data-dir=" + (out / "profile").string() +
                              " --virtual-time-budget=10000 --dump-dom file://" + (out / "index.html").string() +
                              " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string dom;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) dom.append(buffer, n);
  ::pclose(pipe);
  const auto at = dom.find("data-plots-loaded=\"");
  ASSERT_NE(at, std::string::npos) << "the page's load handler did not run:\n" << dom.substr(0, 500);
  const std::string counts = dom.substr(at + 19, dom.find('"', at + 19) - at - 19);
  const auto slash = counts.find('/');
  ASSERT_NE(slash, std::string::npos) << counts;
  EXPECT_EQ(counts.substr(0, slash), counts.substr(slash + 1)) << "plots that did not load: " << counts;
  EXPECT_EQ(counts.substr(slash + 1), "7") << "six plots for two devices and the BLAS library's";
}

}  // namespace
}  // namespace gemmlab
