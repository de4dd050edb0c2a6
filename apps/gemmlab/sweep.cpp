// gemmlab sweep: GFLOP/s against size for each kernel of a backend — at its tuned configuration
// where the results cache has one for that shape, else at its default — and for the vendor
// reference, with the device's measured ceilings: what `gemmlab report` plots and explains.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>

#include "cli.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/evaluate.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/results_cache.hpp"
#include "gemmlab/tune.hpp"

namespace gemmlab::cli {
namespace {

std::vector<std::int64_t> parse_sizes(const std::string& text) {
  std::vector<std::int64_t> sizes;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || value < 1)
      throw UsageError("--sizes takes positive whole numbers separated by commas, not '" + item + "'");
    sizes.push_back(value);
  }
  if (sizes.empty()) throw UsageError("--sizes is empty");
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<Problem> parse_shapes(const std::string& text, Precision precision) {
  std::vector<Problem> shapes;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    Problem p;
    try {
      p = parse_shape(item);
    } catch (const std::exception& e) {
      throw UsageError("--shapes: " + std::string(e.what()));
    }
    shapes.push_back(Problem::packed(p.m, p.n, p.k, precision));
  }
  return shapes;
}

// The reuse tile of a configuration: the block of C whose operands a kernel stages once per block
// (shared memory, LDS, cache or the systolic array's buffers), by the parameter names the
// curricula use; none for kernels without one (the naive steps, register-only blocking).
std::optional<std::pair<std::int64_t, std::int64_t>> reuse_tile(const Config& c) {
  for (const auto& [m, n] : std::vector<std::pair<std::string, std::string>>{
           {"BM", "BN"}, {"MWG", "NWG"}, {"MC", "NC"}, {"TS", "TS"}, {"TILE", "TILE"}, {"TM", "TN"}})
    if (c.count(m) && c.count(n)) return std::make_pair(c.at(m), c.at(n));
  return std::nullopt;
}

// Bytes a tiled GEMM moves to and from memory: A is read once per column of tiles, B once per row
// of tiles, C written once (and read when beta != 0).
double tiled_bytes(const Problem& p, std::int64_t tile_m, std::int64_t tile_n) {
  const auto element = static_cast<double>(element_size(p.precision));
  const double tiles_m = std::ceil(static_cast<double>(p.m) / static_cast<double>(tile_m));
  const double tiles_n = std::ceil(static_cast<double>(p.n) / static_cast<double>(tile_n));
  const double c_bytes = static_cast<double>(p.m * p.n) * static_cast<double>(output_element_size(p.precision));
  return element * static_cast<double>(p.m * p.k) * tiles_n + element * static_cast<double>(p.k * p.n) * tiles_m +
         c_bytes * (p.beta != 0 ? 2 : 1);
}

// What stops each tile parameter from growing: for each parameter, its next larger allowed value,
// and the constraints that configuration would break. The tuner's choice sits against these.
nlohmann::json growth_limits(const SearchSpace& space, const Config& config) {
  nlohmann::json limits = nlohmann::json::array();
  for (const Parameter& p : space.parameters()) {
    auto here = config.find(p.name);
    if (here == config.end()) continue;
    auto next = std::upper_bound(p.values.begin(), p.values.end(), here->second);
    if (next == p.values.end()) {
      limits.push_back({{"parameter", p.name}, {"value", here->second}, {"limit", "largest allowed value"}});
      continue;
    }
    Config grown = config;
    grown[p.name] = *next;
    nlohmann::json broken = nlohmann::json::array();
    for (const Constraint& c : space.constraints())
      if (!c.holds(grown)) broken.push_back(c.text);
    if (!broken.empty())
      limits.push_back({{"parameter", p.name}, {"value", here->second}, {"next", *next}, {"constraints", broken}});
  }
  return limits;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "";
}

}  // namespace

void add_sweep_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    std::string backend, kernels, sizes = "128,256,512,1024", shapes, precision = "fp32", reference, cache, out;
    int device = 0, threads = 0;
    double max_seconds = 2.0, skip_above = 20.0;
    bool no_cache = false, json = false, no_ceilings = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("sweep", "GFLOP/s against size for each kernel and the vendor reference");
  cmd->add_option("--backend", o->backend, "Backend (see gemmlab devices)")->required();
  cmd->add_option("--device", o->device, "Device index within the backend")->capture_default_str();
  cmd->add_option("--kernels", o->kernels, "Kernels, separated by commas (default: every kernel the device runs)");
  cmd->add_option("--sizes", o->sizes, "Square sizes, separated by commas")->capture_default_str();
  cmd->add_option("--shapes", o->shapes,
                  "Further shapes MxNxK, separated by commas (default: tall-skinny, short-wide and short-K "
                  "shapes at the largest size)");
  cmd->add_option("--precision", o->precision, "Precision (kernels without it are left out, saying so)")
      ->capture_default_str();
  cmd->add_option("--reference", o->reference, "Reference library (default: the backend's first)");
  cmd->add_option("--threads", o->threads, "Threads of the reference and of kernels' `threads` (default: all cores)");
  cmd->add_option("--max-seconds", o->max_seconds, "Time limit of each measurement")->capture_default_str();
  cmd->add_option("--skip-above", o->skip_above,
                  "Leave out a kernel at sizes where one run would take longer than this many seconds, "
                  "predicted from its speed at the previous size")
      ->capture_default_str();
  cmd->add_option("--cache", o->cache, "Results cache the tuned configurations are read from (default: the user's)");
  cmd->add_flag("--no-cache", o->no_cache, "Use every kernel's default configuration");
  cmd->add_flag("--no-ceilings", o->no_ceilings, "Do not measure the device's FMA and bandwidth ceilings");
  cmd->add_option("--out", o->out, "Also write the JSON document to this file");
  cmd->add_flag("--json", o->json, "Print one JSON document");

  cmd->callback([o, &outcome, cmd] {
    Backend& backend = registry().backend(o->backend);
    const Precision precision = parse_precision(o->precision);
    const std::vector<std::int64_t> sizes = parse_sizes(o->sizes);
    std::vector<Problem> problems;
    for (std::int64_t s : sizes) problems.push_back(Problem::packed(s, s, s, precision));
    if (!o->shapes.empty()) {
      for (const Problem& p : parse_shapes(o->shapes, precision)) problems.push_back(p);
    } else if (const std::int64_t s = sizes.back(); s >= 16) {
      for (const auto& [m, n, k] : {std::tuple{s, s / 16, s}, std::tuple{s / 16, s, s}, std::tuple{s, s, s / 16}})
        problems.push_back(Problem::packed(m, n, k, precision));
    }
    if (o->no_cache && !o->cache.empty()) throw UsageError("--cache and --no-cache exclude each other");
    std::optional<ResultsCache> results;
    if (!o->no_cache) {
      try {
        results.emplace(o->cache.empty() ? ResultsCache::default_path() : o->cache);
      } catch (const CacheError& e) {
        throw UsageError(e.what());
      }
    }

    auto device = backend.open(o->device);
    if (!o->no_ceilings) device->measure_ceilings();
    const DeviceInfo& info = device->info();
    const int threads = o->threads > 0 ? o->threads : std::max(1, info.cores);
    const std::string reference_name = o->reference.empty() ? backend.reference_names().front() : o->reference;
    auto reference = backend.make_reference(reference_name, *device);
    reference->set_threads(threads);
    auto truth = cpu::load_cblas("openblas");

    std::vector<const Kernel*> kernels;
    nlohmann::json skipped = nlohmann::json::array();
    std::vector<std::string> wanted;
    if (!o->kernels.empty()) {
      std::istringstream in(o->kernels);
      for (std::string name; std::getline(in, name, ',');) wanted.push_back(name);
    }
    for (const Kernel* k : registry().kernels(o->backend)) {
      if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), k->name()) == wanted.end()) continue;
      if (auto s = k->supported(info); !s.ok)
        skipped.push_back({{"kernel", k->name()}, {"reason", s.reason}});
      else if (!k->supports(precision))
        skipped.push_back({{"kernel", k->name()}, {"reason", "no " + o->precision + " variant"}});
      else
        kernels.push_back(k);
    }
    for (const std::string& name : wanted) registry().kernel(o->backend, name);  // unknown names fail, listed
    if (kernels.empty()) throw UsageError("no kernel of " + o->backend + " runs " + o->precision + " on " + info.name);

    EvaluationOptions eval;
    eval.measure.max_seconds = o->max_seconds;
    nlohmann::json rows = nlohmann::json::array();
    for (const Kernel* kernel : kernels) {
      // The space and default depend on the device and precision only, not on the shape.
      const SearchSpace space = kernel->space(info, precision);
      Config defaults = kernel->default_config(info, precision);
      if (space.find("threads")) defaults["threads"] = threads;
      std::optional<double> last_gflops;
      for (const Problem& p : problems) {
        const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
        if (last_gflops && *last_gflops > 0 && flops / (*last_gflops * 1e9) > o->skip_above) {
          skipped.push_back({{"kernel", kernel->name()}, {"m", p.m}, {"n", p.n}, {"k", p.k},
                             {"reason", fmt::format("one run would take about {:.0f} s at {:.2f} GFLOP/s (--skip-above {})",
                                                    flops / (*last_gflops * 1e9), *last_gflops, o->skip_above)}});
          continue;
        }
        Config config = defaults;
        std::string source = "default";
        if (results) {
          std::optional<CachedResult> best;
          for (const CachedResult& r : results->load(cache_key(info, *kernel, p)))
            if (r.status == Status::ok && (!best || r.gflops > best->gflops)) best = r;
          if (best && space.is_valid(best->config)) {
            config = best->config;
            source = "tuned " + best->recorded_at;
          }
        }
        nlohmann::json row = {{"kernel", kernel->name()}, {"precision", o->precision}, {"m", p.m}, {"n", p.n},
                              {"k", p.k}, {"params", config}, {"config_source", source}};
        try {
          const Evaluation e = evaluate(*device, *kernel, config, p, truth.get(), reference.get(), eval);
          row["valid"] = e.validation.valid;
          row["max_rel_error"] = nlohmann::json(e.validation)["max_rel_error"];
          if (!e.validation.valid) row["reason"] = e.validation.reason;
          if (e.kernel) {
            row["gflops"] = e.kernel->gflops;
            row["time_s"] = e.kernel->measurement.median_s;
            row["spread"] = e.kernel->measurement.spread;
            last_gflops = e.kernel->gflops;
          }
          if (e.reference) row["reference_gflops"] = e.reference->gflops;
          row["ratio_to_reference"] = e.ratio_to_reference;
          row["power"] = power_json(e);
          if (!e.validation.valid) outcome.exit_status = 1;
        } catch (const std::exception& e) {
          row["valid"] = false;
          row["reason"] = e.what();
          outcome.exit_status = 1;
        }
        if (const auto tile = reuse_tile(config)) {
          const double bytes = tiled_bytes(p, tile->first, tile->second);
          row["tile"] = {{"m", tile->first}, {"n", tile->second}};
          row["bytes_moved"] = bytes;
          row["arithmetic_intensity"] = flops / bytes;
          row["parallel_tiles"] = static_cast<std::int64_t>(std::ceil(static_cast<double>(p.m) / static_cast<double>(tile->first)) *
                                                            std::ceil(static_cast<double>(p.n) / static_cast<double>(tile->second)));
        }
        row["growth_limits"] = growth_limits(space, config);
        if (!o->json)
          fmt::print("{:<26} {:>15} {:>9} GFLOP/s  {} {:>9} GFLOP/s  [{}] {}\n", kernel->name(), p.shape(),
                     row.contains("gflops") ? fmt::format("{:.2f}", row["gflops"].get<double>()) : "-", reference_name,
                     row.contains("reference_gflops") ? fmt::format("{:.2f}", row["reference_gflops"].get<double>()) : "-",
                     to_string(config), source);
        rows.push_back(std::move(row));
      }
    }

    std::string command = "gemmlab sweep";
    for (const auto* option : cmd->get_options())
      if (option->count() > 0 && option->get_name() != "--help") {
        command += " " + option->get_name();
        if (option->get_expected_min() > 0)  // a flag's "true" is not part of what was typed
          for (const auto& value : option->results()) command += " " + value;
      }
    const bool power_read = std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.contains("power") && !r["power"].is_null(); });
    const nlohmann::json document = {
        {"schema", 1},
        {"kind", "sweep"},
        {"date", utc_now()},
        {"host", host_name()},
        {"command", command},
        {"backend", o->backend},
        {"device", info},
        {"device_fingerprint", fingerprint(info)},
        {"reference", {{"name", reference_name}, {"version", reference->version()}}},
        {"threads", threads},
        {"power_source", power_read ? (o->backend == "cpu" ? "RAPL package energy" : "device (NVML)") : "not measured"},
        {"results", rows},
        {"skipped", skipped},
    };
    if (!o->out.empty()) {
      std::ofstream file(o->out);
      file << document.dump(2) << "\n";
      if (!file) throw UsageError("cannot write " + o->out);
    }
    if (o->json) print_json(document);
  });
}

}  // namespace gemmlab::cli
