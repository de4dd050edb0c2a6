// The tuner's results cache: every configuration ever evaluated, kept in one SQLite file per user
// so that a tuning run can reuse what an earlier run (or a concurrent one) already measured.
//
// A result is filed under a CacheKey (device, backend, kernel and the hash of its source, problem
// shape, precision, layout) and its configuration. Each store() is one committed transaction, so a
// result survives a crash of the tuner the moment store() returns, and two tuning runs may share
// the file (WAL mode, waits on each other's locks). A file that is not a gemmlab cache is never
// modified: opening it throws CacheError.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemmlab/result.hpp"
#include "gemmlab/space.hpp"

namespace gemmlab {

// Thrown for a cache file that cannot be used: not a database, corrupt, another program's
// database, a newer schema, unwritable. The message names the file and says what is wrong.
class CacheError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a result is a result of. Two results with equal keys and configurations are interchangeable.
struct CacheKey {
  std::string device;        // device fingerprint (opaque string, e.g. a hex hash + readable name)
  std::string backend;       // "cpu"
  std::string kernel;        // "05_packed_avx512"
  std::string kernel_hash;   // hash of the kernel's source (opaque)
  std::int64_t m = 0, n = 0, k = 0;
  std::string precision;     // "fp32"
  std::string layout;        // e.g. "row-major lda=K ldb=N ldc=N alpha=1 beta=0"

  auto operator<=>(const CacheKey&) const = default;
};

// Now as the cache records it: UTC ISO-8601 to the second ("2024-05-01T12:34:56Z").
std::string utc_timestamp();

// One open cache file. Not for concurrent use by several threads: give each thread (and each
// process — never use one across fork()) its own ResultsCache on the same path.
class ResultsCache {
 public:
  // $XDG_CACHE_HOME/gemmlab/results.sqlite, else $HOME/.cache/gemmlab/results.sqlite (the
  // directories are created by the constructor, not here). Throws CacheError when neither
  // variable is set.
  static std::string default_path();

  // Opens or creates the database (creating parent directories). WAL mode, a busy timeout (so two
  // tuning runs can share a file), schema checked via PRAGMA application_id (gemmlab's magic) and
  // user_version. An empty file (0 bytes, or an SQLite database without tables and with
  // application_id 0) is initialised; anything else that is not a gemmlab cache of a known schema
  // throws CacheError and the file is left untouched.
  explicit ResultsCache(const std::string& path);
  ~ResultsCache();
  // A moved-from cache may only be destroyed or assigned to.
  ResultsCache(ResultsCache&&) noexcept;
  ResultsCache& operator=(ResultsCache&&) noexcept;
  ResultsCache(const ResultsCache&) = delete;
  ResultsCache& operator=(const ResultsCache&) = delete;

  const std::string& path() const;

  // All results stored under `key`, in the order they were stored (a replaced result counts as
  // stored when it was replaced). Each is marked from_cache; watts and ratio_to_reference are not
  // kept.
  std::vector<ConfigResult> load(const CacheKey& key) const;
  std::optional<ConfigResult> find(const CacheKey& key, const Config& config) const;
  // Every result of `key`'s device, backend, kernel, kernel hash and precision, whatever the shape
  // and layout it was measured on (key.m, n, k and layout are not used), with the key it is filed
  // under, in the order they were stored: for a shape that was not tuned itself, the tuned shapes
  // near it.
  struct Filed {
    CacheKey key;
    ConfigResult result;
  };
  std::vector<Filed> load_all_shapes(const CacheKey& key) const;
  // One transaction per result, replacing any result under the same key and configuration: once
  // store() returns, the result survives a kill -9 of the process. recorded_at is set to now when
  // empty.
  void store(const CacheKey& key, const ConfigResult& result);

  // The distinct keys in the file with their result counts (for export / listing), ordered by
  // backend, kernel, m, n, k, precision, device, kernel_hash, layout.
  struct Group {
    CacheKey key;
    std::size_t results = 0;
  };
  std::vector<Group> groups() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gemmlab
