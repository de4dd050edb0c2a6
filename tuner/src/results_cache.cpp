#include "gemmlab/results_cache.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

namespace gemmlab {

namespace {

// PRAGMA application_id of a gemmlab results cache ("GMLB", bytes 68-71 of the file header), so
// that another program's SQLite database is never mistaken for one and modified.
constexpr std::int64_t gemmlab_application_id = 0x474d4c42;
// PRAGMA user_version: the schema below. A later schema gets a larger number; a gemmlab that finds
// a number it does not know refuses the file instead of misreading or "repairing" it.
constexpr std::int64_t schema_version = 1;
// How long a store() or an open waits for another process holding the write lock.
constexpr int busy_timeout_ms = 60'000;

// One row per result. The configuration is the JSON text of the parameter map, whose names
// nlohmann::json writes sorted ({"KC":256,"MC":96}), so equal configurations have equal text and
// the primary key finds them exactly. NaN times and errors are stored as NULL (SQLite cannot hold
// a NaN); infinities are stored as they are.
constexpr const char* schema_sql = R"(
CREATE TABLE results (
  device TEXT NOT NULL, backend TEXT NOT NULL, kernel TEXT NOT NULL, kernel_hash TEXT NOT NULL,
  m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, precision TEXT NOT NULL, layout TEXT NOT NULL,
  config TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ok', 'invalid', 'failed', 'aborted')),
  time_s REAL, gflops REAL, max_rel_error REAL, reason TEXT NOT NULL,
  reference_name TEXT NOT NULL, reference_gflops REAL, recorded_at TEXT NOT NULL,
  PRIMARY KEY (device, backend, kernel, kernel_hash, m, n, k, precision, layout, config));
)";

constexpr const char* key_condition =
    "device = ?1 AND backend = ?2 AND kernel = ?3 AND kernel_hash = ?4 AND m = ?5 AND n = ?6 AND k = ?7 AND "
    "precision = ?8 AND layout = ?9";
constexpr const char* result_columns =
    "config, status, time_s, gflops, max_rel_error, reason, reference_name, reference_gflops, recorded_at";

struct StatementDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementDeleter>;

// Resets a statement when a use of it ends, so that no read transaction stays open between calls
// (an open one would pin an old snapshot and keep the WAL from being checkpointed).
struct ResetOnExit {
  sqlite3_stmt* statement;
  ~ResetOnExit() {
    sqlite3_reset(statement);
    sqlite3_clear_bindings(statement);
  }
};

std::string hex(std::int64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%08llx", static_cast<unsigned long long>(static_cast<std::uint32_t>(value)));
  return text;
}

std::string config_text(const Config& config) { return nlohmann::json(config).dump(); }

// A non-empty file that does not begin with SQLite's magic string is refused before SQLite opens
// it, so nothing at all (not even a lock) touches a file that is plainly something else.
void refuse_non_sqlite(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;  // missing (SQLite creates it) or unreadable (SQLite says so)
  char head[16] = {};
  in.read(head, sizeof head);
  const std::streamsize got = in.gcount();
  if (got > 0 && (got < 16 || std::memcmp(head, "SQLite format 3", 16) != 0))
    throw CacheError(path + " is not a gemmlab results cache (not an SQLite database)");
}

// What a database file holds, read from its header and schema without changing anything.
struct Contents {
  std::int64_t application_id = 0, user_version = 0;
  std::vector<std::string> tables;
  bool empty() const { return application_id == 0 && user_version == 0 && tables.empty(); }
};

}  // namespace

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

struct ResultsCache::Impl {
  std::string path;
  sqlite3* db = nullptr;
  Statement insert, select_key, select_one, select_groups, select_shapes;

  ~Impl() {
    insert.reset();
    select_key.reset();
    select_one.reset();
    select_groups.reset();
    select_shapes.reset();
    if (db != nullptr) sqlite3_close(db);
  }

  [[noreturn]] void fail(int rc, const std::string& doing) const {
    const std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
      case SQLITE_NOTADB:
        throw CacheError(path + " is not a gemmlab results cache (not an SQLite database)");
      case SQLITE_CORRUPT:
        throw CacheError(path + " is corrupt (" + detail + "); gemmlab will not modify it; move it away or "
                         "choose another file with --cache");
      case SQLITE_BUSY:
      case SQLITE_LOCKED:
        throw CacheError(path + " stayed locked by another process for " + std::to_string(busy_timeout_ms / 1000) +
                         " s while " + doing);
      case SQLITE_READONLY:
      case SQLITE_PERM:
      case SQLITE_CANTOPEN:
      case SQLITE_AUTH:
        throw CacheError(path + ": cannot write the results cache there (" + detail + ")");
      case SQLITE_FULL:
        throw CacheError(path + ": the disk is full (" + detail + ")");
      default:
        throw CacheError(path + ": " + doing + " failed (" + detail + ")");
    }
  }

  void exec(const char* sql, const std::string& doing) {
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) fail(rc, doing);
  }

  Statement prepare(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    const int rc = sqlite3_prepare_v3(db, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    if (rc != SQLITE_OK) fail(rc, "reading it");
    return Statement(s);
  }

  // The first column of the first row of a one-off query, as text ("" when there is no row).
  std::string query_text(const char* sql) {
    Statement s = prepare(sql);
    const int rc = sqlite3_step(s.get());
    if (rc == SQLITE_DONE) return "";
    if (rc != SQLITE_ROW) fail(rc, "reading it");
    const auto* text = sqlite3_column_text(s.get(), 0);
    return text != nullptr ? reinterpret_cast<const char*>(text) : "";
  }

  std::int64_t query_int(const char* sql) {
    Statement s = prepare(sql);
    const int rc = sqlite3_step(s.get());
    if (rc != SQLITE_ROW) fail(rc, "reading it");
    return sqlite3_column_int64(s.get(), 0);
  }

  // SQLite answers SQLITE_BUSY at once, without waiting in its busy handler, where waiting could
  // deadlock: two processes switching a new file to WAL mode together (each holds a read lock and
  // wants the write lock), a read transaction meeting that switch, another connection recovering
  // the WAL. Outside a transaction such a step is simply run again, until the busy timeout's deadline.
  template <class Step>
  auto retry_while_busy(Step step) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
    for (;;) {
      try {
        return step();
      } catch (const CacheError&) {
        const int rc = sqlite3_errcode(db);
        if (sqlite3_get_autocommit(db) == 0) rollback();
        if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }

  // Reads the header fields and the table list from one snapshot: read separately, they could
  // straddle another process's initialisation (application_id still 0, the table already there)
  // and make a fresh gemmlab cache look like another program's database.
  Contents inspect() {
    if (sqlite3_get_autocommit(db) == 0) return inspect_in_transaction();  // inside initialise()
    return retry_while_busy([&] {
      exec("BEGIN", "reading it");
      Contents c = inspect_in_transaction();
      exec("COMMIT", "reading it");
      return c;
    });
  }

  Contents inspect_in_transaction() {
    Contents c;
    c.application_id = query_int("PRAGMA application_id");
    c.user_version = query_int("PRAGMA user_version");
    Statement s = prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW)
      c.tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0)));
    if (rc != SQLITE_DONE) fail(rc, "reading it");
    return c;
  }

  // Throws CacheError unless `c` describes a gemmlab results cache of the schema this code knows.
  void require_ours(const Contents& c) const {
    if (c.application_id != gemmlab_application_id) {
      std::string what = "application_id " + hex(c.application_id);
      if (c.application_id == 0) {
        what += ", tables:";
        for (const auto& t : c.tables) what += " " + t;
        if (c.tables.empty()) what += " none, user_version " + std::to_string(c.user_version);
      }
      throw CacheError(path + " is an SQLite database of another program (" + what +
                       "); gemmlab will not modify it; choose another file with --cache");
    }
    if (c.user_version > schema_version)
      throw CacheError(path + " is a results cache of a newer gemmlab (schema " + std::to_string(c.user_version) +
                       "; this gemmlab knows schema " + std::to_string(schema_version) +
                       "); gemmlab will not modify it; update gemmlab or choose another file with --cache");
    if (c.user_version != schema_version)
      throw CacheError(path + " is a results cache of an unknown schema (" + std::to_string(c.user_version) +
                       "); gemmlab will not modify it; choose another file with --cache");
    if (std::find(c.tables.begin(), c.tables.end(), "results") == c.tables.end())
      throw CacheError(path + " is corrupt (a gemmlab results cache without its results table); gemmlab will "
                       "not modify it; move it away or choose another file with --cache");
  }

  // BEGIN IMMEDIATE takes the write lock at once, so a transaction never fails half-way because
  // another process wrote first. The busy timeout makes it wait for another writer.
  void begin_immediate(const std::string& doing) {
    retry_while_busy([&] { exec("BEGIN IMMEDIATE", doing); });
  }

  void rollback() { sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr); }

  // Creates the schema in an empty file. Another process may be doing the same: the write lock
  // serialises the two, and the second one finds the schema there and leaves it.
  void initialise() {
    begin_immediate("initialising it");
    try {
      if (inspect().empty()) {
        exec(schema_sql, "creating its schema");
        exec(("PRAGMA application_id = " + std::to_string(gemmlab_application_id)).c_str(), "creating its schema");
        exec(("PRAGMA user_version = " + std::to_string(schema_version)).c_str(), "creating its schema");
      }
      exec("COMMIT", "initialising it");
    } catch (...) {
      rollback();
      throw;
    }
  }

  void bind_text(sqlite3_stmt* s, int index, const std::string& text) {
    const int rc = sqlite3_bind_text(s, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) fail(rc, "binding a value");
  }
  void bind_int(sqlite3_stmt* s, int index, std::int64_t value) {
    const int rc = sqlite3_bind_int64(s, index, value);
    if (rc != SQLITE_OK) fail(rc, "binding a value");
  }
  void bind_real(sqlite3_stmt* s, int index, double value) {
    const int rc = std::isnan(value) ? sqlite3_bind_null(s, index) : sqlite3_bind_double(s, index, value);
    if (rc != SQLITE_OK) fail(rc, "binding a value");
  }
  // Parameters ?1 to ?9.
  void bind_key(sqlite3_stmt* s, const CacheKey& key) {
    bind_text(s, 1, key.device);
    bind_text(s, 2, key.backend);
    bind_text(s, 3, key.kernel);
    bind_text(s, 4, key.kernel_hash);
    bind_int(s, 5, key.m);
    bind_int(s, 6, key.n);
    bind_int(s, 7, key.k);
    bind_text(s, 8, key.precision);
    bind_text(s, 9, key.layout);
  }

  static std::string column_text(sqlite3_stmt* s, int column) {
    const auto* text = sqlite3_column_text(s, column);
    return text != nullptr ? std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(sqlite3_column_bytes(s, column)))
                           : std::string();
  }
  static double column_real(sqlite3_stmt* s, int column) {
    return sqlite3_column_type(s, column) == SQLITE_NULL ? std::numeric_limits<double>::quiet_NaN()
                                                         : sqlite3_column_double(s, column);
  }

  // A row of `result_columns`, starting at column 0. The table keeps times in seconds (time_s),
  // as it always has, so that existing files read on.
  ConfigResult read_result(sqlite3_stmt* s) const {
    ConfigResult r;
    r.from_cache = true;
    const std::string config = column_text(s, 0);
    try {
      r.config = nlohmann::json::parse(config).get<Config>();
    } catch (const nlohmann::json::exception&) {
      throw CacheError(path + " is corrupt (a result with the configuration \"" + config + "\")");
    }
    const std::string status = column_text(s, 1);
    try {
      r.status = parse_status(status);
    } catch (const std::invalid_argument&) {
      throw CacheError(path + " is corrupt (a result with the status \"" + status + "\")");
    }
    r.time_s = column_real(s, 2);
    r.gflops = column_real(s, 3);
    r.max_rel_error = column_real(s, 4);
    r.reason = column_text(s, 5);
    r.reference_name = column_text(s, 6);
    r.reference_gflops = column_real(s, 7);
    r.recorded_at = column_text(s, 8);
    return r;
  }
};

std::string ResultsCache::default_path() {
  // XDG base directories: a relative XDG_CACHE_HOME is invalid and ignored.
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/gemmlab/results.sqlite";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/gemmlab/results.sqlite";
  throw CacheError("neither XDG_CACHE_HOME nor HOME is set, so there is no default results cache; choose a file with --cache");
}

ResultsCache::ResultsCache(const std::string& path) : impl_(std::make_unique<Impl>()) {
  namespace fs = std::filesystem;
  Impl& c = *impl_;
  c.path = path;
  if (path.empty()) throw CacheError("the results cache path is empty");
  std::error_code error;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, error)) {
    fs::create_directories(parent, error);
    if (error) throw CacheError(path + ": cannot create the directory " + parent.string() + " (" + error.message() + ")");
  }
  if (fs::is_directory(path, error)) throw CacheError(path + " is a directory, not a results cache file");
  refuse_non_sqlite(path);

  const int rc = sqlite3_open_v2(path.c_str(), &c.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) c.fail(rc, "opening it");
  sqlite3_busy_timeout(c.db, busy_timeout_ms);
  // SQLite silently opens a file it may not write read-only.
  if (sqlite3_db_readonly(c.db, "main") == 1)
    throw CacheError(path + ": cannot write the results cache there (no write permission)");

  // Everything up to require_ours() only reads, so a file that fails the checks is left as it was.
  Contents contents = c.inspect();
  if (contents.empty()) {
    c.initialise();
    contents = c.inspect();
  }
  c.require_ours(contents);
  if (std::string check = c.retry_while_busy([&] { return c.query_text("PRAGMA quick_check"); }); check != "ok") {
    // The report is a list of damaged pages, one per line: kept to one line and a few of them.
    std::replace(check.begin(), check.end(), '\n', ' ');
    if (check.size() > 160) check = check.substr(0, 160) + "...";
    throw CacheError(path + " is corrupt (" + check + "); gemmlab will not modify it; move it away or choose "
                     "another file with --cache");
  }

  // WAL: readers and the writer do not block each other, and a commit is one append to the log.
  // synchronous=NORMAL in WAL mode: a committed transaction is in the operating system's hands
  // when COMMIT returns, so it survives a kill -9 of this process; only a power loss or kernel
  // crash before the next checkpoint could lose the last few results (never corrupt the file).
  if (c.retry_while_busy([&] { return c.query_text("PRAGMA journal_mode = WAL"); }) != "wal")
    throw CacheError(path + ": cannot switch the results cache to WAL mode (is it on a network file system?)");
  c.exec("PRAGMA synchronous = NORMAL", "configuring it");

  c.insert = c.prepare(std::string("INSERT OR REPLACE INTO results (device, backend, kernel, kernel_hash, m, n, k, "
                                   "precision, layout, ") + result_columns +
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)");
  c.select_key = c.prepare(std::string("SELECT ") + result_columns + " FROM results WHERE " + key_condition +
                           " ORDER BY rowid");
  c.select_one = c.prepare(std::string("SELECT ") + result_columns + " FROM results WHERE " + key_condition +
                           " AND config = ?10");
  // Results columns first, so that read_result() reads them from column 0.
  c.select_shapes = c.prepare(std::string("SELECT ") + result_columns +
                              ", m, n, k, layout FROM results WHERE device = ?1 AND backend = ?2 AND kernel = ?3 AND "
                              "kernel_hash = ?4 AND precision = ?5 ORDER BY rowid");
  c.select_groups = c.prepare(
      "SELECT device, backend, kernel, kernel_hash, m, n, k, precision, layout, COUNT(*) FROM results "
      "GROUP BY device, backend, kernel, kernel_hash, m, n, k, precision, layout "
      "ORDER BY backend, kernel, m, n, k, precision, device, kernel_hash, layout");
}

ResultsCache::~ResultsCache() = default;
ResultsCache::ResultsCache(ResultsCache&&) noexcept = default;
ResultsCache& ResultsCache::operator=(ResultsCache&&) noexcept = default;

const std::string& ResultsCache::path() const { return impl_->path; }

std::vector<ConfigResult> ResultsCache::load(const CacheKey& key) const {
  sqlite3_stmt* s = impl_->select_key.get();
  const ResetOnExit reset{s};
  impl_->bind_key(s, key);
  std::vector<ConfigResult> results;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) results.push_back(impl_->read_result(s));
  if (rc != SQLITE_DONE) impl_->fail(rc, "reading it");
  return results;
}

std::optional<ConfigResult> ResultsCache::find(const CacheKey& key, const Config& config) const {
  sqlite3_stmt* s = impl_->select_one.get();
  const ResetOnExit reset{s};
  impl_->bind_key(s, key);
  impl_->bind_text(s, 10, config_text(config));
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) impl_->fail(rc, "reading it");
  return impl_->read_result(s);
}

std::vector<ResultsCache::Filed> ResultsCache::load_all_shapes(const CacheKey& key) const {
  Impl& c = *impl_;
  sqlite3_stmt* s = c.select_shapes.get();
  const ResetOnExit reset{s};
  c.bind_text(s, 1, key.device);
  c.bind_text(s, 2, key.backend);
  c.bind_text(s, 3, key.kernel);
  c.bind_text(s, 4, key.kernel_hash);
  c.bind_text(s, 5, key.precision);
  std::vector<Filed> results;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    Filed f{.key = key, .result = c.read_result(s)};
    f.key.m = sqlite3_column_int64(s, 9);
    f.key.n = sqlite3_column_int64(s, 10);
    f.key.k = sqlite3_column_int64(s, 11);
    f.key.layout = Impl::column_text(s, 12);
    results.push_back(std::move(f));
  }
  if (rc != SQLITE_DONE) c.fail(rc, "reading it");
  return results;
}

void ResultsCache::store(const CacheKey& key, const ConfigResult& result) {
  Impl& c = *impl_;
  sqlite3_stmt* s = c.insert.get();
  auto insert = [&] {
    const ResetOnExit reset{s};  // reset before COMMIT
    c.bind_key(s, key);
    c.bind_text(s, 10, config_text(result.config));
    c.bind_text(s, 11, std::string(to_string(result.status)));
    c.bind_real(s, 12, result.time_s);
    c.bind_real(s, 13, result.gflops);
    c.bind_real(s, 14, result.max_rel_error);
    c.bind_text(s, 15, result.reason);
    c.bind_text(s, 16, result.reference_name);
    c.bind_real(s, 17, result.reference_gflops);
    c.bind_text(s, 18, result.recorded_at.empty() ? utc_timestamp() : result.recorded_at);
    const int rc = sqlite3_step(s);
    if (rc != SQLITE_DONE) c.fail(rc, "storing a result");
  };
  c.begin_immediate("storing a result");
  try {
    insert();
    c.exec("COMMIT", "storing a result");
  } catch (...) {
    c.rollback();
    throw;
  }
}

std::vector<ResultsCache::Group> ResultsCache::groups() const {
  sqlite3_stmt* s = impl_->select_groups.get();
  const ResetOnExit reset{s};
  std::vector<Group> groups;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    Group g;
    g.key.device = Impl::column_text(s, 0);
    g.key.backend = Impl::column_text(s, 1);
    g.key.kernel = Impl::column_text(s, 2);
    g.key.kernel_hash = Impl::column_text(s, 3);
    g.key.m = sqlite3_column_int64(s, 4);
    g.key.n = sqlite3_column_int64(s, 5);
    g.key.k = sqlite3_column_int64(s, 6);
    g.key.precision = Impl::column_text(s, 7);
    g.key.layout = Impl::column_text(s, 8);
    g.results = static_cast<std::size_t>(sqlite3_column_int64(s, 9));
    groups.push_back(std::move(g));
  }
  if (rc != SQLITE_DONE) impl_->fail(rc, "reading it");
  return groups;
}

}  // namespace gemmlab
