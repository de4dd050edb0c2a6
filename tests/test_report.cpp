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
using testing::Scratch;

namespace fs = std::filesystem;

int occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
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
  // The memory of each run: the operands exactly (A, B and C, C with its poisoned guard zone) and
  // what the kernel touched beyond them; what else ran while it was timed.
  for (const auto& row : j["results"]) {
    const std::int64_t m = row["m"], n = row["n"], k = row["k"];
    const std::int64_t operands = row["memory"]["operands_bytes"].get<std::int64_t>();
    EXPECT_GE(operands, 4 * (m * k + k * n + m * n)) << row["memory"];
    EXPECT_LT(operands, 4 * (m * k + k * n + m * n) + 4096) << row["memory"];
    EXPECT_GE(row["memory"]["workspace_bytes"].get<std::int64_t>(), 0) << "measured on the CPU\n" << row["memory"];
    EXPECT_GT(row["machine_load"]["seconds"].get<double>(), 0) << row;
    EXPECT_TRUE(row["machine_load"]["disturbed"].is_boolean()) << row;
  }
  // Sizes are sorted; the extra shape is there; 3 kernels x 3 shapes.
  EXPECT_EQ(seen.size(), 9u);
  EXPECT_TRUE(seen.count("01_naive 40x8x24"));
  if (!fs::exists("/sys/class/powercap/intel-rapl:0/energy_uj")) {
    EXPECT_EQ(j["power_source"], "not measured");
  }
}

TEST(CliSweep, UsesTheTunedConfigurationFromTheResultsCache) {
  const Scratch scratch;
  const fs::path dir = scratch.dir();
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
  const Scratch scratch;
  const fs::path root = scratch.dir();
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
  const Scratch scratch;
  const fs::path root = scratch.dir();
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
  const Scratch scratch;
  const fs::path out = scratch.dir();
  const testing::CliResult r = run_cli("report" + report_inputs() + " --out " + out.string());
  ASSERT_EQ(r.status, 0) << r;
  const std::string page = testing::read_file((out / "index.html").string());
  for (const char* plot : {"headline", "device_0", "device_1", "roofline_0", "roofline_1", "staircase", "convergence",
                           "heatmap", "blas_vs_peers"}) {
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
  EXPECT_TRUE(contains(page, "openblas (library)")) << "a reference is labelled by its kind";
  EXPECT_TRUE(contains(page, "heuristic mapping (no library)"));
  EXPECT_TRUE(contains(page, "of the measured FMA ceiling")) << "the CPU's shares are of the measured ceiling";
  EXPECT_TRUE(contains(page, "of the model peak")) << "the simulated array's of its model's peak";
  EXPECT_FALSE(contains(page, "the ceiling was measured low")) << "no fixture row is above its ceiling";
  // The first screen: the chart, then the table with one row per device and a quotable ratio.
  EXPECT_LT(page.find("id=\"headline-chart\""), page.find("id=\"headline-table\""));
  EXPECT_TRUE(contains(page, "× this CPU"));
  EXPECT_TRUE(contains(page, "one tpu-v5e array (bf16, simulated): "));
  // Each kernel explained once per device, with how it moves with size.
  EXPECT_EQ(occurrences(page, "<li>05_packed_avx512: "), 1);
  EXPECT_TRUE(contains(page, "From 64³ to 256³"));
  // The BLAS library's benchmark: its section, the peers' versions and the bar's summary.
  EXPECT_TRUE(contains(page, "The BLAS library against its peers"));
  EXPECT_TRUE(contains(page, "oneDNN fixture"));
  EXPECT_TRUE(contains(page, "<td>0.71</td><td>1x4096x4096 (0.50)</td><td>—</td>"))
      << "a record without shares";
  EXPECT_TRUE(contains(
      page, "<td>of 400.0 GFLOP/s: 1024x1024x1024 90% (91% beside the loop), 2048x2048x2048 80%</td>"))
      << "the large squares in size order, each share of the run's ceiling and, where measured, of the loop "
         "beside it";
}

// Sweeps written now (schema 2: time_ms, reference.gflops) and the committed ones of schema 1
// (time_s, reference_gflops) render together, each with its vendor BLAS figures.
TEST(CliReport, ReadsTodaysSweepsBesideTheCommittedOnes) {
  const Scratch scratch;
  const fs::path out = scratch.dir();
  const std::string sweep = (out / "sweep-now.json").string();
  ASSERT_EQ(run_cli("sweep --backend cpu --kernels 02_loop_order --sizes 16,32 --max-seconds 0.02 --no-ceilings "
                    "--no-cache --out " + sweep).status, 0);
  const testing::CliResult alone = run_cli("report --in " + sweep + " --out " + (out / "alone").string());
  ASSERT_EQ(alone.status, 0) << alone;
  EXPECT_TRUE(contains(testing::read_file((out / "alone" / "index.html").string()), "× openblas (library)"))
      << "the reference's GFLOP/s are read from a schema-2 sweep";
  const testing::CliResult both = run_cli("report --in " + sweep + report_inputs() + " --out " + (out / "both").string());
  ASSERT_EQ(both.status, 0) << both;
}

TEST(CliReport, BadInputExitsWithStatusTwo) {
  const Scratch scratch;
  const fs::path dir = scratch.dir();
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

// Chromium, headless, on `url`: the DOM after the page's load handler ran (--dump-dom), or a
// screenshot of the first screen (1280 x 1000) when `screenshot` is given.
std::string chromium_output(const std::string& chromium, const fs::path& profile, const std::string& url,
                            const std::string& screenshot = "") {
  const std::string mode = screenshot.empty() ? " --dump-dom " : " --screenshot=" + screenshot + " ";
  const std::string command = chromium + " --headless --no-sandbox --disable-gpu --window-size=1280,1000 --user-data-dir=" +
                              profile.string() + " --virtual-time-budget=10000" + mode + url + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {};
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
  ::pclose(pipe);
  return text;
}

// The value of attribute `name` on the DOM's <body> (HTML-escaped quotes restored).
std::string body_attribute(const std::string& dom, const std::string& name) {
  const auto at = dom.find(name + "=\"");
  if (at == std::string::npos) return {};
  std::string value = dom.substr(at + name.size() + 2, dom.find('"', at + name.size() + 2) - at - name.size() - 2);
  for (std::size_t q; (q = value.find("&quot;")) != std::string::npos;) value.replace(q, 6, "\"");
  return value;
}

const char* find_chromium() {
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(candidate)) return candidate;
  return nullptr;
}

// The report of `inputs` in headless Chromium: every image loads (`plots` of them), the first
// screen (1280 x 1000) holds the whole first chart and the start of its table, its screenshot is
// not blank, and every point of the first chart above its ceiling is flagged. Returns the number
// of such points and the DOM.
std::pair<int, std::string> check_first_screen(const char* chromium, const fs::path& out, const std::string& inputs,
                                               int plots) {
  const testing::CliResult made = run_cli("report" + inputs + " --out " + (out / "report").string());
  EXPECT_EQ(made.status, 0) << made;
  const std::string url = "file://" + (out / "report" / "index.html").string();
  const std::string dom = chromium_output(chromium, out / "profile", url);

  const std::string counts = body_attribute(dom, "data-plots-loaded");
  EXPECT_FALSE(counts.empty()) << "the page's load handler did not run:\n" << dom.substr(0, 500);
  EXPECT_EQ(counts, std::to_string(plots) + "/" + std::to_string(plots)) << "images loaded / images";

  const nlohmann::json screen = nlohmann::json::parse(body_attribute(dom, "data-first-screen"), nullptr, false);
  EXPECT_TRUE(screen.is_object()) << body_attribute(dom, "data-first-screen");
  if (screen.is_object()) {
    const double height = screen["window_height"].get<double>();
    EXPECT_GE(screen["chart_top"].get<double>(), 0.0) << screen;
    EXPECT_GT(screen["chart_height"].get<double>(), 200.0) << screen;
    EXPECT_LT(screen["chart_top"].get<double>() + screen["chart_height"].get<double>(), height) << screen;
    EXPECT_GT(screen["table_top"].get<double>(), 0.0) << screen;
    EXPECT_LT(screen["table_top"].get<double>(), height - 40) << screen;
  }

  const std::string open_tag = "id=\"headline-points\">";
  const auto begin = dom.find(open_tag);
  int above = 0;
  EXPECT_NE(begin, std::string::npos);
  if (begin != std::string::npos) {
    const auto end = dom.find("</script>", begin);
    const nlohmann::json points =
        nlohmann::json::parse(dom.substr(begin + open_tag.size(), end - begin - open_tag.size()), nullptr, false);
    EXPECT_TRUE(points.is_array() && !points.empty()) << dom.substr(begin, 300);
    for (const auto& point : points.is_array() ? points : nlohmann::json::array()) {
      if (point["ceiling"].is_null() || point["gflops"].get<double>() <= point["ceiling"].get<double>()) continue;
      ++above;
      EXPECT_TRUE(point["flagged"].get<bool>()) << "a point above its ceiling, not flagged: " << point;
    }
  }
  const fs::path shot = out / "first-screen.png";
  chromium_output(chromium, out / "profile", url, shot.string());
  EXPECT_TRUE(fs::exists(shot));
  if (fs::exists(shot)) {
    EXPECT_GT(fs::file_size(shot), 20000u) << "a blank first screen";
  }
  return {above, dom};
}

// The fixture results with two faults planted: one CPU row above the measured ceiling, one row
// whose reference ran at half the speed it reached beside the other kernels. Both are flagged.
TEST(CliReport, HeadlessChromiumShowsTheFirstChartAndTableAndFlagsEveryPointAboveItsCeiling) {
  const char* chromium = find_chromium();
  if (chromium == nullptr) GTEST_SKIP() << "no Chromium here (scripts/install-deps.sh installs Debian's chromium)";
  const Scratch scratch;
  const fs::path out = scratch.dir();
  nlohmann::json cpu = nlohmann::json::parse(testing::read_file(fixture("sweep-cpu.json")));
  const double ceiling = cpu["device"]["measured"]["fma_gflops_fp32"].get<double>();
  int altered = 0;
  for (auto& row : cpu["results"]) {
    if (row["kernel"] == "04_register_blocked_avx2" && row["m"] == 256 && row["n"] == 256 && row["k"] == 256) {
      row["gflops"] = 1.5 * ceiling;  // a disturbed ceiling measurement would read like this
      ++altered;
    }
    if (row["kernel"] == "02_loop_order" && row["m"] == 256 && row["n"] == 256 && row["k"] == 256) {
      row["reference_gflops"] = 0.5 * row["reference_gflops"].get<double>();  // a busy machine's reference
      ++altered;
    }
  }
  ASSERT_EQ(altered, 2);
  write(out / "sweep-cpu-altered.json", cpu.dump());
  std::string inputs = " --in " + (out / "sweep-cpu-altered.json").string();
  for (const char* f : {"sweep-tpu.json", "tune-random.json", "tune-annealing.json", "blas-bench.json"})
    inputs += " --in " + fixture(f);
  // The first chart, a chart and a roofline per device, the staircase, the two tuning plots, the BLAS library's.
  const auto [above, dom] = check_first_screen(chromium, out, inputs, 9);
  EXPECT_EQ(above, 1) << "the planted point above the ceiling";
  EXPECT_TRUE(contains(dom, "is above the measured FMA ceiling"));
  EXPECT_TRUE(contains(dom, "openblas ran at")) << "the slow reference is flagged";
}

// The committed comparison (bench/comparison.sh on an idle machine, the H100's records): the
// same checks, and nothing flagged at all.
TEST(CliReport, TheCommittedComparisonsFirstScreenIsCleanInHeadlessChromium) {
  const char* chromium = find_chromium();
  if (chromium == nullptr) GTEST_SKIP() << "no Chromium here (scripts/install-deps.sh installs Debian's chromium)";
  const Scratch scratch;
  const fs::path out = scratch.dir();
  const fs::path root = fs::path(GEMMLAB_TEST_DATA).parent_path().parent_path();
  std::string inputs;
  int sweeps = 0;
  for (const fs::path& dir : {root / "bench/results/comparison", root / "bench/results/nvidia-h100-80gb-hbm3"})
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (entry.path().extension() != ".json" || name == "build.json" || name == "devices.json" || name == "verify-cuda.json")
        continue;
      inputs += " --in " + entry.path().string();
      if (name.rfind("sweep-", 0) == 0) ++sweeps;
    }
  ASSERT_GE(sweeps, 3);
  // The first chart, a chart and a roofline per sweep, the staircase and the two tuning plots.
  const auto [above, dom] = check_first_screen(chromium, out, inputs, 1 + 2 * sweeps + 3);
  EXPECT_EQ(above, 0);
  EXPECT_FALSE(contains(dom, "<h2>Warnings</h2>")) << "the committed inputs must be clean measurements";
  EXPECT_TRUE(contains(dom, "× this CPU"));
  EXPECT_TRUE(contains(dom, "NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(contains(dom, "counted, not timed"));
}

}  // namespace
}  // namespace gemmlab
