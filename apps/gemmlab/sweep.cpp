// gemmlab sweep: GFLOP/s against size for each kernel of a backend — at its tuned configuration
// from the results cache (that shape's, else the nearest tuned shape's), else at its default —
// and for the vendor reference, with the device's measured ceilings: what `gemmlab report` plots
// and explains.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "cli.hpp"
#include "gemmlab/evaluate.hpp"
#include "gemmlab/json.hpp"
#include "gemmlab/ranks.hpp"
#include "gemmlab/results_cache.hpp"
#include "gemmlab/setup.hpp"
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

std::vector<Problem> parse_shapes(const std::string& text) {
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
    shapes.push_back(Problem::packed(p.m, p.n, p.k));
  }
  return shapes;
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "";
}

constexpr const char* sweep_job = "sweep-kernel";

// The device a sweep's jobs evaluate on: the command's own (set while a one-process sweep runs),
// or one the rank opened for its first job and kept for the next.
EvaluationSetup* sweep_setup = nullptr;

// One shape of a sweep, evaluated in this process (on whichever rank runs the job): every kernel
// at the configuration rank 0 chose, all timed together with the reference in turn
// (Evaluator::run_together), so that each row's ratio is to one reference measurement taken in
// alternation with every kernel: the reference's speed at a shape cannot depend on which kernel
// it was timed beside. A kernel is left out where its speed at the previous shape predicts a run
// longer than skip_above seconds ("predicted_gflops", when the sweep runs in one process), or
// where its first run took longer than that (on MPI ranks, where shapes run side by side and
// there is no previous one). Answers {"evaluations": [an evaluation's JSON per kernel, or null
// where left out], "skipped": [...]}.
nlohmann::json run_sweep_job(const nlohmann::json& job) {
  static std::optional<EvaluationSetup> own;
  static std::string own_key;
  EvaluationSetup* setup = sweep_setup;
  if (setup == nullptr) {
    const std::string key = job.at("setup").dump();
    if (!own || own_key != key) {
      own.reset();
      Backend& backend = registry().backend(job.at("backend").get<std::string>());
      SetupOptions options;
      options.device = ranks::device_index(backend.devices(), job.at("setup").at("device").get<int>());
      options.reference = job.at("setup").at("reference").get<std::string>();
      options.threads = job.at("setup").at("threads").get<int>();
      own = open_evaluation(backend, options);
      own_key = key;
    }
    setup = &*own;
    if (const std::string here = fingerprint(setup->info()); here != job.at("fingerprint").get<std::string>())
      throw std::runtime_error("rank " + std::to_string(ranks::world().rank) + " holds " + here + ", rank 0 " +
                               job.at("fingerprint").get<std::string>() + ": a sweep compares one device");
  }
  const std::string backend = job.at("backend").get<std::string>();
  const Precision precision = parse_precision(job.at("precision").get<std::string>());
  const nlohmann::json& shape = job.at("shape");
  Problem p = Problem::packed(shape.at("m").get<std::int64_t>(), shape.at("n").get<std::int64_t>(),
                              shape.at("k").get<std::int64_t>(), precision);
  EvaluationOptions eval;
  eval.measure.max_seconds = job.at("max_seconds").get<double>();
  const double skip_above = job.at("skip_above").get<double>();
  eval.abort_above_s = skip_above;
  nlohmann::json evaluations = nlohmann::json::array(), skipped = nlohmann::json::array();
  std::vector<std::pair<const Kernel*, Config>> candidates;
  std::vector<std::size_t> candidate_of;  // kernel index of each candidate
  const auto& names = job.at("kernels");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Kernel& kernel = registry().kernel(backend, names[i].get<std::string>());
    evaluations.push_back(nullptr);
    const nlohmann::json& predicted = job.at("predicted_gflops")[i];
    if (predicted.is_number() && predicted.get<double>() > 0 && p.flops() / (predicted.get<double>() * 1e9) > skip_above) {
      skipped.push_back({{"kernel", kernel.name()}, {"m", p.m}, {"n", p.n}, {"k", p.k},
                         {"reason", fmt::format("one run would take about {:.0f} s at {:.2f} GFLOP/s (--skip-above {})",
                                                p.flops() / (predicted.get<double>() * 1e9), predicted.get<double>(),
                                                skip_above)}});
      continue;
    }
    candidates.emplace_back(&kernel, job.at("configs")[i].get<Config>());
    candidate_of.push_back(i);
  }
  validate(p);
  Evaluator evaluator(*setup->device, p, setup->truth.get(), eval.seed);
  std::vector<Evaluation> results = evaluator.run_together(candidates, setup->reference.get(), eval);
  for (std::size_t c = 0; c < results.size(); ++c) {
    const std::size_t i = candidate_of[c];
    if (results[c].aborted) {
      skipped.push_back({{"kernel", names[i]}, {"m", p.m}, {"n", p.n}, {"k", p.k},
                         {"reason", fmt::format("one run took {:.0f} s (--skip-above {})",
                                                results[c].kernel->measurement.median_s, skip_above)}});
      continue;
    }
    evaluations[i] = nlohmann::json(results[c]);
  }
  return {{"evaluations", evaluations}, {"skipped", skipped}};
}

}  // namespace

void register_sweep_jobs() { ranks::add_job_handler(sweep_job, run_sweep_job); }

void add_sweep_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    std::string backend, kernels, sizes = "128,256,512,1024", shapes, precision, out;
    SetupOptions setup;
    CacheOptions cache;
    double max_seconds = 2.0, skip_above = 20.0;
    bool json = false, no_ceilings = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("sweep", "GFLOP/s against size for each kernel and the vendor reference");
  cmd->add_option("--backend", o->backend, "Backend (see gemmlab devices)")->required();
  // --device, --reference and --threads as in add_setup_options, but listed in the order the
  // sweep has always had (its JSON records the command line in this order).
  cmd->add_option("--device", o->setup.device, "Device index within the backend")->capture_default_str();
  cmd->add_option("--kernels", o->kernels, "Kernels, separated by commas (default: every kernel the device runs)");
  cmd->add_option("--sizes", o->sizes, "Square sizes, separated by commas")->capture_default_str();
  cmd->add_option("--shapes", o->shapes,
                  "Further shapes MxNxK, separated by commas (default: tall-skinny, short-wide and short-K "
                  "shapes at the largest size)");
  cmd->add_option("--precision", o->precision,
                  "Precision (default: the device's native one; kernels without it are left out, saying so)");
  cmd->add_option("--reference", o->setup.reference, "Reference library (default: the backend's first)");
  cmd->add_option("--threads", o->setup.threads, "Threads of the reference and of kernels' `threads` (default: all cores)");
  cmd->add_option("--max-seconds", o->max_seconds, "Time limit of each measurement")->capture_default_str();
  cmd->add_option("--skip-above", o->skip_above,
                  "Leave out a kernel at sizes where one run would take longer than this many seconds, "
                  "predicted from its speed at the previous size")
      ->capture_default_str();
  add_cache_options(cmd, o->cache, "Results cache the tuned configurations are read from (default: the user's; never created)",
                    "Use every kernel's default configuration");
  cmd->add_flag("--no-ceilings", o->no_ceilings, "Do not measure the device's FMA and bandwidth ceilings");
  cmd->add_option("--out", o->out, "Also write the JSON document to this file");
  add_json_flag(cmd, o->json);

  cmd->callback([o, &outcome, cmd] {
    Backend& backend = registry().backend(o->backend);
    if (!o->precision.empty()) parse_precision(o->precision);  // an unknown name fails before any work
    const std::vector<std::int64_t> sizes = parse_sizes(o->sizes);
    std::vector<Problem> problems;
    for (std::int64_t s : sizes) problems.push_back(Problem::packed(s, s, s));
    if (!o->shapes.empty()) {
      for (const Problem& p : parse_shapes(o->shapes)) problems.push_back(p);
    } else if (const std::int64_t s = sizes.back(); s >= 16) {
      for (const auto& [m, n, k] : {std::tuple{s, s / 16, s}, std::tuple{s / 16, s, s}, std::tuple{s, s, s / 16}})
        problems.push_back(Problem::packed(m, n, k));
    }
    const std::optional<ResultsCache> results = open_lookup_cache(o->cache);

    SetupOptions setup_options = o->setup;
    setup_options.measure_ceilings = !o->no_ceilings;
    EvaluationSetup setup = open_evaluation(backend, setup_options);
    const DeviceInfo& info = setup.info();
    require_time(info, "sweep");
    const int threads = setup.threads;
    const std::string& reference_name = setup.reference_name;
    const Precision precision = o->precision.empty() ? info.native_precision : parse_precision(o->precision);
    const std::string precision_name(to_string(precision));
    for (Problem& p : problems) p.precision = precision;

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
      else if (!k->has_precision(precision))
        skipped.push_back({{"kernel", k->name()}, {"reason", "no " + precision_name + " variant"}});
      else if (k->space(info, precision).enumerate(1).empty())
        skipped.push_back({{"kernel", k->name()}, {"reason", no_valid_configuration_message(*k, info, precision)}});
      else
        kernels.push_back(k);
    }
    for (const std::string& name : wanted) registry().kernel(o->backend, name);  // unknown names fail, listed
    if (kernels.empty()) throw UsageError("no kernel of " + o->backend + " runs " + precision_name + " on " + info.name);

    // One job per shape, every kernel in it timed together with the reference. In one process the
    // shapes run in order and each kernel's speed at one predicts its run time at the next (to
    // leave out runs longer than --skip-above); on MPI ranks the shapes are measured side by side,
    // one per rank at a time.
    const std::string fingerprint_here = fingerprint(info);
    std::vector<std::vector<ChosenConfig>> chosen(kernels.size());
    std::vector<SearchSpace> spaces;  // per kernel: they depend on the device and precision, not the shape
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const Kernel& kernel = *kernels[i];
      const SearchSpace& space = spaces.emplace_back(kernel.space(info, precision));
      const Config defaults = default_config(kernel, info, precision, threads);
      for (const Problem& p : problems)
        chosen[i].push_back(choose_config(space, {}, defaults, results ? &*results : nullptr, cache_key(info, kernel, p)));
    }
    nlohmann::json names = nlohmann::json::array();
    for (const Kernel* k : kernels) names.push_back(k->name());
    std::vector<nlohmann::json> jobs;
    for (std::size_t j = 0; j < problems.size(); ++j) {
      nlohmann::json configs = nlohmann::json::array();
      for (std::size_t i = 0; i < kernels.size(); ++i) configs.push_back(chosen[i][j].config);
      jobs.push_back({{"kind", sweep_job}, {"backend", o->backend}, {"kernels", names}, {"precision", precision_name},
                      {"fingerprint", fingerprint_here},
                      {"setup", {{"device", o->setup.device}, {"reference", reference_name}, {"threads", threads}}},
                      {"max_seconds", o->max_seconds}, {"skip_above", o->skip_above},
                      {"shape", {{"m", problems[j].m}, {"n", problems[j].n}, {"k", problems[j].k}}},
                      {"configs", configs}, {"predicted_gflops", std::vector<nlohmann::json>(kernels.size())}});
    }
    std::vector<nlohmann::json> answers;
    if (ranks::world().size > 1) {
      // Rank 0 runs its jobs on a thread of their own, which opens the device for itself as every
      // rank does (a GPU runtime's current device belongs to the thread that set it).
      answers = ranks::run_jobs(jobs);
    } else {
      sweep_setup = &setup;
      std::vector<nlohmann::json> last(kernels.size());
      for (nlohmann::json& job : jobs) {
        job["predicted_gflops"] = last;
        answers.push_back(run_sweep_job(job));
        for (std::size_t i = 0; i < kernels.size(); ++i)
          if (const auto& e = answers.back().at("evaluations")[i]; e.is_object() && e.value("gflops", nlohmann::json()).is_number())
            last[i] = e.at("gflops");
      }
      sweep_setup = nullptr;
    }
    for (std::size_t j = 0; j < answers.size(); ++j) {
      const nlohmann::json& answer = answers[j];
      if (answer.contains("error")) throw std::runtime_error(answer.at("error").get<std::string>());
      for (const auto& s : answer.at("skipped")) skipped.push_back(s);
      // A shape's kernels were timed in one window: one machine load for all of them.
      for (const auto& e : answer.at("evaluations")) {
        if (!e.is_object()) continue;
        if (const auto& load = e.value("machine_load", nlohmann::json()); load.is_object() && load.at("disturbed").get<bool>())
          fmt::print(stderr, "gemmlab sweep: warning: {}: other work took {:.2f} cores (steal {:.2f}) while it was timed\n",
                     problems[j].shape(), load.at("others_cores").get<double>(), load.at("steal_cores").get<double>());
        break;
      }
    }

    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const Kernel& kernel = *kernels[i];
      const SearchSpace& space = spaces[i];
      for (std::size_t j = 0; j < problems.size(); ++j) {
        const nlohmann::json& e = answers[j].at("evaluations")[i];
        if (e.is_null()) continue;  // left out (skipped)
        const Problem& p = problems[j];
        const Config& config = chosen[i][j].config;
        nlohmann::json row = {{"kernel", kernel.name()}, {"precision", precision_name}, {"m", p.m}, {"n", p.n},
                              {"k", p.k}, {"params", config}, {"config_source", chosen[i][j].source},
                              {"ignored_tuned_configs", chosen[i][j].ignored}};
        if (!e.at("valid").get<bool>()) outcome.exit_status = 1;
        row.update(e);
        if (const auto tile = staged_tile(space, config)) row.update(nlohmann::json(tiled_traffic(p, *tile)));
        row["growth_limits"] = growth_limits(space, config);
        const auto gflops = [](const nlohmann::json& x) {
          return x.is_null() ? std::string("-") : fmt::format("{:.2f}", x.get<double>());
        };
        if (!o->json)
          fmt::print("{:<26} {:>15} {:>9} GFLOP/s  {} {:>9} GFLOP/s  [{}] {}\n", kernel.name(), p.shape(),
                     gflops(e.value("gflops", nlohmann::json())), reference_name,
                     gflops(e.contains("reference") && !e["reference"].is_null() ? e["reference"].value("gflops", nlohmann::json())
                                                                                : nlohmann::json()),
                     to_string(config), chosen[i][j].source);
        if (!o->json) print_ignored(chosen[i][j].ignored);
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
        {"schema", 2},
        {"kind", "sweep"},
        {"date", utc_timestamp()},
        {"host", host_name()},
        {"command", command},
        {"backend", o->backend},
        {"device", info},
        {"device_fingerprint", fingerprint(info)},
        {"reference", {{"name", reference_name}, {"version", setup.reference->version()}}},
        {"threads", threads},
        {"power_source", power_read ? setup.device->power_source() : "not measured"},
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
