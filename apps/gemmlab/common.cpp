#include <unistd.h>

#include <fstream>
#include <iostream>

#include "cli.hpp"
#include "gemmlab/evaluate.hpp"
#include "gemmlab/expression.hpp"
#include "gemmlab/setup.hpp"

namespace gemmlab::cli {

std::vector<std::string> worker_command() {
  std::string path(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program's path (/proc/self/exe) to start the evaluation worker");
  path.resize(static_cast<std::size_t>(n));
  return {path, "worker"};
}

std::vector<const Kernel*> select_kernels(const std::string& backend, const std::string& kernel) {
  if (!kernel.empty()) {
    if (backend.empty()) {
      for (const Kernel* k : registry().kernels())
        if (k->name() == kernel) return {k};
      registry().kernel("cpu", kernel);  // throws UnknownName listing the kernels
    }
    return {&registry().kernel(backend, kernel)};
  }
  return registry().kernels(backend);
}

void add_user_constraints(SearchSpace& space, const std::vector<std::string>& expressions, const std::string& file) {
  std::vector<std::pair<std::string, std::string>> sources;  // (expression, where it came from)
  for (const auto& e : expressions) sources.emplace_back(e, "--constraint");
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) throw UsageError("cannot read the constraints file " + file);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      const auto first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;  // blank lines and comments
      sources.emplace_back(line, file + ":" + std::to_string(number));
    }
  }
  for (const auto& source : sources) {
    const std::string& text = source.first;
    const std::string& where = source.second;
    // Checked here first, so that a mistake is the user's error (require() calls it a bug).
    const Expression e = [&] {
      try {
        return space.parse(text);
      } catch (const ExpressionError& error) {
        throw UsageError(where + ": " + error.what());
      }
    }();
    for (const auto& name : e.names())
      if (space.find(name) == nullptr) {
        std::string known, named;
        for (const auto& p : space.parameters()) known += (known.empty() ? "" : ", ") + p.name;
        for (const auto& v : space.named_values()) named += (named.empty() ? "" : ", ") + v.name;
        throw UsageError(where + ": '" + name + "' in \"" + text +
                         "\" is not a parameter of this kernel (parameters: " + known +
                         (named.empty() ? "" : "; named values: " + named) + ")");
      }
    space.require(text, "from " + where);
  }
}

void print_json(const nlohmann::json& document) { std::cout << document.dump(2) << std::endl; }

void add_json_flag(CLI::App* cmd, bool& json) { cmd->add_flag("--json", json, "Print one JSON document"); }

void add_shape_options(CLI::App* cmd, std::int64_t& m, std::int64_t& n, std::int64_t& k) {
  cmd->add_option("--m", m, "Rows of A and C")->required();
  cmd->add_option("--n", n, "Columns of B and C")->required();
  cmd->add_option("--k", k, "Columns of A, rows of B")->required();
}

void add_problem_options(CLI::App* cmd, ProblemOptions& o) {
  cmd->add_option("--backend", o.backend, "Backend (cpu, systolic, cuda where built; see gemmlab devices)")->capture_default_str();
  cmd->add_option("--kernel", o.kernel, "Kernel name (see `gemmlab kernels`)")->required();
  add_shape_options(cmd, o.m, o.n, o.k);
  cmd->add_option("--precision", o.precision,
                  "fp32, fp64 (cpu); bf16, int8, fp32 (systolic); fp16, bf16 (tensor cores) (default: the device's "
                  "native precision if the kernel has it, else the kernel's first)");
}

Problem checked_problem(const ProblemOptions& o, const Kernel& kernel, const DeviceInfo& device) {
  const Precision precision = o.precision.empty() ? default_precision(kernel, device) : parse_precision(o.precision);
  Problem p = Problem::packed(o.m, o.n, o.k, precision, o.alpha, o.beta);
  if (o.lda) p.lda = o.lda;
  if (o.ldb) p.ldb = o.ldb;
  if (o.ldc) p.ldc = o.ldc;
  validate(p);
  require_runs(kernel, device, p.precision);
  return p;
}

SearchSpace valid_space(const Kernel& kernel, const DeviceInfo& device, Precision precision) {
  SearchSpace space = kernel.space(device, precision);
  if (space.enumerate(1).empty()) throw UsageError(no_valid_configuration_message(kernel, device, precision));
  return space;
}

void add_setup_options(CLI::App* cmd, SetupOptions& setup, const std::string& threads_help,
                       const std::string& reference_help) {
  cmd->add_option("--threads", setup.threads, threads_help);
  cmd->add_option("--reference", setup.reference, reference_help);
  cmd->add_option("--device", setup.device, "Device index within the backend")->capture_default_str();
}

void add_flush_cache_flag(CLI::App* cmd, SetupOptions& setup) {
  cmd->add_flag("--flush-cache", setup.flush_cache,
                "Empty the device's cache before each timed run (GPUs: L2), so timings start with cold operands");
}

void add_cache_options(CLI::App* cmd, CacheOptions& cache, const std::string& cache_help,
                       const std::string& no_cache_help) {
  cmd->add_option("--cache", cache.path, cache_help);
  cmd->add_flag("--no-cache", cache.disabled, no_cache_help);
}

void check_cache_options(const CacheOptions& cache) {
  if (cache.disabled && !cache.path.empty()) throw UsageError("--cache and --no-cache exclude each other");
}

std::optional<ResultsCache> open_lookup_cache(const CacheOptions& cache) {
  check_cache_options(cache);
  if (cache.disabled) return std::nullopt;
  try {
    return open_cache_for_lookup(cache.path);
  } catch (const CacheError& e) {
    throw UsageError(e.what());
  }
}

void print_ignored(const std::vector<IgnoredConfig>& ignored) {
  for (const IgnoredConfig& i : ignored)
    std::cout << "  ignored the cached configuration " << to_string(i.config) << " tuned for " << i.m << "x" << i.n
              << "x" << i.k << ": " << i.reason << "\n";
}

}  // namespace gemmlab::cli
