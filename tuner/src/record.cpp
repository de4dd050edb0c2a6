#include "gemmlab/record.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gemmlab {

namespace {
std::string read_maybe_gzip(const std::string& path) {
  // zlib reads gzip and passes any other file through unchanged.
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error(path + ": cannot open");
  std::string text;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(f, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<std::size_t>(n));
  int error = 0;
  const char* message = gzerror(f, &error);
  const std::string why = error != Z_OK && error != Z_STREAM_END ? message : "";
  gzclose(f);
  if (n < 0 || !why.empty()) throw std::runtime_error(path + ": cannot read (" + why + ")");
  return text;
}

// Python's json module writes non-finite floats as the bare tokens NaN, Infinity and -Infinity,
// which JSON does not have; outside strings they are turned into strings here, so that such a
// time reads as a failure instead of making the whole file unreadable.
std::string quote_non_finite(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const char* token : {"-Infinity", "Infinity", "NaN"}) {
      const std::size_t n = std::char_traits<char>::length(token);
      if (text.compare(i, n, token) == 0) {
        out += '"';
        out += token;
        out += '"';
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

const nlohmann::json& required(const nlohmann::json& j, const char* key, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) throw std::runtime_error(path + ": no \"" + key + "\" key");
  return j.at(key);
}

ParamValue integer_value(const nlohmann::json& v, const std::string& name, const std::string& path) {
  constexpr double limit = 0x1p63;  // int64 holds [-2^63, 2^63)
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<ParamValue>::max())) return v.get<ParamValue>();
  } else if (v.is_number_integer()) {
    return v.get<ParamValue>();
  } else if (v.is_number_float()) {
    const double x = v.get<double>();
    if (std::floor(x) == x && x >= -limit && x < limit) return static_cast<ParamValue>(x);
  }
  throw std::runtime_error(path + ": parameter " + name + " has the value " + v.dump() +
                           "; only integer parameters are supported");
}

// The number and string fields of `j` not named in `known`.
std::map<std::string, RecordValue> extra_fields(const nlohmann::json& j, const std::vector<std::string>& known) {
  std::map<std::string, RecordValue> extra;
  for (const auto& [name, value] : j.items()) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    if (value.is_number()) extra[name] = value.get<double>();
    else if (value.is_string()) extra[name] = value.get<std::string>();
  }
  return extra;
}

void put_extra_fields(nlohmann::json& j, const std::map<std::string, RecordValue>& extra) {
  for (const auto& field : extra) std::visit([&](const auto& v) { j[field.first] = v; }, field.second);
}
}  // namespace

namespace {
Record record_from_json(const nlohmann::json& j, const std::string& path);
}  // namespace

const RecordEntry& Record::best() const {
  const RecordEntry* best = nullptr;
  for (const auto& e : entries)
    if (e.ok && (best == nullptr || e.time_ms < best->time_ms)) best = &e;
  if (best == nullptr) throw std::runtime_error("the record has no successful configuration");
  return *best;
}

Record load_record(const std::string& path) { return parse_record(read_maybe_gzip(path), path); }

Record parse_record(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(quote_non_finite(text));
  } catch (const nlohmann::json::exception& e) {  // syntax, or a number beyond double (1e400)
    throw std::runtime_error(path + ": not a JSON document (" + e.what() + ")");
  }
  try {
    return record_from_json(j, path);
  } catch (const nlohmann::json::exception& e) {  // a value of the wrong JSON type
    throw std::runtime_error(path + ": unexpected content (" + e.what() + ")");
  }
}

namespace {
Record record_from_json(const nlohmann::json& j, const std::string& path) {
  Record r;
  r.device_name = j.value("device_name", "");
  r.kernel_name = j.value("kernel_name", "");
  r.objective = j.value("objective", "time");
  if (r.objective != "time") throw std::runtime_error(path + ": objective \"" + r.objective + "\" is not supported (time)");
  if (j.contains("problem_size"))
    for (const auto& v : j.at("problem_size")) r.problem_size.push_back(integer_value(v, "problem_size", path));
  const auto& keys = required(j, "tune_params_keys", path);
  const auto& values = required(j, "tune_params", path);
  for (const auto& key : keys) {
    const std::string name = key.get<std::string>();
    Parameter p{name, {}, ""};
    for (const auto& v : required(values, name.c_str(), path)) p.values.push_back(integer_value(v, name, path));
    std::sort(p.values.begin(), p.values.end());
    r.parameters.push_back(std::move(p));
  }
  static const std::vector<std::string> top_level = {"device_name", "kernel_name",      "problem_size", "objective",
                                                     "tune_params", "tune_params_keys", "cache"};
  r.extra = extra_fields(j, top_level);
  std::vector<std::string> entry_fields = {"time"};
  for (const auto& p : r.parameters) entry_fields.push_back(p.name);
  for (const auto& [key, entry] : required(j, "cache", path).items()) {
    RecordEntry e;
    std::string expected_key;
    for (const auto& p : r.parameters) {
      const ParamValue v = integer_value(required(entry, p.name.c_str(), path), p.name, path);
      e.config[p.name] = v;
      expected_key += (expected_key.empty() ? "" : ",") + std::to_string(v);
    }
    if (key != expected_key)
      throw std::runtime_error(path + ": entry \"" + key + "\" holds the parameters " + expected_key);
    const auto& time = required(entry, "time", path);
    if (time.is_number() && std::isfinite(time.get<double>())) {
      if (time.get<double>() < 0)
        throw std::runtime_error(path + ": entry \"" + key + "\" has the time " + time.dump() + " (a duration is not negative)");
      e.ok = true;
      e.time_ms = time.get<double>();
    } else {
      e.failure = time.is_string() ? time.get<std::string>() : time.dump();
    }
    e.extra = extra_fields(entry, entry_fields);
    r.entries.push_back(std::move(e));
  }
  return r;
}
}  // namespace

std::string format_record(const Record& record) {
  nlohmann::json j;
  put_extra_fields(j, record.extra);  // first, so that a clash never replaces a field below
  j["device_name"] = record.device_name;
  j["kernel_name"] = record.kernel_name;
  j["problem_size"] = record.problem_size;
  j["objective"] = record.objective;
  j["tune_params_keys"] = nlohmann::json::array();
  j["tune_params"] = nlohmann::json::object();
  for (const auto& p : record.parameters) {
    j["tune_params_keys"].push_back(p.name);
    j["tune_params"][p.name] = p.values;
  }
  j["cache"] = nlohmann::json::object();
  for (const auto& e : record.entries) {
    std::string key;
    nlohmann::json entry;
    put_extra_fields(entry, e.extra);
    for (const auto& p : record.parameters) {
      key += (key.empty() ? "" : ",") + std::to_string(e.config.at(p.name));
      entry[p.name] = e.config.at(p.name);
    }
    if (e.ok) entry["time"] = e.time_ms;
    else entry["time"] = e.failure.empty() ? std::string("RuntimeFailedConfig") : e.failure;
    j["cache"][key] = entry;
  }
  return j.dump(1);
}

void save_record(const Record& record, const std::string& path) {
  const std::string text = format_record(record);
  const bool gzip = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  gzFile f = gzopen(path.c_str(), gzip ? "wb9" : "wbT");  // "T": write without compression
  if (f == nullptr) throw std::runtime_error(path + ": cannot create");
  const int written = gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  if (gzclose(f) != Z_OK || written != static_cast<int>(text.size()))
    throw std::runtime_error(path + ": write failed");
}

}  // namespace gemmlab
