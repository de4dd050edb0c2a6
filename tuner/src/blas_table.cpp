#include "gemmlab/blas_table.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

namespace gemmlab {

int size_bucket(std::int64_t x) {
  return x <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<std::uint64_t>(x))) - 1;
}

ShapeClass shape_class(const Problem& p) {
  return {.precision = p.precision, .transposes = p.transposes(), .m_bucket = size_bucket(p.m),
          .n_bucket = size_bucket(p.n), .k_bucket = size_bucket(p.k)};
}

std::string to_string(const ShapeClass& c) {
  auto range = [](int b) {
    return b == 0 ? std::string("0-1") : std::to_string(1ll << b) + "-" + std::to_string((1ll << (b + 1)) - 1);
  };
  return std::string(to_string(c.precision)) + " " + c.transposes + " M " + range(c.m_bucket) + " N " +
         range(c.n_bucket) + " K " + range(c.k_bucket);
}

const BlasTableEntry* BlasTable::find(const Problem& p, int threads) const {
  const ShapeClass c = shape_class(p);
  const BlasTableEntry* found = nullptr;
  for (const BlasTableEntry& e : entries)
    if (e.shape == c && e.library_threads <= threads && (found == nullptr || e.library_threads > found->library_threads))
      found = &e;
  return found;
}

std::optional<int> blas_table_cores(const BlasTable& table, const DeviceInfo& device, int machine_cores) {
  DeviceInfo seen = device;
  for (int cores = device.cores; cores <= std::max(device.cores, machine_cores); ++cores) {
    seen.cores = cores;
    if (fingerprint(seen) == table.device) return cores;
  }
  return std::nullopt;
}

void BlasTable::put(BlasTableEntry entry) {
  for (BlasTableEntry& e : entries)
    if (e.shape == entry.shape && e.library_threads == entry.library_threads) {
      e = std::move(entry);
      return;
    }
  entries.push_back(std::move(entry));
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return std::tie(a.shape, a.library_threads) < std::tie(b.shape, b.library_threads);
  });
}

void to_json(nlohmann::json& j, const BlasTable& table) {
  nlohmann::json entries = nlohmann::json::array();
  for (const BlasTableEntry& e : table.entries)
    entries.push_back({{"precision", to_string(e.shape.precision)},
                       {"transposes", e.shape.transposes},
                       {"m_bucket", e.shape.m_bucket},
                       {"n_bucket", e.shape.n_bucket},
                       {"k_bucket", e.shape.k_bucket},
                       {"library_threads", e.library_threads},
                       {"class", to_string(e.shape)},
                       {"kernel", e.kernel},
                       {"params", e.config},
                       {"source", e.source}});
  j = {{"format", blas_table_format},
       {"device", table.device},
       {"device_name", table.device_name},
       {"created", table.created},
       {"entries", entries}};
}

namespace {
template <class T>
T field(const nlohmann::json& j, const char* name, const std::string& where) {
  if (!j.is_object() || !j.contains(name)) throw std::invalid_argument(where + ": no \"" + name + "\"");
  try {
    return j.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(where + ": \"" + name + "\" has the wrong type");
  }
}
}  // namespace

BlasTable blas_table_from_json(const nlohmann::json& j) {
  const auto format = field<std::string>(j, "format", "the table");
  if (format != blas_table_format)
    throw std::invalid_argument("format \"" + format + "\" is not " + blas_table_format +
                                " (a table of another gemmlab version: rebuild it with gemmlab blas-table)");
  BlasTable t;
  t.device = field<std::string>(j, "device", "the table");
  t.device_name = field<std::string>(j, "device_name", "the table");
  t.created = field<std::string>(j, "created", "the table");
  const auto entries = field<nlohmann::json>(j, "entries", "the table");
  if (!entries.is_array()) throw std::invalid_argument("the table: \"entries\" is not a list");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const nlohmann::json& e = entries[i];
    const std::string where = "entry " + std::to_string(i + 1);
    BlasTableEntry entry;
    entry.shape.precision = parse_precision(field<std::string>(e, "precision", where));
    entry.shape.transposes = field<std::string>(e, "transposes", where);
    const std::string& t_ = entry.shape.transposes;
    if (t_.size() != 2 || (t_[0] != 'N' && t_[0] != 'T') || (t_[1] != 'N' && t_[1] != 'T'))
      throw std::invalid_argument(where + ": transposes \"" + t_ + "\" is not NN, TN, NT or TT");
    entry.shape.m_bucket = field<int>(e, "m_bucket", where);
    entry.shape.n_bucket = field<int>(e, "n_bucket", where);
    entry.shape.k_bucket = field<int>(e, "k_bucket", where);
    for (int b : {entry.shape.m_bucket, entry.shape.n_bucket, entry.shape.k_bucket})
      if (b < 0 || b > 31) throw std::invalid_argument(where + ": a size bucket outside 0..31");
    entry.library_threads = field<int>(e, "library_threads", where);
    if (entry.library_threads < 1) throw std::invalid_argument(where + ": library_threads below 1");
    entry.kernel = field<std::string>(e, "kernel", where);
    entry.config = field<Config>(e, "params", where);
    entry.source = e.contains("source") && e["source"].is_string() ? e["source"].get<std::string>() : "table";
    t.put(std::move(entry));
  }
  return t;
}

BlasTable read_blas_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the BLAS table " + path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("the BLAS table " + path + " is not JSON: " + e.what());
  }
  try {
    return blas_table_from_json(j);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("the BLAS table " + path + ": " + e.what());
  }
}

void write_blas_table(const BlasTable& table, const std::string& path) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + temporary);
    out << nlohmann::json(table).dump(2) << "\n";
    if (!out.flush()) throw std::runtime_error("cannot write " + temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw std::runtime_error("cannot replace " + path);
  }
}

std::string blas_table_path() {
  if (const char* p = std::getenv("GEMMLAB_BLAS_TABLE"); p != nullptr && *p != '\0') return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/gemmlab/blas-table.json";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return std::string(h) + "/.cache/gemmlab/blas-table.json";
  return "";
}

}  // namespace gemmlab
