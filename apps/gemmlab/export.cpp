// gemmlab export: the tuner's results cache for other tools. CSV holds every result of every
// selected group (one row each); JSON is a Kernel Tuner cache file, which describes one kernel on
// one problem on one device, so it takes exactly one group (and `gemmlab replay` reads it).
#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "cli.hpp"
#include "gemmlab/record.hpp"
#include "gemmlab/results_cache.hpp"

namespace gemmlab::cli {

namespace {

struct Options {
  std::string cache, format, output;
  // Filters; empty (or an option not given) selects everything.
  std::string backend, kernel, precision, device, kernel_hash, layout;
  std::int64_t m = 0, n = 0, k = 0;
  CLI::Option *m_option = nullptr, *n_option = nullptr, *k_option = nullptr;
};

bool given(const CLI::Option* option) { return option->count() > 0; }

bool any_filter(const Options& o) {
  return !o.backend.empty() || !o.kernel.empty() || !o.precision.empty() || !o.device.empty() ||
         !o.kernel_hash.empty() || !o.layout.empty() || given(o.m_option) || given(o.n_option) || given(o.k_option);
}

// --device matches a part of the fingerprint (it is long), --kernel-hash a prefix of the hash.
bool selected(const CacheKey& key, const Options& o) {
  return (o.backend.empty() || key.backend == o.backend) && (o.kernel.empty() || key.kernel == o.kernel) &&
         (o.precision.empty() || key.precision == o.precision) &&
         (o.device.empty() || key.device.find(o.device) != std::string::npos) &&
         (o.kernel_hash.empty() || key.kernel_hash.starts_with(o.kernel_hash)) &&
         (o.layout.empty() || key.layout == o.layout) && (!given(o.m_option) || key.m == o.m) &&
         (!given(o.n_option) || key.n == o.n) && (!given(o.k_option) || key.k == o.k);
}

std::string shape(const CacheKey& key) { return fmt::format("{}x{}x{}", key.m, key.n, key.k); }

std::string describe(const ResultsCache::Group& g) {
  return fmt::format("{} {} {} {} on {} (kernel hash {}, {}): {} result{}", g.key.backend, g.key.kernel, shape(g.key),
                     g.key.precision, g.key.device, g.key.kernel_hash, g.key.layout, g.results, g.results == 1 ? "" : "s");
}

// The options that tell the matching groups apart.
std::string distinguishing_options(const std::vector<ResultsCache::Group>& groups) {
  std::vector<std::string> options;
  auto differ = [&](auto field) {
    for (const auto& g : groups)
      if (field(g.key) != field(groups.front().key)) return true;
    return false;
  };
  if (differ([](const CacheKey& k) { return k.backend; })) options.push_back("--backend");
  if (differ([](const CacheKey& k) { return k.kernel; })) options.push_back("--kernel");
  if (differ([](const CacheKey& k) { return shape(k); })) options.push_back("--m/--n/--k");
  if (differ([](const CacheKey& k) { return k.precision; })) options.push_back("--precision");
  if (differ([](const CacheKey& k) { return k.device; })) options.push_back("--device");
  if (differ([](const CacheKey& k) { return k.kernel_hash; })) options.push_back("--kernel-hash");
  if (differ([](const CacheKey& k) { return k.layout; })) options.push_back("--layout");
  std::string text;
  for (const auto& option : options) text += (text.empty() ? "" : ", ") + option;
  return text;
}

// A number for the CSV ("inf" and "nan" as fmt writes them), empty when `present` is false.
std::string number(double value, bool present = true) { return present ? fmt::format("{}", value) : ""; }

std::string params_text(const Config& config) {
  std::string text;
  for (const auto& [name, value] : config) text += (text.empty() ? "" : ";") + name + "=" + std::to_string(value);
  return text;
}

// RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

void write_csv(std::ostream& out, const ResultsCache& cache, const std::vector<ResultsCache::Group>& groups) {
  out << "device,backend,kernel,kernel_hash,m,n,k,precision,layout,params,status,time_ms,gflops,"
         "ratio_to_reference,max_rel_error,reason,recorded_at\n";
  for (const auto& g : groups)
    for (const ConfigResult& r : cache.load(g.key)) {
      const bool has_ratio = r.timed() && r.reference_gflops > 0;
      const std::vector<std::string> fields = {
          g.key.device, g.key.backend, g.key.kernel, g.key.kernel_hash, std::to_string(g.key.m),
          std::to_string(g.key.n), std::to_string(g.key.k), g.key.precision, g.key.layout, params_text(r.config),
          std::string(to_string(r.status)), number(r.time_s * 1e3, r.timed()), number(r.gflops, r.timed()),
          number(has_ratio ? r.gflops / r.reference_gflops : 0, has_ratio),
          number(r.max_rel_error, r.status != Status::failed), r.reason, r.recorded_at};
      std::string line;
      for (const auto& f : fields) line += (line.empty() ? "" : ",") + csv_field(f);
      out << line << '\n';
    }
}

// One group as a Kernel Tuner cache file: "time" in ms for ok results and for aborted ones (their
// single timed run: a real, slow time, which is also what the strategies saw), Kernel Tuner's
// "RuntimeFailedConfig" for invalid and failed ones; gemmlab's own status, reason, GFLOP/s and
// error ride along as further fields of each entry.
Record to_record(const ResultsCache::Group& g, const std::vector<ConfigResult>& results, const std::string& cache) {
  Record record;
  record.device_name = g.key.device;
  record.kernel_name = g.key.kernel;
  record.problem_size = {g.key.m, g.key.n, g.key.k};
  record.extra = {{"backend", g.key.backend},
                  {"kernel_hash", g.key.kernel_hash},
                  {"precision", g.key.precision},
                  {"layout", g.key.layout}};
  std::map<std::string, std::set<ParamValue>> values;
  std::set<std::string> references;
  for (const auto& r : results) {
    for (const auto& [name, value] : r.config) values[name].insert(value);
    if (!r.reference_name.empty()) references.insert(r.reference_name);
  }
  for (const auto& [name, seen] : values) record.parameters.push_back({name, {seen.begin(), seen.end()}, ""});
  std::string reference_names;
  for (const auto& name : references) reference_names += (reference_names.empty() ? "" : ",") + name;
  if (!reference_names.empty()) record.extra["reference"] = reference_names;

  for (const auto& r : results) {
    if (r.config.size() != values.size())
      throw UsageError(cache + ": the results of " + g.key.kernel + " " + shape(g.key) +
                       " do not all have the same parameters; export them as CSV");
    RecordEntry e;
    e.config = r.config;
    e.ok = r.timed();
    if (e.ok) e.time_ms = r.time_s * 1e3;
    else e.failure = "RuntimeFailedConfig";
    e.extra["status"] = std::string(to_string(r.status));
    if (!r.reason.empty()) e.extra["reason"] = r.reason;
    if (r.timed()) e.extra["GFLOP/s"] = r.gflops;
    if (r.timed() && r.reference_gflops > 0) e.extra["ratio_to_reference"] = r.gflops / r.reference_gflops;
    if (r.status != Status::failed && std::isfinite(r.max_rel_error)) e.extra["max_rel_error"] = r.max_rel_error;
    if (!r.recorded_at.empty()) e.extra["recorded_at"] = r.recorded_at;
    record.entries.push_back(std::move(e));
  }
  return record;
}

}  // namespace

void add_export_command(CLI::App& app, Outcome&) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("export", "Write the tuner's results cache as CSV or as a Kernel Tuner cache file");
  cmd->add_option("--cache", o->cache, "Results cache (default: $XDG_CACHE_HOME/gemmlab/results.sqlite)");
  cmd->add_option("--format", o->format, "csv (every selected result) or json (Kernel Tuner cache file, one group)")
      ->required()
      ->check(CLI::IsMember({"csv", "json"}));
  cmd->add_option("--output", o->output, "Output file (default: stdout; json to a name ending in .gz is gzipped)");
  cmd->add_option("--backend", o->backend, "Only this backend");
  cmd->add_option("--kernel", o->kernel, "Only this kernel");
  o->m_option = cmd->add_option("--m", o->m, "Only problems with this M");
  o->n_option = cmd->add_option("--n", o->n, "Only problems with this N");
  o->k_option = cmd->add_option("--k", o->k, "Only problems with this K");
  cmd->add_option("--precision", o->precision, "Only this precision");
  cmd->add_option("--device", o->device, "Only devices whose fingerprint contains this text");
  cmd->add_option("--kernel-hash", o->kernel_hash, "Only this version of the kernel's source (hash or its prefix)");
  cmd->add_option("--layout", o->layout, "Only this layout (as the CSV export writes it)");

  cmd->callback([o] {
    std::string path = o->cache;
    std::optional<ResultsCache> cache;
    std::vector<ResultsCache::Group> groups;
    try {
      if (path.empty()) path = ResultsCache::default_path();
      // Exporting never creates a cache: a mistyped name is an error, not an empty export.
      std::error_code error;
      if (!std::filesystem::exists(path, error)) throw UsageError("the results cache " + path + " does not exist");
      cache.emplace(path);
      for (auto& g : cache->groups())
        if (selected(g.key, *o)) groups.push_back(std::move(g));
    } catch (const CacheError& e) {
      throw UsageError(e.what());
    }
    if (groups.empty() && (o->format == "json" || any_filter(*o)))
      throw UsageError("the results cache " + path + " has no results " +
                       (any_filter(*o) ? "for that selection" : "at all") +
                       " (`gemmlab export --format csv --cache FILE` lists everything it holds)");

    if (o->format == "csv") {
      std::ofstream file;
      if (!o->output.empty()) {
        file.open(o->output, std::ios::binary);
        if (!file) throw UsageError(o->output + ": cannot create");
      }
      std::ostream& out = o->output.empty() ? std::cout : file;
      try {
        write_csv(out, *cache, groups);
      } catch (const CacheError& e) {
        throw UsageError(e.what());
      }
      out.flush();
      if (!out) throw std::runtime_error((o->output.empty() ? std::string("stdout") : o->output) + ": write failed");
      return;
    }

    if (groups.size() > 1) {
      std::string list;
      for (const auto& g : groups) list += "\n  " + describe(g);
      throw UsageError(fmt::format("the selection matches {} groups of results in {}; a JSON export holds one "
                                   "(one kernel, problem and device):{}\nChoose one with {}",
                                   groups.size(), path, list, distinguishing_options(groups)));
    }
    std::vector<ConfigResult> results;
    try {
      results = cache->load(groups.front().key);
    } catch (const CacheError& e) {
      throw UsageError(e.what());
    }
    const Record record = to_record(groups.front(), results, path);
    if (o->output.empty()) {
      std::cout << format_record(record) << std::endl;
      return;
    }
    try {
      save_record(record, o->output);
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
  });
}

}  // namespace gemmlab::cli
