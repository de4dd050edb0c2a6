// Recorded search spaces: tuning results in Kernel Tuner's cache-file layout (JSON, plain or
// gzip-compressed): top-level device_name, kernel_name, problem_size, tune_params_keys (the
// parameter order), tune_params (each parameter's values), objective, and cache: a map from the
// comma-joined parameter values to a record with the parameters, "time" (ms) and more.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "gemmlab/space.hpp"

namespace gemmlab {

// A field of the file beyond those gemmlab interprets: a number or a string.
using RecordValue = std::variant<double, std::string>;

struct RecordEntry {
  Config config;
  bool ok = false;       // time is a finite number
  double time_ms = 0;    // when ok
  std::string failure;   // when not ok: what the file says instead of a time
  // The entry's other number and string fields ("GFLOP/s", ...), so that they are written back;
  // fields of other types (Kernel Tuner's "times" list) are not kept.
  std::map<std::string, RecordValue> extra;
};

struct Record {
  std::string device_name, kernel_name, objective = "time";
  std::vector<std::int64_t> problem_size;
  std::vector<Parameter> parameters;  // tune_params_keys order
  std::vector<RecordEntry> entries;
  std::map<std::string, RecordValue> extra;  // other top-level number and string fields

  // The fastest successful entry; throws std::runtime_error when none succeeded.
  const RecordEntry& best() const;
};

// Reads a cache file (gzip or plain JSON). Throws std::runtime_error naming the file and what is
// wrong: unreadable, not JSON, a missing key, a non-integer parameter value, an entry whose
// parameters disagree with its key.
Record load_record(const std::string& path);
// The same from the file's (decompressed) text; `name` is used in the error messages.
Record parse_record(const std::string& text, const std::string& name);

// Writes a record in the same layout (plain JSON; gzip when the path ends in ".gz").
void save_record(const Record& record, const std::string& path);
// The JSON text save_record writes.
std::string format_record(const Record& record);

}  // namespace gemmlab
