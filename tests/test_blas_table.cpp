// The BLAS library's table: shape classes, the file format (round trip, clear errors, atomic
// replacement), and building it from the results cache (fastest valid result per class, other
// devices, stale kernel sources, failed results and transposed problems kept apart).
#include <array>
#include <filesystem>
#include <fstream>
#include <map>

#include "gemmlab/blas_table.hpp"
#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/json.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::ScopedEnv;
using testing::Scratch;
using testing::cpu_device;
using testing::openblas;

// Built member by member: GCC 12 warns (maybe-uninitialized) on nested aggregates with strings.
ShapeClass shape(Precision precision, const char* transposes, int m, int n, int k) {
  ShapeClass c;
  c.precision = precision;
  c.transposes = transposes;
  c.m_bucket = m;
  c.n_bucket = n;
  c.k_bucket = k;
  return c;
}

BlasTableEntry entry(ShapeClass c, const char* kernel, Config config, const char* source, int library_threads = 2) {
  BlasTableEntry e;
  e.shape = std::move(c);
  e.library_threads = library_threads;
  e.kernel = kernel;
  e.config = std::move(config);
  e.source = source;
  return e;
}

// A result as the results cache holds it.
ConfigResult cached(const Config& c, double gflops, Status status = Status::ok, const char* reason = "") {
  return ConfigResult{.config = c, .status = status, .time_s = 1 / gflops, .gflops = gflops, .max_rel_error = 0,
                      .reason = reason, .reference_name = "", .reference_gflops = 0,
                      .recorded_at = "2026-11-25T10:00:00Z"};
}

TEST(BlasShapeClass, BucketsArePowersOfTwoAndTransposesAndPrecisionCount) {
  EXPECT_EQ(size_bucket(0), 0);
  EXPECT_EQ(size_bucket(1), 0);
  EXPECT_EQ(size_bucket(2), 1);
  EXPECT_EQ(size_bucket(3), 1);
  EXPECT_EQ(size_bucket(512), 9);
  EXPECT_EQ(size_bucket(1023), 9);
  EXPECT_EQ(size_bucket(1024), 10);
  Problem p = Problem::packed(512, 1023, 1024);
  EXPECT_EQ(shape_class(p), shape(Precision::fp32, "NN", 9, 9, 10));
  EXPECT_EQ(to_string(shape_class(p)), "fp32 NN M 512-1023 N 512-1023 K 1024-2047");
  p.trans_a = true;
  p.lda = 512;
  EXPECT_NE(shape_class(p), shape_class(Problem::packed(512, 1023, 1024)));
  EXPECT_EQ(shape_class(p).transposes, "TN");
}

BlasTable sample_table() {
  BlasTable t;
  t.device = "cpu:Test 01";
  t.device_name = "Test CPU";
  t.created = "2026-11-25T00:00:00Z";
  t.put(entry(shape(Precision::fp32, "NN", 9, 9, 9), "05_packed_avx512", {{"MR", 6}, {"NV", 4}, {"threads", 2}},
              "tuned"));
  t.put(entry(shape(Precision::fp64, "TN", 0, 0, 0), "01_naive", {}, "tuned too", 1));
  return t;
}

// docs/blas.md's rule for a class the table lacks: M*N*K below 16^3 the naive kernel, a C of at
// least 512 x 512 the packed step, else the unpacked 06; transposes do not change the choice.
TEST(BlasDefaultKernel, FollowsTheVolumeAndSizeOfCRule) {
  auto kernel = [](std::int64_t m, std::int64_t n, std::int64_t k, bool trans_b = false) {
    Problem p = Problem::packed(m, n, k);
    p.trans_b = trans_b;
    return default_blas_kernel(p);
  };
  EXPECT_EQ(kernel(1, 1, 1), "01_naive");
  EXPECT_EQ(kernel(15, 16, 16), "01_naive");      // 3840 < 4096
  EXPECT_EQ(kernel(16, 16, 16), "06_small_m");    // 4096: no longer tiny, 16 rows
  EXPECT_EQ(kernel(1, 4096, 4096), "06_small_m");
  EXPECT_EQ(kernel(16, 11008, 4096, true), "06_small_m");
  EXPECT_EQ(kernel(17, 17, 17), "06_small_m");
  EXPECT_EQ(kernel(511, 4096, 4096), "06_small_m");      // fewer rows than 512
  EXPECT_EQ(kernel(4096, 511, 4096), "06_small_m");      // fewer columns than 512
  EXPECT_EQ(kernel(512, 512, 1), "05_packed_avx512");    // 512 x 512 and above
  EXPECT_EQ(kernel(4096, 4096, 64, true), "05_packed_avx512");
  // B transposed: 06's dot form up to 16 rows of C, whatever the columns; 05 above.
  EXPECT_EQ(kernel(16, 16, 16, true), "06_small_m");
  EXPECT_EQ(kernel(17, 17, 17, true), "05_packed_avx512");
  EXPECT_EQ(kernel(64, 64, 64, true), "05_packed_avx512");
  EXPECT_EQ(kernel(4096, 64, 4096, true), "05_packed_avx512");
  EXPECT_EQ(kernel(15, 16, 16, true), "01_naive");
}

// The kernels blas-table --tune tries: up to 16 rows of C 06 alone, else 06 and 05.
TEST(BlasTuningKernels, AreTheSmallMStepAloneForFewRowsElseBoth) {
  using Names = std::vector<std::string_view>;
  EXPECT_EQ(blas_tuning_kernels(Problem::packed(1, 4096, 4096)), (Names{"06_small_m"}));
  EXPECT_EQ(blas_tuning_kernels(Problem::packed(16, 11008, 4096)), (Names{"06_small_m"}));
  EXPECT_EQ(blas_tuning_kernels(Problem::packed(17, 64, 64)), (Names{"06_small_m", "05_packed_avx512"}));
  EXPECT_EQ(blas_tuning_kernels(Problem::packed(4096, 4096, 4096)), (Names{"06_small_m", "05_packed_avx512"}));
}

TEST(BlasTuningShapes, AreTheBenchmarksAndLlmDecodingAgainWithBTransposed) {
  const std::vector<Problem> bench = blas_benchmark_shapes(), tuned = blas_tuning_shapes();
  ASSERT_EQ(tuned.size(), bench.size() + 6);
  EXPECT_TRUE(std::equal(bench.begin(), bench.end(), tuned.begin()))
      << "the benchmark's shapes come first, as they are";
  std::vector<std::string> transposed;
  for (const Problem& p : bench) EXPECT_FALSE(p.transposed()) << p.shape();
  for (auto p = tuned.begin() + static_cast<std::ptrdiff_t>(bench.size()); p != tuned.end(); ++p) {
    transposed.push_back(shape_and_transposes(*p));
    EXPECT_EQ(p->ldb, p->k) << "B stored N x K: " << p->shape();
  }
  EXPECT_EQ(transposed, (std::vector<std::string>{"1x4096x4096:NT", "4x4096x4096:NT", "16x4096x4096:NT",
                                                  "1x11008x4096:NT", "4x11008x4096:NT", "16x11008x4096:NT"}));
}

TEST(BlasTableFile, RoundTripsAndFindsByClass) {
  Scratch scratch;
  const std::string path = scratch.file("table.json");
  write_blas_table(sample_table(), path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  const BlasTable t = read_blas_table(path);
  EXPECT_EQ(t.device, "cpu:Test 01");
  ASSERT_EQ(t.entries.size(), 2u);
  const BlasTableEntry* e = t.find(Problem::packed(600, 700, 800), 2);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kernel, "05_packed_avx512");
  EXPECT_EQ(e->library_threads, 2);
  EXPECT_EQ(e->config, (Config{{"MR", 6}, {"NV", 4}, {"threads", 2}}));
  EXPECT_EQ(t.find(Problem::packed(600, 700, 800), 8), e) << "tuned for 2 threads: serves a library of 8";
  EXPECT_EQ(t.find(Problem::packed(600, 700, 800), 1), nullptr) << "tuned for 2 threads: not for one";
  EXPECT_EQ(t.find(Problem::packed(600, 700, 1024), 2), nullptr) << "K 1024 is the next bucket";
  Problem q = Problem::packed(1, 1, 1, Precision::fp64);
  q.trans_a = true;
  ASSERT_NE(t.find(q, 1), nullptr);
  EXPECT_EQ(t.find(q, 1)->kernel, "01_naive");
}

TEST(BlasTableFile, PutReplacesTheEntryOfTheSameClassAndThreads) {
  BlasTable t = sample_table();
  t.put(entry(shape(Precision::fp32, "NN", 9, 9, 9), "01_naive", {}, "newer"));
  EXPECT_EQ(t.entries.size(), 2u);
  EXPECT_EQ(t.find(Problem::packed(512, 512, 512), 2)->source, "newer");
  t.put(entry(shape(Precision::fp32, "NN", 9, 9, 9), "06_small_m", {}, "one thread", 1));
  EXPECT_EQ(t.entries.size(), 3u);
  EXPECT_EQ(t.find(Problem::packed(512, 512, 512), 1)->source, "one thread");
  EXPECT_EQ(t.find(Problem::packed(512, 512, 512), 2)->source, "newer");
  EXPECT_EQ(t.find(Problem::packed(512, 512, 512), 3)->source, "newer") << "the most threads not above 3";
}

TEST(BlasTableFile, MalformedTablesAreRejectedNamingWhatIsWrong) {
  nlohmann::json good = sample_table();
  auto with = [&](const char* key, nlohmann::json value) {
    nlohmann::json j = good;
    j[key] = std::move(value);
    return j;
  };
  EXPECT_THROW_MENTIONING(blas_table_from_json(with("format", "gemmlab-blas-table/1")), std::invalid_argument,
                          {"gemmlab-blas-table/1", "rebuild it"});
  EXPECT_THROW_MENTIONING(blas_table_from_json(with("entries", 3)), std::invalid_argument, {"entries"});
  nlohmann::json bad_entry = good;
  bad_entry["entries"][0]["transposes"] = "XN";
  EXPECT_THROW_MENTIONING(blas_table_from_json(bad_entry), std::invalid_argument, {"entry 1", "XN"});
  bad_entry = good;
  bad_entry["entries"][1].erase("kernel");
  EXPECT_THROW_MENTIONING(blas_table_from_json(bad_entry), std::invalid_argument, {"entry 2", "kernel"});
  bad_entry = good;
  bad_entry["entries"][0]["m_bucket"] = 40;
  EXPECT_THROW_MENTIONING(blas_table_from_json(bad_entry), std::invalid_argument, {"bucket"});
  bad_entry = good;
  bad_entry["entries"][0]["library_threads"] = 0;
  EXPECT_THROW_MENTIONING(blas_table_from_json(bad_entry), std::invalid_argument, {"entry 1", "library_threads"});

  Scratch scratch;
  const std::string path = scratch.file("not-json.json");
  std::ofstream(path) << "{ nope";
  EXPECT_THROW_MENTIONING(read_blas_table(path), std::runtime_error, {path, "not JSON"});
  EXPECT_THROW_MENTIONING(read_blas_table(scratch.file("missing.json")), std::runtime_error, {"cannot read"});
}

TEST(BlasTableFile, AFailedWriteLeavesTheOldTable) {
  Scratch scratch;
  const std::string path = scratch.file("table.json");
  write_blas_table(sample_table(), path);
  EXPECT_THROW(write_blas_table(sample_table(), scratch.file("no-such-dir/table.json")), std::runtime_error);
  EXPECT_EQ(read_blas_table(path).entries.size(), 2u);
}

// A table is this machine's when made for this CPU with as many cores as this process may use, or
// with more of the machine's cores (the process bound to some of them); not with fewer, not for
// another CPU.
TEST(BlasTableFile, AppliesToAProcessBoundToFewerCoresOfTheSameMachine) {
  DeviceInfo machine;
  machine.backend = "cpu";
  machine.name = "Some Xeon";
  machine.vendor = "GenuineIntel";
  machine.features = {"avx2", "fma", "avx512f"};
  machine.cores = 8;
  BlasTable table;
  table.device = fingerprint(machine);
  EXPECT_EQ(blas_table_cores(table, machine, 8), 8);

  DeviceInfo bound = machine;  // the same CPU, this process bound to 2 of its 8 cores
  bound.cores = 2;
  EXPECT_EQ(blas_table_cores(table, bound, 8), 8);
  EXPECT_EQ(blas_table_cores(table, bound, 4), std::nullopt) << "not beyond the machine's online CPUs";

  BlasTable made_bound;  // made by a process bound to 2 cores: not for one that has all 8
  made_bound.device = fingerprint(bound);
  EXPECT_EQ(blas_table_cores(made_bound, bound, 8), 2);
  EXPECT_EQ(blas_table_cores(made_bound, machine, 8), std::nullopt);

  DeviceInfo other = bound;  // another CPU of as many cores
  other.name = "Another Xeon";
  EXPECT_EQ(blas_table_cores(table, other, 8), std::nullopt);
  other = bound;
  other.features.pop_back();  // no AVX-512: the kernels the table names would not run
  EXPECT_EQ(blas_table_cores(table, other, 8), std::nullopt);
}

TEST(BlasTablePath, FollowsTheEnvironment) {
  const ScopedEnv table("GEMMLAB_BLAS_TABLE", "/x/t.json");
  EXPECT_EQ(blas_table_path(), "/x/t.json");
  const ScopedEnv unset("GEMMLAB_BLAS_TABLE", nullptr);
  const ScopedEnv xdg("XDG_CACHE_HOME", "/cachehome");
  EXPECT_EQ(blas_table_path(), "/cachehome/gemmlab/blas-table.json");
}

// A round of finalists of a product of microseconds: with the search's own options each finalist
// fills its 50 runs in one block, timed in turn (one burst each); with finalist_measure they take
// at least four alternating blocks each.
TEST(BlasFinalists, AreTimedInSeveralAlternatingBlocksNotOneBurstEach) {
  const auto blocks_of_each = [](const MeasureOptions& options) {
    std::string sequence;
    std::vector<std::function<double()>> runs;
    for (const char name : {'a', 'b', 'c'})
      runs.push_back([&sequence, name] {
        sequence += name;
        return 0x1p-20;  // about a microsecond
      });
    measure_round_robin(runs, options);
    // The warm-up runs (one of each side, in turn) are not a block.
    const std::size_t warm = runs.size() * static_cast<std::size_t>(options.warmup);
    return std::array{testing::blocks_of(sequence, 'a', warm), testing::blocks_of(sequence, 'b', warm),
                      testing::blocks_of(sequence, 'c', warm)};
  };
  const MeasureOptions search = TuneOptions{}.measure;
  for (const int blocks : blocks_of_each(search)) EXPECT_EQ(blocks, 1) << "the search's options";
  const MeasureOptions finalists = finalist_measure(search);
  EXPECT_EQ(finalists.max_seconds, search.max_seconds);
  EXPECT_EQ(finalists.target_spread, search.target_spread);
  for (const int blocks : blocks_of_each(finalists)) EXPECT_GE(blocks, 4) << "finalist_measure";
}

// From the cache: the fastest valid `ok` result per class, for this device and today's kernel.
TEST(BlasTableFromCache, KeepsTheFastestValidResultPerClassOfThisDeviceAndKernelSource) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const DeviceInfo device = cpu::detect();
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  const Kernel& naive = registry().kernel("cpu", "01_naive");
  const Config valid = packed.default_config(device, Precision::fp32);
  Config other = valid;
  other["threads"] = 1;
  Config invalid = valid;
  invalid["MR"] = 16;
  invalid["NV"] = 4;  // 16*4 + 4 + 1 > 32 zmm registers
  const Problem p600 = Problem::packed(600, 600, 600), p700 = Problem::packed(700, 700, 700);
  cache.store(cache_key(device, packed, p600), cached(valid, 100));
  cache.store(cache_key(device, packed, p600), cached(invalid, 500));                // not valid today
  cache.store(cache_key(device, packed, p600), cached(other, 400, Status::failed));  // not ok
  cache.store(cache_key(device, packed, p700), cached(other, 150));                  // same class, faster
  CacheKey foreign = cache_key(device, packed, Problem::packed(2000, 2000, 2000));
  foreign.device = "cpu:another machine";
  cache.store(foreign, cached(valid, 900));
  CacheKey stale = cache_key(device, packed, Problem::packed(100, 100, 100));
  stale.kernel_hash = "an older source";
  cache.store(stale, cached(valid, 900));
  Problem transposed = Problem::packed(40, 40, 40);
  transposed.trans_b = true;
  cache.store(cache_key(device, naive, transposed), cached({}, 3));

  const BlasTable t = blas_table_from_cache(cache, device, {&packed, &naive}, {1});
  EXPECT_EQ(t.device, fingerprint(device));
  ASSERT_EQ(t.entries.size(), 2u) << nlohmann::json(t).dump(2);
  const BlasTableEntry* e = t.find(p600, 1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->config, other);
  EXPECT_NE(e->source.find("700x700x700"), std::string::npos) << e->source;
  EXPECT_EQ(t.find(Problem::packed(2000, 2000, 2000), 1), nullptr);
  EXPECT_EQ(t.find(Problem::packed(100, 100, 100), 1), nullptr);
  EXPECT_EQ(t.find(Problem::packed(40, 40, 40), 1), nullptr) << "the NN class was not tuned";
  ASSERT_NE(t.find(transposed, 1), nullptr);
  EXPECT_EQ(t.find(transposed, 1)->kernel, "01_naive");
}

// Per library thread count: the fastest result on at most that many threads.
TEST(BlasTableFromCache, KeepsPerLibraryThreadCountTheFastestOnAtMostThatManyThreads) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const DeviceInfo device = cpu::detect();
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  Config one = packed.default_config(device, Precision::fp32), three = one, four = one;
  one["threads"] = 1;
  three["threads"] = 3;
  four["threads"] = 4;
  const Problem p = Problem::packed(600, 600, 600);
  const CacheKey key = cache_key(device, packed, p);
  cache.store(key, cached(one, 100));
  cache.store(key, cached(three, 250));
  cache.store(key, cached(four, 300));
  // the space limits threads to the cores: judge only what this machine's space accepts
  const SearchSpace space = packed.space(device, Precision::fp32);
  const BlasTable t = blas_table_from_cache(cache, device, {&packed}, {1, 2, 3, 4});
  ASSERT_NE(t.find(p, 1), nullptr);
  EXPECT_EQ(t.find(p, 1)->config, one);
  EXPECT_EQ(t.find(p, 2)->config, one) << "nothing on 2 threads was faster";
  EXPECT_EQ(t.find(p, 2)->library_threads, 2);
  if (space.is_valid(three)) {
    EXPECT_EQ(t.find(p, 3)->config, three);
  }
  if (space.is_valid(four)) {
    EXPECT_EQ(t.find(p, 4)->config, four);
  }
  EXPECT_EQ(blas_table_thread_counts(1), (std::vector<int>{1}));
  EXPECT_EQ(blas_table_thread_counts(8), (std::vector<int>{1, 8}));
}

// Where a problem's finalists were timed again together, only they compete: a single earlier
// timing that came out faster (the machine was quicker then) does not outrank them.
TEST(BlasTableFromCache, PrefersTheFinalistsTimedTogether) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const DeviceInfo device = cpu::detect();
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  Config lucky = packed.default_config(device, Precision::fp32), first = lucky, second = lucky;
  lucky["threads"] = first["threads"] = second["threads"] = 1;
  lucky["KC"] = 128;
  first["KC"] = 256;
  second["KC"] = 512;
  const Problem p = Problem::packed(600, 600, 600);
  const CacheKey key = cache_key(device, packed, p);
  cache.store(key, cached(lucky, 500));
  cache.store(key, cached(first, 300, Status::ok, blas_finalist_reason));
  cache.store(key, cached(second, 200, Status::ok, blas_finalist_reason));
  const BlasTable t = blas_table_from_cache(cache, device, {&packed}, {1});
  ASSERT_NE(t.find(p, 1), nullptr);
  EXPECT_EQ(t.find(p, 1)->config, first);
  EXPECT_NE(t.find(p, 1)->source.find("finalists timed together"), std::string::npos) << t.find(p, 1)->source;
}

// Where the same finalists were timed on several shapes of a class, the entry is the one whose
// worst share of a shape's fastest is the largest: not the fastest on one shape that runs the
// other badly, and not one timed on only one of them.
TEST(BlasTableFromCache, KeepsTheFinalistBestOverEveryShapeOfTheClassItWasTimedOn) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const DeviceInfo device = cpu::detect();
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  Config fast_on_p = packed.default_config(device, Precision::fp32), even = fast_on_p, only_on_p = fast_on_p,
         lucky = fast_on_p;
  fast_on_p["threads"] = even["threads"] = only_on_p["threads"] = lucky["threads"] = 1;
  fast_on_p["KC"] = 128;
  even["KC"] = 256;
  only_on_p["KC"] = 192;
  lucky["KC"] = 64;
  const SearchSpace space = packed.space(device, Precision::fp32);
  for (const Config* c : {&fast_on_p, &even, &only_on_p, &lucky}) ASSERT_TRUE(space.is_valid(*c)) << to_string(*c);
  const Problem p = Problem::packed(512, 512, 512), q = Problem::packed(512, 768, 768);
  ASSERT_EQ(shape_class(p), shape_class(q));
  const CacheKey at_p = cache_key(device, packed, p), at_q = cache_key(device, packed, q);
  cache.store(at_p, cached(fast_on_p, 300, Status::ok, blas_finalist_reason));
  cache.store(at_p, cached(even, 290, Status::ok, blas_finalist_reason));
  cache.store(at_p, cached(only_on_p, 310, Status::ok, blas_finalist_reason));  // never timed on q
  cache.store(at_q, cached(fast_on_p, 120, Status::ok, blas_finalist_reason));
  cache.store(at_q, cached(even, 250, Status::ok, blas_finalist_reason));
  cache.store(at_q, cached(lucky, 900));  // not a finalist: does not compete
  const BlasTable t = blas_table_from_cache(cache, device, {&packed}, {1});
  ASSERT_EQ(t.entries.size(), 1u) << nlohmann::json(t).dump(2);
  EXPECT_EQ(t.entries[0].config, even) << "290/310 = 0.94 of p's fastest and q's fastest, against 120/250";
  EXPECT_NE(t.entries[0].source.find("2 shapes of the class"), std::string::npos) << t.entries[0].source;

  // With one of the class's shapes timed only (no finalists there), the fastest result wins, as
  // for a class of one shape.
  ResultsCache single(scratch.file("single.sqlite"));
  single.store(at_p, cached(fast_on_p, 300, Status::ok, blas_finalist_reason));
  single.store(at_p, cached(even, 290, Status::ok, blas_finalist_reason));
  single.store(at_q, cached(even, 400));
  const BlasTable s = blas_table_from_cache(single, device, {&packed}, {1});
  ASSERT_EQ(s.entries.size(), 1u);
  EXPECT_EQ(s.entries[0].config, even);
  EXPECT_NE(s.entries[0].source.find("512x768x768"), std::string::npos) << s.entries[0].source;
}

// A runner that evaluates nothing: each configuration's speed is a fixed function of it, and every
// configuration asked for is recorded, per runner (one per kernel, shape and thread count).
double made_up_gflops(const Config& config) {
  double gflops = 10;
  for (const auto& [name, value] : config)
    if (name != "threads") gflops += static_cast<double>((value * 7919 + static_cast<ParamValue>(name.size())) % 97);
  return gflops * static_cast<double>(config.at("threads"));
}

class RecordingRunner final : public ConfigurationRunner {
 public:
  explicit RecordingRunner(std::vector<Config>& evaluated,
                           std::function<double(const Config&)> speed = made_up_gflops)
      : evaluated_(evaluated), speed_(std::move(speed)) {}
  std::string reference_name() const override { return ""; }
  double reference_gflops() override { return 0; }
  ConfigResult run(const Config& config, double, double) override {
    evaluated_.push_back(config);
    const double gflops = speed_(config);
    return ConfigResult{.config = config, .status = Status::ok, .time_s = 1 / gflops, .gflops = gflops};
  }
  double reference_gflops_beside(const Config&, double) override { return 0; }

 private:
  std::vector<Config>& evaluated_;
  std::function<double(const Config&)> speed_;
};

// The configurations each runner of a table search was asked for (one runner per kernel, shape
// and thread count, in order): `kernel` alone on `p` at `counts`, a budget of 8.
std::vector<std::vector<Config>> recorded_searches(
    const Kernel& kernel, const Problem& p, const std::vector<int>& counts,
    std::function<double(const Config&)> speed = made_up_gflops) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  std::vector<std::vector<Config>> evaluated;
  const RunnerFactory runners = [&](const Kernel&, const Problem&) {
    evaluated.emplace_back();
    return std::make_unique<RecordingRunner>(evaluated.back(), speed);
  };
  TuneOptions options;
  options.budget.evaluations = 8;
  options.measure.max_seconds = 0.01;
  const BlasTable empty;
  tune_missing_classes(cpu_device(), [&](const Problem&) { return std::vector<const Kernel*>{&kernel}; },
                       &openblas(), nullptr, cache, empty, {p}, counts, options, {}, runners);
  return evaluated;
}

// Search options that evaluate exactly four one-thread configurations of 06 (its default at four
// depths, in tile order) and nothing else.
TuneOptions four_small_m_configurations(const Kernel& small_m) {
  TuneOptions options;
  for (ParamValue kb : {128, 256, 512, 1024}) {
    Config c = small_m.default_config(cpu_device().info(), Precision::fp32);
    c["threads"] = 1;
    c["KB"] = kb;
    c["STREAM"] = 0;
    options.start_with.push_back(c);
  }
  options.budget.evaluations = options.start_with.size();
  return options;
}

// The search at the larger thread count starts from the smaller count's best configuration (with
// the larger count's threads) after the kernel's starting configurations: a small budget need
// not find that blocking again from the default.
TEST(BlasTableTuning, StartsTheLargerThreadCountFromTheSmallerCountsBest) {
  if (cpu_device().info().cores < 2) GTEST_SKIP() << "needs two cores";
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  SKIP_IF_UNSUPPORTED(small_m);
  // The starting configurations run slowest, so that the one-thread search's best is one it found
  // beyond them.
  const std::vector<Config> starts_on_any = small_m.starting_configs(cpu_device().info(), Precision::fp32);
  const auto is_start = [&](Config c) {
    c.erase("threads");
    return std::any_of(starts_on_any.begin(), starts_on_any.end(), [&](Config start) {
      start.erase("threads");
      return start == c;
    });
  };
  const auto speed = [&](const Config& c) { return is_start(c) ? 1.0 : made_up_gflops(c); };
  const std::vector<std::vector<Config>> evaluated =
      recorded_searches(small_m, Problem::packed(3, 70, 20), {1, 2}, speed);
  // One search per thread count; then a try of the two-thread best on one thread may follow.
  ASSERT_GE(evaluated.size(), 2u) << "one search per thread count";
  const auto fastest =
      std::max_element(evaluated[0].begin(), evaluated[0].end(),
                       [&](const Config& a, const Config& b) { return speed(a) < speed(b); });
  ASSERT_NE(fastest, evaluated[0].end());
  for (const Config& c : evaluated[0]) EXPECT_EQ(c.at("threads"), 1) << "the one-thread search stays on one thread";
  Config expected = *fastest;
  expected["threads"] = 2;
  std::vector<Config> starts = small_m.starting_configs(cpu_device().info(), Precision::fp32);
  for (Config& start : starts) start["threads"] = 2;
  ASSERT_EQ(std::find(starts.begin(), starts.end(), expected), starts.end()) << "the made-up speeds changed";
  ASSERT_GE(evaluated[1].size(), starts.size() + 1);
  for (std::size_t i = 0; i < starts.size(); ++i)
    EXPECT_EQ(evaluated[1][i], starts[i]) << "the kernel's starting configuration " << i << " first";
  EXPECT_EQ(evaluated[1][starts.size()], expected) << "then the one-thread search's best, on two threads";
}

// A class's search first evaluates the kernel's starting configurations (05: the default, then
// each other register-filling tile), on the class's thread count: with a small budget the
// search would otherwise rarely leave the default's tile.
TEST(BlasTableTuning, StartsFromEachOfTheKernelsStartingConfigurations) {
  const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
  SKIP_IF_UNSUPPORTED(packed);
  const std::vector<std::vector<Config>> evaluated = recorded_searches(packed, Problem::packed(600, 600, 600), {1});
  ASSERT_FALSE(evaluated.empty());
  std::vector<Config> starts = packed.starting_configs(cpu_device().info(), Precision::fp32);
  ASSERT_GE(starts.size(), 2u) << "05 has variants besides its default";
  ASSERT_GE(evaluated[0].size(), starts.size());
  for (std::size_t i = 0; i < starts.size(); ++i) {
    starts[i]["threads"] = 1;
    EXPECT_EQ(evaluated[0][i], starts[i]) << "starting configuration " << i;
  }
}

// `kernel` tuned on `p` alone for the library thread counts `threads` (budget 8, made-up speeds in
// the searches) into `cache`, with `timer` timing the finalists' rounds.
void tune_with_finalist_timer(const Kernel& kernel, const Problem& p, const std::vector<int>& threads,
                              const FinalistTimer& timer, ResultsCache& cache) {
  std::vector<std::vector<Config>> evaluated;
  const RunnerFactory runners = [&](const Kernel&, const Problem&) {
    evaluated.emplace_back();
    return std::make_unique<RecordingRunner>(evaluated.back());
  };
  TuneOptions options;
  options.budget.evaluations = 8;
  tune_missing_classes(
      cpu_device(), [&](const Problem&) { return std::vector<const Kernel*>{&kernel}; }, &openblas(), nullptr,
      cache, BlasTable{}, {p}, threads, options, {}, runners, timer);
}

// Each finalist is timed together with the others twice, minutes apart, and keeps its slower
// round: neither the configuration fast only in round one nor the one fast only in round two
// wins against one that is good in both.
TEST(BlasTableTuning, FinalistsKeepTheSlowerOfTwoRoundsTimedTogether) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  const Problem p = Problem::packed(3, 70, 20);
  int rounds = 0;
  std::vector<Config> timed;  // the candidates of the last round, in order
  const FinalistTimer timer = [&](const Problem&, const std::vector<std::pair<const Kernel*, Config>>& candidates) {
    ++rounds;
    timed.clear();
    std::vector<Timing> timings(candidates.size());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      timed.push_back(candidates[i].second);
      // Round one, round two: the first 300, 100 (fast once); the second 190, 260 (faster
      // later); the third 210, 200 (good in both); any others 50.
      const double first_round[] = {300, 190, 210}, second_round[] = {100, 260, 200};
      timings[i].gflops = i < 3 ? (rounds == 1 ? first_round : second_round)[i] : 50.0;
      timings[i].measurement.median_s = 1 / timings[i].gflops;
    }
    return timings;
  };
  tune_with_finalist_timer(small_m, p, {1}, timer, cache);
  ASSERT_EQ(rounds, 2) << "two rounds of the finalists";
  ASSERT_GE(timed.size(), 3u);
  const BlasTable t = blas_table_from_cache(cache, cpu_device().info(), {&small_m}, {1});
  const BlasTableEntry* e = t.find(p, 1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->config, timed[2]) << "the third candidate: 200 at its slower round, against 100 and 190";
  const double kept[] = {100, 190, 200};
  for (std::size_t i = 0; i < 3; ++i) {
    const std::optional<ConfigResult> r = cache.find(cache_key(cpu_device().info(), small_m, p), timed[i]);
    ASSERT_TRUE(r.has_value());
    EXPECT_DOUBLE_EQ(r->gflops, kept[i]) << "candidate " << i << " kept at its slower round";
  }
}

// The kernel's default joins its search's finalists even where the search timed it slowest (one
// timing, on whatever minute it fell), and is timed in both rounds beside the others: here it is
// the fastest there, and the table takes it.
TEST(BlasTableTuning, TheKernelsDefaultIsAlwaysAFinalist) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  SKIP_IF_UNSUPPORTED(small_m);
  const Problem p = Problem::packed(3, 70, 20);
  Config default_config = small_m.starting_configs(cpu_device().info(), Precision::fp32).front();
  default_config["threads"] = 1;
  std::vector<Config> evaluated;
  const RunnerFactory runners = [&](const Kernel&, const Problem&) {
    return std::make_unique<RecordingRunner>(
        evaluated, [&](const Config& c) { return c == default_config ? 1.0 : made_up_gflops(c); });
  };
  std::vector<std::vector<Config>> rounds;
  const FinalistTimer timer = [&](const Problem&,
                                  const std::vector<std::pair<const Kernel*, Config>>& candidates) {
    std::vector<Config>& round = rounds.emplace_back();
    std::vector<Timing> timings(candidates.size());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      round.push_back(candidates[i].second);
      timings[i].gflops =
          candidates[i].second == default_config ? 500.0 : made_up_gflops(candidates[i].second);
      timings[i].measurement.median_s = 1 / timings[i].gflops;
    }
    return timings;
  };
  TuneOptions options;
  options.budget.evaluations = 8;
  tune_missing_classes(
      cpu_device(), [&](const Problem&) { return std::vector<const Kernel*>{&small_m}; }, &openblas(),
      nullptr, cache, BlasTable{}, {p}, {1}, options, {}, runners, timer);
  ASSERT_FALSE(evaluated.empty());
  EXPECT_EQ(evaluated.front(), default_config) << "the search starts from the default";
  ASSERT_GE(evaluated.size(), blas_finalists_per_kernel + 1) << "more configurations than finalists";
  ASSERT_EQ(rounds.size(), 2u);
  for (const std::vector<Config>& round : rounds) {
    EXPECT_EQ(round.size(), blas_finalists_per_kernel + 1) << "the search's fastest and the default";
    EXPECT_NE(std::find(round.begin(), round.end(), default_config), round.end()) << "the default timed";
  }
  const BlasTable t = blas_table_from_cache(cache, cpu_device().info(), {&small_m}, {1});
  ASSERT_NE(t.find(p, 1), nullptr);
  EXPECT_EQ(t.find(p, 1)->config, default_config) << t.find(p, 1)->source;
}

// A two-thread entry lets one-thread configurations compete, so the one-thread search's
// finalists are timed again in the two-thread rounds: here the machine runs everything slower
// in those rounds (a one-thread configuration 60 GFLOP/s, a two-thread one 90) than in the
// one-thread rounds (100). Compared on their own rounds' figures the one-thread finalist (100)
// would win the two-thread entry; timed beside the others, the two-thread one does.
TEST(BlasTableTuning, TimesTheFinalistsOfFewerThreadsAgainInTheRoundsOfMore) {
  if (cpu_device().info().cores < 2) GTEST_SKIP() << "one core: no two-thread entry";
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  const Problem p = Problem::packed(3, 70, 20);
  int two_thread_rounds = 0;
  std::size_t one_thread_finalists_there = 0;
  const FinalistTimer timer = [&](const Problem&,
                                  const std::vector<std::pair<const Kernel*, Config>>& candidates) {
    const bool two_thread_round = std::any_of(candidates.begin(), candidates.end(),
                                              [](const auto& c) { return c.second.at("threads") == 2; });
    two_thread_rounds += two_thread_round;
    std::vector<Timing> timings(candidates.size());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const bool one_thread = candidates[i].second.at("threads") == 1;
      if (two_thread_round && one_thread) ++one_thread_finalists_there;
      timings[i].gflops = !two_thread_round ? 100.0 : one_thread ? 60.0 : 90.0;
      timings[i].measurement.median_s = 1 / timings[i].gflops;
    }
    return timings;
  };
  tune_with_finalist_timer(small_m, p, {1, 2}, timer, cache);
  ASSERT_EQ(two_thread_rounds, 2) << "two rounds of the two-thread search's finalists";
  EXPECT_GT(one_thread_finalists_there, 0u) << "the one-thread finalists timed in them";
  const BlasTable t = blas_table_from_cache(cache, cpu_device().info(), {&small_m}, {1, 2});
  const BlasTableEntry* two = t.find(p, 2);
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->config.at("threads"), 2) << two->source;
  const BlasTableEntry* one = t.find(p, 1);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->config.at("threads"), 1) << one->source;
}

// A class is searched on its first shape of the set; its finalists are then evaluated on each
// other shape of the class (validated there: nothing else is tried) and timed together there, and
// the table keeps the one best over both: here the search's fastest runs the other shape badly.
TEST(BlasTableTuning, TimesTheClassFinalistsOnItsOtherShapes) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  const Problem p = Problem::packed(3, 70, 20), q = Problem::packed(3, 100, 30);
  ASSERT_EQ(shape_class(p), shape_class(q));
  std::optional<Config> fastest_on_p;  // once p's finalists are timed
  const auto speed = [&](const Problem& on, const Config& c) {
    return on == q && fastest_on_p && c == *fastest_on_p ? 1.0 : made_up_gflops(c);
  };
  struct Recorded {
    Problem problem;
    std::vector<Config> configs;
  };
  std::vector<Recorded> runs;
  const RunnerFactory runners = [&](const Kernel&, const Problem& on) {
    runs.push_back({on, {}});
    return std::make_unique<RecordingRunner>(runs.back().configs, [&, on](const Config& c) { return speed(on, c); });
  };
  std::vector<Config> timed_on_p, timed_on_q;
  std::vector<std::string> steps;
  const FinalistTimer timer = [&](const Problem& on, const std::vector<std::pair<const Kernel*, Config>>& candidates) {
    std::vector<Timing> timings(candidates.size());
    (on == q ? timed_on_q : timed_on_p).clear();
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      (on == q ? timed_on_q : timed_on_p).push_back(candidates[i].second);
      if (on == p && (!fastest_on_p || made_up_gflops(candidates[i].second) > made_up_gflops(*fastest_on_p)))
        fastest_on_p = candidates[i].second;
      timings[i].gflops = speed(on, candidates[i].second);
      timings[i].measurement.median_s = 1 / timings[i].gflops;
    }
    return timings;
  };
  TuneOptions options;
  options.budget.evaluations = 8;
  tune_missing_classes(cpu_device(), [&](const Problem&) { return std::vector<const Kernel*>{&small_m}; },
                       &openblas(), nullptr, cache, BlasTable{}, {p, q}, {1}, options,
                       [&](const BlasTuningStep& step) {
                         steps.push_back(step.problem.shape() +
                                         (step.finalists_of ? " finalists of " + step.finalists_of->shape() : ""));
                       },
                       runners, timer);
  ASSERT_EQ(runs.size(), 2u) << "p's search, then q's evaluation of p's finalists";
  EXPECT_EQ(runs[1].problem, q);
  ASSERT_GE(timed_on_p.size(), 2u);
  EXPECT_EQ(runs[1].configs, timed_on_p) << "q evaluates p's finalists and nothing else";
  std::vector<Config> sorted_q = timed_on_q, sorted_p = timed_on_p;
  std::sort(sorted_q.begin(), sorted_q.end());
  std::sort(sorted_p.begin(), sorted_p.end());
  EXPECT_EQ(sorted_q, sorted_p) << "and times them together";
  EXPECT_EQ(steps.back(), "3x100x30 finalists of 3x70x20");
  // p's second fastest: on p 0.9x of the fastest or so, on q the fastest (p's fastest runs q at 1).
  std::vector<Config> by_speed_on_p = timed_on_p;
  std::sort(by_speed_on_p.begin(), by_speed_on_p.end(),
            [](const Config& a, const Config& b) { return made_up_gflops(a) > made_up_gflops(b); });
  ASSERT_LT(made_up_gflops(by_speed_on_p[1]), made_up_gflops(by_speed_on_p[0])) << "the made-up speeds tie";
  const BlasTable t = blas_table_from_cache(cache, cpu_device().info(), {&small_m}, {1});
  ASSERT_NE(t.find(q, 1), nullptr);
  EXPECT_EQ(t.find(q, 1)->config, by_speed_on_p[1]);
}

// Both rounds of the finalists' timing take every finalist of a problem, those that joined from
// another problem's search too: were a joiner missing from one round, its figure would come from
// other minutes than the others'. Two problems whose searches rank the same four configurations
// in opposite orders: each one's best joins the other's three finalists.
TEST(BlasTableTuning, TimesEveryFinalistInBothRoundsThoseFromOtherProblemsToo) {
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  const Problem p = Problem::packed(3, 70, 20), q = Problem::packed(9, 300, 90);
  ASSERT_NE(shape_class(p), shape_class(q));
  const auto speed = [&](const Problem& on, const Config& c) {
    return on.m == q.m ? 2000 - made_up_gflops(c) : made_up_gflops(c);
  };
  std::vector<std::vector<Config>> searches;
  const RunnerFactory runners = [&](const Kernel&, const Problem& on) {
    searches.emplace_back();
    return std::make_unique<RecordingRunner>(searches.back(),
                                             [&, on](const Config& c) { return speed(on, c); });
  };
  std::map<std::int64_t, std::vector<std::vector<Config>>>
      rounds;  // per problem (its M), each round's candidates
  const FinalistTimer timer = [&](const Problem& on,
                                  const std::vector<std::pair<const Kernel*, Config>>& candidates) {
    std::vector<Config>& round = rounds[on.m].emplace_back();
    std::vector<Timing> timings(candidates.size());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      round.push_back(candidates[i].second);
      timings[i].gflops = speed(on, candidates[i].second);
      timings[i].measurement.median_s = 1 / timings[i].gflops;
    }
    return timings;
  };
  const TuneOptions options = four_small_m_configurations(small_m);
  tune_missing_classes(
      cpu_device(), [&](const Problem&) { return std::vector<const Kernel*>{&small_m}; }, &openblas(),
      nullptr, cache, BlasTable{}, {p, q}, {1}, options, {}, runners, timer);
  ASSERT_EQ(rounds.size(), 2u);
  for (const auto& [m, timed] : rounds) {
    ASSERT_EQ(timed.size(), 2u) << "M = " << m << ": two rounds";
    EXPECT_EQ(timed[0].size(), blas_finalists_per_kernel + 1)
        << "M = " << m << ": its finalists and the other's best";
    EXPECT_EQ(timed[0], timed[1]) << "M = " << m << ": the same finalists in both rounds";
  }
}

// Each problem also tries the best configuration other problems' searches found: here the
// two-thread entry of one problem is a configuration that only the other problem's one-thread
// search evaluated, and the fastest there on two threads.
TEST(BlasTableTuning, TriesOtherProblemsBestConfigurations) {
  if (cpu_device().info().cores < 2) GTEST_SKIP() << "needs two cores";
  Scratch scratch;
  ResultsCache cache(scratch.file("c.sqlite"));
  const Kernel& small_m = registry().kernel("cpu", "06_small_m");
  const Problem p = Problem::packed(3, 70, 20), q = Problem::packed(9, 300, 90);
  ASSERT_NE(shape_class(p), shape_class(q));
  struct Recorded {
    Problem problem;
    std::vector<Config> configs;
  };
  std::vector<Recorded> runs;  // per runner, in the order they were made
  // The one-thread configuration q's search found fastest, once that search has run.
  const auto q_best_on_one = [&]() -> std::optional<Config> {
    if (runs.size() < 2) return std::nullopt;  // p's and q's one-thread searches come first
    const std::vector<Config>& tried = runs[1].configs;
    const auto best = std::min_element(tried.begin(), tried.end(), [](const Config& a, const Config& b) {
      return made_up_gflops(a) < made_up_gflops(b);  // q's speed falls as made_up_gflops rises
    });
    return best == tried.end() ? std::nullopt : std::optional<Config>(*best);
  };
  // p: made_up_gflops, and far faster on q's one-thread best run on two threads; q: the reverse
  // order of made_up_gflops, so that the two searches' bests differ.
  const auto speed = [&](const Problem& on, const Config& c) {
    if (on.m == q.m) return 2000 - made_up_gflops(c);
    std::optional<Config> special = q_best_on_one();
    if (special) (*special)["threads"] = 2;
    return made_up_gflops(c) + (special && c == *special ? 5000.0 : 0.0);
  };
  const RunnerFactory runners = [&](const Kernel&, const Problem& on) {
    runs.push_back({on, {}});
    return std::make_unique<RecordingRunner>(runs.back().configs,
                                             [&, on](const Config& c) { return speed(on, c); });
  };
  const FinalistTimer timer = [&](const Problem& on,
                                  const std::vector<std::pair<const Kernel*, Config>>& candidates) {
    std::vector<Timing> timings(candidates.size());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      timings[i].gflops = speed(on, candidates[i].second);
      timings[i].measurement.median_s = 1 / timings[i].gflops;
    }
    return timings;
  };
  // Every search evaluates these four one-thread configurations and nothing else: no search ever
  // runs one of them on two threads.
  const TuneOptions options = four_small_m_configurations(small_m);
  const SearchSpace space = small_m.space(cpu_device().info(), Precision::fp32);
  for (const Config& c : options.start_with) ASSERT_TRUE(space.is_valid(c)) << to_string(c);
  tune_missing_classes(cpu_device(), [&](const Problem&) { return std::vector<const Kernel*>{&small_m}; },
                       &openblas(), nullptr, cache, BlasTable{}, {p, q}, {1, 2}, options, {}, runners, timer);
  ASSERT_GE(runs.size(), 4u) << "the searches: p and q on one thread, then on two";
  ASSERT_EQ(runs[2].problem.m, p.m);
  std::optional<Config> special = q_best_on_one();
  ASSERT_TRUE(special.has_value());
  (*special)["threads"] = 2;
  ASSERT_EQ(std::count(runs[2].configs.begin(), runs[2].configs.end(), *special), 0)
      << "p's two-thread search did not find it itself";
  const BlasTable t = blas_table_from_cache(cache, cpu_device().info(), {&small_m}, {1, 2});
  ASSERT_NE(t.find(p, 2), nullptr);
  EXPECT_EQ(t.find(p, 2)->config, *special) << "q's one-thread best, tried on p with two threads, wins there";
  ASSERT_NE(t.find(q, 1), nullptr);
  EXPECT_NE(t.find(q, 1)->config, t.find(p, 1)->config) << "the two searches' bests differ";
}

}  // namespace
}  // namespace gemmlab
