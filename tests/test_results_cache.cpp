// The tuner's SQLite results cache (round trips, keys, files it must refuse and leave alone,
// two processes writing at once) and `gemmlab export`, run as a child process.
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <regex>
#include <sstream>

#include "gemmlab/record.hpp"
#include "gemmlab/results_cache.hpp"
#include "cli_support.hpp"
#include "test_support.hpp"
#include "text_support.hpp"


namespace gemmlab {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::lines_of;
using testing::CliResult;
using testing::run_cli;

using testing::Scratch;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

CacheKey key_of(const std::string& kernel = "05_packed_avx512", std::int64_t m = 64) {
  return {.device = "5f3a9c Test CPU (avx512)", .backend = "cpu", .kernel = kernel, .kernel_hash = "h1",
          .m = m, .n = 48, .k = 32, .precision = "fp32", .layout = "row-major lda=K ldb=N ldc=N alpha=1 beta=0"};
}

ConfigResult ok_result(const Config& config, double time_s) {
  ConfigResult r;
  r.config = config;
  r.status = Status::ok;
  r.time_s = time_s;
  r.gflops = 1.0 / time_s;
  r.max_rel_error = 1e-7;
  r.reference_name = "openblas";
  r.reference_gflops = 150;
  return r;
}

// A result that was not timed (invalid or failed): why, and the validation's error where it has one.
ConfigResult untimed_result(const Config& config, Status status, const std::string& reason, double max_rel_error = 0) {
  ConfigResult r;
  r.config = config;
  r.status = status;
  r.max_rel_error = max_rel_error;
  r.reason = reason;
  return r;
}

// A result whose first run was too slow to time it further.
ConfigResult aborted_result(const Config& config, double time_s, const std::string& reason) {
  ConfigResult r = ok_result(config, time_s);
  r.status = Status::aborted;
  r.reason = reason;
  return r;
}

using testing::ScopedEnv;

// Runs `sql` on a database through the SQLite C API (to make files the cache must refuse).
void sqlite_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK) << path;
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error != nullptr ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// Opening `path` throws CacheError naming the file and `words`, and the file's bytes are unchanged.
void expect_refused(const std::string& path, std::vector<std::string> words) {
  const std::string before = read_bytes(path);
  words.insert(words.begin(), path);
  EXPECT_THROW_CONTAINING(ResultsCache{path}, CacheError, words);
  EXPECT_EQ(read_bytes(path), before) << path << " was modified";
}

// A file written before the results became one record (ConfigResult) — the same schema, times in
// seconds — reads on: nothing cached is lost.
TEST(ResultsCache, ReadsAFileAnEarlierGemmlabWrote) {
  Scratch scratch;
  const std::string path = scratch.file("earlier.sqlite");
  sqlite_exec(path,
              "CREATE TABLE results (device TEXT NOT NULL, backend TEXT NOT NULL, kernel TEXT NOT NULL, "
              "kernel_hash TEXT NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, "
              "precision TEXT NOT NULL, layout TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL CHECK "
              "(status IN ('ok', 'invalid', 'failed', 'aborted')), time_s REAL, gflops REAL, max_rel_error REAL, "
              "reason TEXT NOT NULL, reference_name TEXT NOT NULL, reference_gflops REAL, recorded_at TEXT NOT NULL, "
              "PRIMARY KEY (device, backend, kernel, kernel_hash, m, n, k, precision, layout, config)); "
              "PRAGMA application_id = 1196248130; PRAGMA user_version = 1; "
              "INSERT INTO results VALUES ('5f3a9c Test CPU (avx512)', 'cpu', '05_packed_avx512', 'h1', 64, 48, 32, "
              "'fp32', 'row-major lda=K ldb=N ldc=N alpha=1 beta=0', '{\"MR\":8,\"NV\":2}', 'ok', 0.002, 98.5, "
              "1e-07, '', 'openblas', 150.0, '2025-03-04T05:06:07Z');");
  ResultsCache cache(path);
  const auto loaded = cache.load(key_of());
  ASSERT_EQ(loaded.size(), 1u);
  const ConfigResult& r = loaded[0];
  EXPECT_EQ(r.config, (Config{{"MR", 8}, {"NV", 2}}));
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_EQ(r.time_s, 0.002);
  EXPECT_EQ(r.gflops, 98.5);
  EXPECT_EQ(r.reference_name, "openblas");
  EXPECT_EQ(r.recorded_at, "2025-03-04T05:06:07Z");
  EXPECT_TRUE(r.from_cache);
  EXPECT_DOUBLE_EQ(nlohmann::json(r)["time_ms"].get<double>(), 2.0);
  // And it takes new results beside the old one.
  cache.store(key_of(), ok_result({{"MR", 4}, {"NV", 4}}, 1e-3));
  EXPECT_EQ(cache.load(key_of()).size(), 2u);
}

TEST(ResultsCache, StoresAndFindsEveryStatusWithAllItsFields) {
  Scratch scratch;
  ResultsCache cache(scratch.file("results.sqlite"));
  const CacheKey key = key_of();
  std::vector<ConfigResult> stored;
  stored.push_back(ok_result({{"MR", 14}, {"NV", 2}}, 2.5e-4));
  stored.push_back(untimed_result({{"MR", 4}, {"NV", 1}}, Status::invalid, "C[3,5] = NaN, expected 0.25",
                                  std::numeric_limits<double>::infinity()));
  stored.push_back(untimed_result({{"MR", 8}, {"NV", 3}}, Status::failed,
                                  "prepare: \"MR*NV\" too large, 'quoted', ünïcode",
                                  std::numeric_limits<double>::quiet_NaN()));
  ConfigResult aborted = aborted_result({{"MR", 2}, {"NV", 1}}, 9e-3, "first run slower than 3x the best");
  aborted.recorded_at = "2024-01-02T03:04:05Z";
  stored.push_back(aborted);
  for (const auto& r : stored) cache.store(key, r);

  const std::regex iso8601(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
  const std::vector<ConfigResult> loaded = cache.load(key);
  ASSERT_EQ(loaded.size(), stored.size());
  for (std::size_t i = 0; i < stored.size(); ++i) {
    const ConfigResult& want = stored[i];
    for (const ConfigResult& got : {loaded[i], *cache.find(key, want.config)}) {
      EXPECT_EQ(got.config, want.config) << i << ": load keeps the order of storing";
      EXPECT_EQ(got.status, want.status) << i;
      EXPECT_EQ(got.time_s, want.time_s) << i;
      EXPECT_EQ(got.gflops, want.gflops) << i;
      if (std::isnan(want.max_rel_error)) {
        EXPECT_TRUE(std::isnan(got.max_rel_error)) << i;
      } else {
        EXPECT_EQ(got.max_rel_error, want.max_rel_error) << i;
      }
      EXPECT_EQ(got.reason, want.reason) << i;
      EXPECT_EQ(got.reference_name, want.reference_name) << i;
      EXPECT_EQ(got.reference_gflops, want.reference_gflops) << i;
      EXPECT_TRUE(std::regex_match(got.recorded_at, iso8601)) << got.recorded_at;
      if (!want.recorded_at.empty()) {
        EXPECT_EQ(got.recorded_at, want.recorded_at) << "a given time is kept";
      }
    }
  }
  EXPECT_FALSE(cache.find(key, {{"MR", 14}, {"NV", 1}})) << "a configuration never stored";
  EXPECT_FALSE(cache.find(key, {{"MR", 14}})) << "a configuration is matched whole, not by a subset";
  EXPECT_FALSE(cache.find(key, {{"MR", 14}, {"NV", 2}, {"MC", 96}})) << "nor by a superset";
}

TEST(ResultsCache, StoringTheSameConfigurationAgainReplacesTheResult) {
  Scratch scratch;
  ResultsCache cache(scratch.file("results.sqlite"));
  const CacheKey key = key_of();
  cache.store(key, ok_result({{"MR", 14}}, 1e-3));
  cache.store(key, ok_result({{"MR", 8}}, 2e-3));
  cache.store(key, untimed_result({{"MR", 14}}, Status::failed, "crashed"));
  const auto loaded = cache.load(key);
  ASSERT_EQ(loaded.size(), 2u);
  const auto found = cache.find(key, {{"MR", 14}});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->status, Status::failed);
  EXPECT_EQ(found->reason, "crashed");
  EXPECT_EQ(cache.find(key, {{"MR", 8}})->time_s, 2e-3);
}

TEST(ResultsCache, KeysDifferingInAnyOneFieldAreDistinct) {
  Scratch scratch;
  ResultsCache cache(scratch.file("results.sqlite"));
  const CacheKey base = key_of();
  std::vector<CacheKey> keys(10, base);
  keys[1].device += "x";
  keys[2].backend = "cuda";
  keys[3].kernel = "04_register_blocked_avx2";
  keys[4].kernel_hash = "h2";
  keys[5].m += 1;
  keys[6].n += 1;
  keys[7].k += 1;
  keys[8].precision = "fp64";
  keys[9].layout = "row-major lda=K+3 ldb=N ldc=N alpha=1 beta=0";
  const Config config = {{"MR", 14}};
  for (std::size_t i = 0; i < keys.size(); ++i) cache.store(keys[i], ok_result(config, 1e-3 * static_cast<double>(i + 1)));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto loaded = cache.load(keys[i]);
    ASSERT_EQ(loaded.size(), 1u) << "key " << i;
    EXPECT_EQ(loaded[0].time_s, 1e-3 * static_cast<double>(i + 1)) << "key " << i;
  }
  const auto groups = cache.groups();
  ASSERT_EQ(groups.size(), keys.size());
  for (const auto& g : groups) {
    EXPECT_EQ(g.results, 1u);
    EXPECT_NE(std::find(keys.begin(), keys.end(), g.key), keys.end()) << g.key.kernel;
  }
}

TEST(ResultsCache, GroupsCountTheResultsOfEachKey) {
  Scratch scratch;
  ResultsCache cache(scratch.file("results.sqlite"));
  EXPECT_TRUE(cache.groups().empty());
  for (ParamValue v = 0; v < 5; ++v) cache.store(key_of("a"), ok_result({{"P", v}}, 1e-3));
  for (ParamValue v = 0; v < 3; ++v) cache.store(key_of("b"), ok_result({{"P", v}}, 1e-3));
  const auto groups = cache.groups();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].key, key_of("a"));
  EXPECT_EQ(groups[0].results, 5u);
  EXPECT_EQ(groups[1].key, key_of("b"));
  EXPECT_EQ(groups[1].results, 3u);
}

TEST(ResultsCache, ReopeningTheFileSeesTheResultsAndTheObjectMoves) {
  Scratch scratch;
  const std::string path = scratch.file("deep/er/results.sqlite");  // directories are created
  const Config config = {{"KC", 384}, {"MC", -7}, {"NC", std::numeric_limits<ParamValue>::max()}};
  {
    ResultsCache cache(path);
    cache.store(key_of(), ok_result(config, 3e-3));
  }
  ResultsCache first(path);
  ResultsCache moved(std::move(first));
  EXPECT_EQ(moved.path(), path);
  const auto found = moved.find(key_of(), config);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->config, config);
  EXPECT_EQ(found->time_s, 3e-3);
}

TEST(ResultsCache, DefaultPathFollowsXdgCacheHomeThenHome) {
  {
    const ScopedEnv xdg("XDG_CACHE_HOME", "/some/where");
    EXPECT_EQ(ResultsCache::default_path(), "/some/where/gemmlab/results.sqlite");
  }
  const ScopedEnv home("HOME", "/home/tester");
  {
    const ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(ResultsCache::default_path(), "/home/tester/.cache/gemmlab/results.sqlite");
  }
  {
    const ScopedEnv xdg("XDG_CACHE_HOME", "relative/dir");  // invalid by the XDG specification
    EXPECT_EQ(ResultsCache::default_path(), "/home/tester/.cache/gemmlab/results.sqlite");
  }
  {
    const ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    const ScopedEnv no_home("HOME", nullptr);
    EXPECT_THROW_CONTAINING(ResultsCache::default_path(), CacheError, {"HOME", "--cache"});
  }
}

// Opens the cache at `path`, stores one result, and checks that the file is then an SQLite
// database that gives the result back.
void expect_initialised_on_first_store(const std::string& path) {
  {
    ResultsCache cache(path);
    cache.store(key_of(), ok_result({{"MR", 1}}, 1e-3));
    EXPECT_EQ(cache.load(key_of()).size(), 1u);
  }
  EXPECT_EQ(read_bytes(path).substr(0, 16), std::string("SQLite format 3\0", 16));
  EXPECT_EQ(ResultsCache(path).load(key_of()).size(), 1u);
}

TEST(ResultsCacheFile, AnEmptyFileIsInitialised) {
  Scratch scratch;
  const std::string path = scratch.file("empty.sqlite");
  write_bytes(path, "");
  expect_initialised_on_first_store(path);
}

TEST(ResultsCacheFile, ATableLessDatabaseWithoutApplicationIdIsInitialised) {
  Scratch scratch;
  const std::string path = scratch.file("blank.sqlite");
  sqlite_exec(path, "PRAGMA page_size = 4096; VACUUM;");
  expect_initialised_on_first_store(path);
}

TEST(ResultsCacheFile, FilesThatAreNotDatabasesAreRefusedAndLeftUnchanged) {
  Scratch scratch;
  const std::string text = scratch.file("notes.txt");
  write_bytes(text, "These are my notes.\nDo not delete them.\n");
  expect_refused(text, {"not an SQLite database"});
  const std::string tiny = scratch.file("tiny");
  write_bytes(tiny, "hi");
  expect_refused(tiny, {"not an SQLite database"});

  std::mt19937 rng(7);
  std::string noise(10000, '\0');
  for (auto& c : noise) c = static_cast<char>(rng());
  const std::string random = scratch.file("random.bin");
  write_bytes(random, noise);
  expect_refused(random, {"not an SQLite database"});

  // SQLite's magic followed by garbage: past the first check, caught by SQLite.
  const std::string garbage = scratch.file("garbage.sqlite");
  write_bytes(garbage, std::string("SQLite format 3\0", 16) + noise);
  expect_refused(garbage, {});
}

TEST(ResultsCacheFile, ATruncatedCacheIsRefusedAsCorruptAndLeftUnchanged) {
  Scratch scratch;
  const std::string path = scratch.file("truncated.sqlite");
  {
    ResultsCache cache(path);
    for (ParamValue v = 0; v < 400; ++v) {
      ConfigResult r = ok_result({{"P", v}, {"Q", v * 3}}, 1e-3);
      r.reason = std::string(100, 'x');  // enough rows for many pages
      cache.store(key_of(), r);
    }
  }
  const std::string whole = read_bytes(path);
  ASSERT_GT(whole.size(), 40000u);
  write_bytes(path, whole.substr(0, whole.size() / 2));
  expect_refused(path, {"corrupt"});
}

TEST(ResultsCacheFile, AnotherProgramsDatabaseIsRefusedAndLeftUnchanged) {
  Scratch scratch;
  const std::string other = scratch.file("other.db");
  sqlite_exec(other, "PRAGMA application_id = 1234567; CREATE TABLE customers (name TEXT); "
                     "INSERT INTO customers VALUES ('Ada');");
  expect_refused(other, {"another program", "application_id", "--cache"});
  // Without an application_id, but with tables of its own.
  const std::string plain = scratch.file("plain.db");
  sqlite_exec(plain, "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('keep me');");
  expect_refused(plain, {"another program", "notes"});
  // A table-less database is only taken when nothing marks it as somebody else's.
  const std::string marked = scratch.file("marked.db");
  sqlite_exec(marked, "PRAGMA user_version = 5; VACUUM;");
  expect_refused(marked, {"another program"});
}

TEST(ResultsCacheFile, ACacheOfANewerSchemaIsRefusedAndLeftUnchanged) {
  Scratch scratch;
  const std::string path = scratch.file("newer.sqlite");
  {
    ResultsCache cache(path);
    cache.store(key_of(), ok_result({{"MR", 1}}, 1e-3));
  }
  sqlite_exec(path, "PRAGMA user_version = 2;");
  expect_refused(path, {"newer"});
}

TEST(ResultsCacheFile, AnUnusableLocationIsAClearError) {
  Scratch scratch;
  const std::string blocker = scratch.file("a_file");
  write_bytes(blocker, "x");
  EXPECT_THROW_CONTAINING(ResultsCache(blocker + "/results.sqlite"), CacheError, {blocker + "/results.sqlite"});
  EXPECT_THROW_CONTAINING(ResultsCache(scratch.dir().string()), CacheError, {scratch.dir().string(), "directory"});
  if (::geteuid() == 0) GTEST_SKIP() << "permissions do not stop root";
  const std::string locked = scratch.file("locked");
  fs::create_directories(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_THROW_CONTAINING(ResultsCache(locked + "/results.sqlite"), CacheError, {locked + "/results.sqlite"});
  const std::string read_only = scratch.file("read_only.sqlite");
  { ResultsCache cache(read_only); }
  fs::permissions(read_only, fs::perms::owner_read);
  EXPECT_THROW_CONTAINING(ResultsCache{read_only}, CacheError, {read_only, "write"});
  fs::permissions(locked, fs::perms::owner_all);
}

// Two processes open the same new file at the same moment and store 200 results each, one
// transaction per result: every result of both is there afterwards.
TEST(ResultsCacheConcurrency, TwoProcessesStoringIntoOneFileLoseNothing) {
  Scratch scratch;
  const std::string path = scratch.file("shared.sqlite");
  constexpr ParamValue per_child = 200;
  std::vector<pid_t> children;
  for (ParamValue child = 0; child < 2; ++child) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      int status = 0;
      try {
        ResultsCache cache(path);
        for (ParamValue i = 0; i < per_child; ++i) cache.store(key_of(), ok_result({{"child", child}, {"i", i}}, 1e-3));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %lld: %s\n", static_cast<long long>(child), e.what());
        status = 1;
      }
      std::fflush(stderr);
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed (its message is above)";
  }
  ResultsCache cache(path);
  const auto loaded = cache.load(key_of());
  EXPECT_EQ(loaded.size(), static_cast<std::size_t>(2 * per_child));
  for (ParamValue child = 0; child < 2; ++child)
    for (ParamValue i = 0; i < per_child; ++i)
      ASSERT_TRUE(cache.find(key_of(), {{"child", child}, {"i", i}})) << child << " " << i;
}

// A result is durable once store() returns: a process killed right after (no destructor, no
// checkpoint of the WAL) leaves it in the file.
TEST(ResultsCacheConcurrency, AStoredResultSurvivesAKillOfTheProcess) {
  Scratch scratch;
  const std::string path = scratch.file("killed.sqlite");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0) << "fork failed";
  if (pid == 0) {
    try {
      auto* cache = new ResultsCache(path);  // never destroyed: the process dies holding it
      cache->store(key_of(), ok_result({{"MR", 14}}, 1e-3));
    } catch (...) {
      ::_exit(1);
    }
    ::kill(::getpid(), SIGKILL);
    ::_exit(2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child should have been killed";
  const auto found = ResultsCache(path).find(key_of(), {{"MR", 14}});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->time_s, 1e-3);
}

// ---- gemmlab export ------------------------------------------------------------------------

std::string quoted(const std::string& path) { return "'" + path + "'"; }

// One group of six results (every status) for 05_packed_avx512 64x48x32, and three for
// 04_register_blocked_avx2 at the same size.
std::vector<ConfigResult> populate(const std::string& path) {
  ResultsCache cache(path);
  std::vector<ConfigResult> results;
  results.push_back(ok_result({{"MR", 14}, {"NV", 2}}, 2.0e-4));
  results.push_back(ok_result({{"MR", 8}, {"NV", 2}}, 3.0e-4));
  results.push_back(ok_result({{"MR", 8}, {"NV", 1}}, 4.5e-4));
  results.push_back(untimed_result({{"MR", 4}, {"NV", 1}}, Status::invalid, "C[0,1] = 2, expected 1", 0.5));
  results.push_back(untimed_result({{"MR", 4}, {"NV", 2}}, Status::failed, "crashed, \"SIGSEGV\"\nin the micro-kernel"));
  results.push_back(aborted_result({{"MR", 2}, {"NV", 1}}, 5e-3, "first run slower than 3x the best"));
  for (const auto& r : results) cache.store(key_of(), r);
  for (ParamValue mr : {1, 2, 4}) cache.store(key_of("04_register_blocked_avx2"), ok_result({{"MR", mr}}, 1e-3));
  return results;
}

TEST(Export, JsonIsAKernelTunerCacheFileThatReadsBackAndReplays) {
  Scratch scratch;
  const std::string cache = scratch.file("results.sqlite");
  const std::vector<ConfigResult> results = populate(cache);
  for (const std::string name : {"x.json", "x.json.gz"}) {
    const std::string out = scratch.file(name);
    const CliResult r = run_cli("export --cache " + quoted(cache) + " --format json --kernel 05_packed_avx512 --output " +
                                quoted(out));
    ASSERT_EQ(r.status, 0) << r;
    EXPECT_EQ(read_bytes(out).substr(0, 1) == "\x1f", name.ends_with(".gz")) << name << ": gzip when the name says so";
    const Record record = load_record(out);
    EXPECT_EQ(record.device_name, key_of().device);
    EXPECT_EQ(record.kernel_name, "05_packed_avx512");
    EXPECT_EQ(record.problem_size, (std::vector<std::int64_t>{64, 48, 32}));
    ASSERT_EQ(record.parameters.size(), 2u);
    EXPECT_EQ(record.parameters[0].name, "MR");
    EXPECT_EQ(record.parameters[0].values, (std::vector<ParamValue>{2, 4, 8, 14}));
    EXPECT_EQ(record.parameters[1].name, "NV");
    EXPECT_EQ(record.parameters[1].values, (std::vector<ParamValue>{1, 2}));
    EXPECT_EQ(std::get<std::string>(record.extra.at("precision")), "fp32");
    ASSERT_EQ(record.entries.size(), results.size());
    for (const ConfigResult& want : results) {
      const auto e = std::find_if(record.entries.begin(), record.entries.end(),
                                  [&](const RecordEntry& x) { return x.config == want.config; });
      ASSERT_NE(e, record.entries.end()) << to_string(want.config);
      EXPECT_EQ(std::get<std::string>(e->extra.at("status")), to_string(want.status));
      const bool timed = want.status == Status::ok || want.status == Status::aborted;
      EXPECT_EQ(e->ok, timed) << to_string(want.config) << ": ok and aborted results keep their time";
      if (timed) {
        EXPECT_DOUBLE_EQ(e->time_ms, want.time_s * 1e3) << to_string(want.config);
      } else {
        EXPECT_EQ(std::get<std::string>(e->extra.at("reason")), want.reason);
      }
    }
    EXPECT_DOUBLE_EQ(record.best().time_ms, 0.2);
  }
  const CliResult to_stdout = run_cli("export --cache " + quoted(cache) + " --format json --kernel 05_packed_avx512");
  ASSERT_EQ(to_stdout.status, 0) << to_stdout;
  EXPECT_EQ(parse_record(to_stdout.out, "stdout").entries.size(), results.size());
  const CliResult replayed = run_cli("replay --record " + quoted(scratch.file("x.json")) + " --budget 6 --runs 2 --json");
  EXPECT_EQ(replayed.status, 0) << "gemmlab replay reads the export\n" << replayed;
}

TEST(Export, CsvHasAHeaderAndOneQuotedRowPerResult) {
  Scratch scratch;
  const std::string cache = scratch.file("results.sqlite");
  const std::vector<ConfigResult> results = populate(cache);
  const CliResult all = run_cli("export --cache " + quoted(cache) + " --format csv");
  ASSERT_EQ(all.status, 0) << all;
  const std::string header =
      "device,backend,kernel,kernel_hash,m,n,k,precision,layout,params,status,time_ms,gflops,ratio_to_reference,"
      "max_rel_error,reason,recorded_at";
  const auto lines = lines_of(all.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], header);
  // The failed result's reason holds a comma, quotes and a line break: quoted, quotes doubled.
  EXPECT_TRUE(contains(all.out, "\"crashed, \"\"SIGSEGV\"\"\nin the micro-kernel\"")) << all.out;
  EXPECT_EQ(lines.size(), 1 + results.size() + 3 + 1) << "header, 9 rows, one of them on two lines";
  EXPECT_TRUE(contains(all.out, "5f3a9c Test CPU (avx512),cpu,05_packed_avx512,h1,64,48,32,fp32,"
                                "row-major lda=K ldb=N ldc=N alpha=1 beta=0,MR=14;NV=2,ok,"))
      << all.out;

  const std::string out = scratch.file("x.csv");
  const CliResult filtered =
      run_cli("export --cache " + quoted(cache) + " --format csv --kernel 04_register_blocked_avx2 --m 64 --output " + quoted(out));
  ASSERT_EQ(filtered.status, 0) << filtered;
  EXPECT_TRUE(filtered.out.empty());
  EXPECT_EQ(lines_of(read_bytes(out)).size(), 1u + 3u);
}

TEST(Export, TheDefaultCacheFollowsXdgCacheHome) {
  Scratch scratch;
  populate(scratch.file("gemmlab/results.sqlite"));
  const CliResult r = run_cli("export --format csv --kernel 04_register_blocked_avx2", "XDG_CACHE_HOME=" + quoted(scratch.dir().string()));
  ASSERT_EQ(r.status, 0) << r;
  EXPECT_EQ(lines_of(r.out).size(), 1u + 3u);
}

TEST(Export, JsonOfSeveralGroupsExitsTwoListingThemAndTheFiltersToAdd) {
  Scratch scratch;
  const std::string cache = scratch.file("results.sqlite");
  populate(cache);
  const std::string out = scratch.file("x.json");
  const CliResult r = run_cli("export --cache " + quoted(cache) + " --format json --output " + quoted(out));
  EXPECT_EQ(r.status, 2) << r;
  for (const char* word : {"05_packed_avx512", "04_register_blocked_avx2", "64x48x32", "fp32", "--kernel"})
    EXPECT_TRUE(contains(r.err, word)) << word << "\n" << r;
  EXPECT_FALSE(fs::exists(out));
}

TEST(Export, ASelectionWithoutResultsExitsTwo) {
  Scratch scratch;
  const std::string cache = scratch.file("results.sqlite");
  populate(cache);
  for (const std::string format : {"json", "csv"}) {
    const CliResult r = run_cli("export --cache " + quoted(cache) + " --format " + format + " --kernel 05_packed_avx512 --m 65");
    EXPECT_EQ(r.status, 2) << r;
    EXPECT_TRUE(contains(r.err, "no results")) << r;
  }
  const std::string empty = scratch.file("empty.sqlite");
  { ResultsCache created(empty); }
  const CliResult csv = run_cli("export --cache " + quoted(empty) + " --format csv");
  EXPECT_EQ(csv.status, 0) << "an empty cache is an empty CSV\n" << csv;
  EXPECT_EQ(lines_of(csv.out).size(), 1u);
  EXPECT_EQ(run_cli("export --cache " + quoted(empty) + " --format json").status, 2);
}

TEST(Export, AMissingCacheExitsTwoAndIsNotCreated) {
  Scratch scratch;
  const std::string cache = scratch.file("nope/results.sqlite");
  const CliResult r = run_cli("export --cache " + quoted(cache) + " --format csv");
  EXPECT_EQ(r.status, 2) << r;
  EXPECT_TRUE(contains(r.err, cache)) << r;
  EXPECT_FALSE(fs::exists(cache));
  EXPECT_FALSE(fs::exists(scratch.file("nope")));
}

TEST(Export, AnUnusableCacheExitsTwoNamingTheFile) {
  Scratch scratch;
  const std::string corrupt = scratch.file("corrupt.sqlite");
  write_bytes(corrupt, std::string("SQLite format 3\0", 16) + std::string(5000, '\x5a'));
  const std::string other = scratch.file("other.db");
  sqlite_exec(other, "PRAGMA application_id = 42; CREATE TABLE t (x);");
  const std::string text = scratch.file("text.sqlite");
  write_bytes(text, "hello\n");
  for (const auto& path : {corrupt, other, text}) {
    const std::string before = read_bytes(path);
    const CliResult r = run_cli("export --cache " + quoted(path) + " --format json");
    EXPECT_EQ(r.status, 2) << r;
    EXPECT_TRUE(contains(r.err, path)) << r;
    EXPECT_EQ(read_bytes(path), before);
  }
}

TEST(Export, TheFormatIsRequiredAndChecked) {
  Scratch scratch;
  const std::string cache = scratch.file("results.sqlite");
  populate(cache);
  EXPECT_EQ(run_cli("export --cache " + quoted(cache)).status, 2);
  const CliResult r = run_cli("export --cache " + quoted(cache) + " --format xml");
  EXPECT_EQ(r.status, 2) << r;
  EXPECT_TRUE(contains(r.err, "xml")) << r;
}

}  // namespace
}  // namespace gemmlab
