// Building the BLAS library's table: from the results cache, and by tuning the classes it lacks.
// Apart from blas_table.cpp so that the library, which only reads tables, does not link SQLite.
#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <map>

#include "gemmlab/blas_table.hpp"
#include "gemmlab/tuned.hpp"

namespace gemmlab {

namespace {
// The transposes a cache key's layout records ("... transposes=TN"; none: NN).
std::string transposes_of(const std::string& layout) {
  const auto at = layout.find("transposes=");
  return at == std::string::npos || at + 13 > layout.size() ? "NN" : layout.substr(at + 11, 2);
}

// A kernel's space on `p`, on at most `threads` threads.
SearchSpace space_within(const Kernel& kernel, const Problem& p, int threads, const DeviceInfo& device) {
  SearchSpace space = kernel.space(device, p.precision);
  if (space.find("threads") != nullptr)
    space.require("threads <= " + std::to_string(threads), "the library's thread count this entry is for");
  return space;
}

// `config` on `threads` threads (unchanged where the kernel has no such parameter).
Config with_threads(Config config, int threads) {
  if (auto t = config.find("threads"); t != config.end()) t->second = threads;
  return config;
}

// How far apart two shapes are: the sum over M, N and K of the distance of their logarithms.
double shape_distance(const Problem& a, const Problem& b) {
  const auto apart = [](std::int64_t x, std::int64_t y) {
    return std::abs(std::log2(static_cast<double>(std::max<std::int64_t>(x, 1))) -
                    std::log2(static_cast<double>(std::max<std::int64_t>(y, 1))));
  };
  return apart(a.m, b.m) + apart(a.n, b.n) + apart(a.k, b.k) + (a.trans_a != b.trans_a) +
         (a.trans_b != b.trans_b);
}
}  // namespace

std::vector<int> blas_table_thread_counts(int cores) {
  return cores > 1 ? std::vector<int>{1, cores} : std::vector<int>{1};
}

BlasTable blas_table_from_cache(const ResultsCache& cache, const DeviceInfo& device,
                                const std::vector<const Kernel*>& kernels, const std::vector<int>& library_threads) {
  BlasTable table;
  table.device = fingerprint(device);
  table.device_name = device.name;
  table.created = utc_timestamp();
  // Per class and library thread count, per problem of the class: the results that compete.
  struct Competing {
    const Kernel* kernel;
    ConfigResult result;
  };
  struct ProblemResults {
    Problem problem;
    std::string transposes;
    bool has_finalists = false;
    std::vector<Competing> results;
  };
  std::map<std::pair<ShapeClass, int>, std::vector<ProblemResults>> classes;
  for (const ResultsCache::Group& g : cache.groups()) {
    if (g.key.device != table.device || g.key.backend != device.backend) continue;
    const auto kernel = std::find_if(kernels.begin(), kernels.end(), [&](const Kernel* k) {
      return k->name() == g.key.kernel && k->source_hash() == g.key.kernel_hash;
    });
    if (kernel == kernels.end()) continue;
    Problem p;
    p.m = g.key.m;
    p.n = g.key.n;
    p.k = g.key.k;
    p.precision = parse_precision(g.key.precision);
    const std::string transposes = transposes_of(g.key.layout);
    p.trans_a = transposes[0] == 'T';
    p.trans_b = transposes[1] == 'T';
    const SearchSpace space = (*kernel)->space(device, p.precision);
    auto threads_of = [](const ConfigResult& r) {
      const auto threads = r.config.find("threads");
      return threads == r.config.end() ? ParamValue{1} : threads->second;  // 01_naive: one
    };
    std::vector<ConfigResult> results = cache.load(g.key);
    std::erase_if(results, [&](const ConfigResult& r) { return r.status != Status::ok || !space.is_valid(r.config); });
    for (int t : library_threads) {
      const bool has_finalists = std::any_of(results.begin(), results.end(), [&](const ConfigResult& r) {
        return r.reason == blas_finalist_reason && threads_of(r) <= t;
      });
      std::vector<ProblemResults>& of_class = classes[{shape_class(p), t}];
      auto at = std::find_if(of_class.begin(), of_class.end(), [&](const ProblemResults& r) { return r.problem == p; });
      if (at == of_class.end()) at = of_class.insert(of_class.end(), {p, transposes, false, {}});
      at->has_finalists = at->has_finalists || has_finalists;
      for (const ConfigResult& r : results)
        if (threads_of(r) <= t && (!has_finalists || r.reason == blas_finalist_reason))
          at->results.push_back({*kernel, r});
    }
  }

  // "tuned <when> for MxNxK NN (x GFLOP/s" — the start of an entry's source.
  const auto tuned_for = [](const ConfigResult& r, const ProblemResults& at) {
    char text[160];
    std::snprintf(text, sizeof text, "tuned %s for %s %s (%.1f GFLOP/s", r.recorded_at.c_str(),
                  at.problem.shape().c_str(), at.transposes.c_str(), r.gflops);
    return std::string(text);
  };
  for (const auto& [class_and_threads, of_class] : classes) {
    const auto& [c, t] = class_and_threads;
    std::vector<const ProblemResults*> timed_together;  // the class's problems with finalists
    for (const ProblemResults& r : of_class)
      if (r.has_finalists) timed_together.push_back(&r);
    const auto fastest_at = [](const ProblemResults& at) {
      double fastest = 0;
      for (const Competing& r : at.results) fastest = std::max(fastest, r.result.gflops);
      return fastest;
    };
    // Several shapes of the class had the same finalists timed on them: the one whose smallest
    // share of a shape's fastest is the largest (a finalist missing on a shape does not compete).
    const Competing* chosen = nullptr;
    double chosen_worst = 0;
    const ProblemResults* chosen_worst_at = nullptr;
    if (timed_together.size() > 1)
      for (const Competing& candidate : timed_together.front()->results) {
        if (candidate.result.reason != blas_finalist_reason) continue;
        double worst = 1;
        const ProblemResults* worst_at = nullptr;
        for (const ProblemResults* at : timed_together) {
          const auto same = std::find_if(at->results.begin(), at->results.end(), [&](const Competing& r) {
            return r.kernel == candidate.kernel && r.result.config == candidate.result.config &&
                   r.result.reason == blas_finalist_reason;
          });
          const double share = same == at->results.end() ? 0 : same->result.gflops / fastest_at(*at);
          if (worst_at == nullptr || share < worst) {
            worst = share;
            worst_at = at;
          }
        }
        if (worst > 0 && (chosen == nullptr || worst > chosen_worst)) {
          chosen = &candidate;
          chosen_worst = worst;
          chosen_worst_at = worst_at;
        }
      }
    if (chosen != nullptr) {
      char across[160];
      std::snprintf(across, sizeof across,
                    "), finalists timed together on %zu shapes of the class: at worst %.2f of the fastest (%s)",
                    timed_together.size(), chosen_worst, chosen_worst_at->problem.shape().c_str());
      table.put({.shape = c, .library_threads = t, .kernel = std::string(chosen->kernel->name()),
                 .config = chosen->result.config,
                 .source = tuned_for(chosen->result, *timed_together.front()) + across});
      continue;
    }
    // Otherwise the fastest result of any of its problems.
    const ProblemResults* fastest_problem = nullptr;
    for (const ProblemResults& at : of_class)
      for (const Competing& r : at.results)
        if (chosen == nullptr || r.result.gflops > chosen->result.gflops) {
          chosen = &r;
          fastest_problem = &at;
        }
    if (chosen == nullptr) continue;
    table.put({.shape = c, .library_threads = t, .kernel = std::string(chosen->kernel->name()),
               .config = chosen->result.config,
               .source = tuned_for(chosen->result, *fastest_problem) +
                         (chosen->result.reason == blas_finalist_reason ? ", finalists timed together)" : ")")});
  }
  return table;
}

std::string_view default_blas_kernel(const Problem& p) {
  if (p.flops() / 2 < small_problem_volume) return "01_naive";
  if (p.trans_b) return p.m <= small_m_rows ? "06_small_m" : "05_packed_avx512";
  return p.m >= packed_min_rows && p.n >= packed_min_columns ? "05_packed_avx512" : "06_small_m";
}

std::vector<std::string_view> blas_tuning_kernels(const Problem& p) {
  if (p.m <= small_m_rows) return {"06_small_m"};
  return {"06_small_m", "05_packed_avx512"};
}

MeasureOptions finalist_measure(MeasureOptions search) {
  constexpr int finalist_blocks = 4;
  search.min_blocks = std::max(search.min_blocks, finalist_blocks);
  search.max_repetitions = std::max(search.max_repetitions, 1000 * search.min_blocks);
  return search;
}

std::size_t tune_missing_classes(Device& device,
                                 const std::function<std::vector<const Kernel*>(const Problem&)>& kernels_for,
                                 Reference* truth_fp64, Reference* reference, ResultsCache& cache,
                                 const BlasTable& table, const std::vector<Problem>& problems,
                                 const std::vector<int>& library_threads, const TuneOptions& options,
                                 const BlasTuningProgress& progress,
                                 const RunnerFactory& make_runner, const FinalistTimer& time_finalists) {
  std::size_t tuned = 0;
  std::vector<int> counts = library_threads;
  std::sort(counts.begin(), counts.end());  // fewest first: their results are reused by the larger counts
  // Each kernel's best configuration of a shape at a smaller thread count: a start of the search
  // at the larger ones (its blocking, with more threads), which a small budget may not reach
  // from the default.
  std::map<CacheKey, Config> best_with_fewer;
  const FinalistTimer time_together =
      time_finalists ? time_finalists
                     : [&](const Problem& p, const std::vector<std::pair<const Kernel*, Config>>& candidates) {
                         Evaluator evaluator(device, p, truth_fp64, options.seed);
                         return evaluator.time_together(candidates, finalist_measure(options.measure));
                       };
  struct Finalist {
    const Kernel* kernel;
    ConfigResult result;
    bool timed_together = false;  // by an earlier round
  };
  using Finalists = std::vector<Finalist>;
  const auto has_finalist = [](const Finalists& finalists, const Kernel* kernel, const Config& config) {
    return std::any_of(finalists.begin(), finalists.end(),
                       [&](const Finalist& f) { return f.kernel == kernel && f.result.config == config; });
  };
  // Times a problem's finalists together once more; each keeps the slower of this round and what
  // it had, and is stored (a lone finalist — every other configuration failed or was aborted —
  // keeps its search's timing).
  const auto time_finalists_round = [&](const Problem& p, Finalists& finalists) {
    if (finalists.size() < 2) {
      for (const Finalist& f : finalists) cache.store(cache_key(device.info(), *f.kernel, p), f.result);
      return;
    }
    std::vector<std::pair<const Kernel*, Config>> candidates;
    for (const Finalist& f : finalists) candidates.push_back({f.kernel, f.result.config});
    const std::vector<Timing> timings = time_together(p, candidates);
    for (std::size_t i = 0; i < finalists.size() && i < timings.size(); ++i) {
      Finalist& f = finalists[i];
      if (f.timed_together && timings[i].gflops >= f.result.gflops) continue;  // the earlier round was slower
      f.result.time_s = timings[i].measurement.median_s;
      f.result.gflops = timings[i].gflops;
      f.result.ratio_to_reference =
          f.result.reference_gflops > 0 ? f.result.gflops / f.result.reference_gflops : 0;
      f.result.recorded_at = utc_timestamp();
    }
    for (Finalist& f : finalists) {
      f.timed_together = true;
      cache.store(cache_key(device.info(), *f.kernel, p), f.result);
    }
  };
  // A kernel's configurations on a problem are evaluated by `make_runner`'s runner, else in this
  // process (timing `beside` next to each, where given).
  const auto runner_for = [&](const Kernel& kernel, const Problem& p, Reference* beside) {
    return make_runner ? make_runner(kernel, p)
                       : std::make_unique<InProcessRunner>(device, kernel, p, truth_fp64, beside, options.seed,
                                                           options.measure);
  };
  // Evaluates `configs` of `kernel` on `p` and nothing else (each validated, stored in the cache;
  // no reference beside them: the finalists' rounds compare them with the others), after telling
  // `progress` of `step` with their count.
  const auto evaluate_only = [&](const Kernel& kernel, const Problem& p, const SearchSpace& space,
                                 std::vector<Config> configs, BlasTuningStep step) {
    TuneOptions o = options;
    o.start_with = std::move(configs);
    o.budget.evaluations = o.start_with.size();
    step.configurations = o.start_with.size();
    if (progress) progress(step);
    const std::unique_ptr<ConfigurationRunner> runner = runner_for(kernel, p, nullptr);
    return tune(space, p, *runner, o, {}, {.cache = &cache, .key = cache_key(device.info(), kernel, p)});
  };
  // Each problem searched, with its thread count and finalists.
  struct Searched {
    Problem problem;
    int threads;
    Finalists finalists;
    std::vector<Problem> class_shapes;  // the other problems of its class, whose entry this search decides
  };
  std::vector<Searched> rounds;
  for (int t : counts) {
    std::map<ShapeClass, std::size_t> searched;  // a class's search, in rounds
    for (const Problem& p : problems) {
      const ShapeClass c = shape_class(p);
      const BlasTableEntry* entry = table.find(p, t);
      if (entry != nullptr && entry->library_threads == t) continue;
      if (const auto in = searched.find(c); in != searched.end()) {
        Searched& s = rounds[in->second];
        if (!(p == s.problem) && std::find(s.class_shapes.begin(), s.class_shapes.end(), p) == s.class_shapes.end())
          s.class_shapes.push_back(p);
        continue;
      }
      Finalists finalists;
      for (const Kernel* kernel : kernels_for(p)) {
        if (progress)
          progress({.problem = p, .kernel = *kernel, .threads = t,
                    .configurations = options.budget.evaluations});
        const SearchSpace space = space_within(*kernel, p, t, device.info());
        const std::unique_ptr<ConfigurationRunner> runner = runner_for(*kernel, p, reference);
        TuneOptions o = options;
        const CacheKey key = cache_key(device.info(), *kernel, p);
        const bool from_kernels_starts = o.start_with.empty();
        if (from_kernels_starts) {
          const auto start_with = [&](Config start) {
            if (std::find(o.start_with.begin(), o.start_with.end(), start) == o.start_with.end())
              o.start_with.push_back(std::move(start));
          };
          for (Config start : kernel->starting_configs(device.info(), p.precision)) {
            if (auto threads = start.find("threads"); threads != start.end())
              threads->second = std::min<ParamValue>(threads->second, t);
            start_with(std::move(start));
          }
          if (auto fewer = best_with_fewer.find(key); fewer != best_with_fewer.end())
            start_with(with_threads(fewer->second, t));
        }
        const TuneResult result = tune(space, p, *runner, o, {}, {.cache = &cache, .key = key});
        if (const std::vector<ConfigResult> best = result.top(1); !best.empty()) best_with_fewer[key] = best.front().config;
        for (const ConfigResult& r : result.top(blas_finalists_per_kernel)) finalists.push_back({kernel, r});
        // The kernel's default (its first starting configuration) joins the finalists wherever the
        // search evaluated it: a search times each configuration once, on whatever minute it
        // falls, and the default can miss the top few in a slow stretch and then never be timed
        // beside the winner. (On a second Intel Xeon an fp32 table took for 512^3 on one thread,
        // without the default among the finalists, 05's 8 x 3, which ran 512 x 768 x 768, the
        // other shape of the class, at 0.78-0.80 of oneDNN; the default ran 0.97 minutes apart.)
        if (from_kernels_starts) {
          const Config& default_config = o.start_with.front();
          const auto is_default = [&](const ConfigResult& r) {
            return r.status == Status::ok && r.config == default_config;
          };
          if (const auto d = std::find_if(result.history.begin(), result.history.end(), is_default);
              d != result.history.end() && !has_finalist(finalists, kernel, default_config))
            finalists.push_back({kernel, *d});
        }
      }
      for (Finalist& f : finalists) f.result.reason = blas_finalist_reason;
      searched[c] = rounds.size();
      rounds.push_back({p, t, std::move(finalists), {}});
      ++tuned;
    }
  }

  // Transfer: each kernel's best configuration of every other problem (and thread count) is
  // tried on this one, the nearest shapes first. A small budget's search often ends far from a
  // blocking that another class's search found, and one good configuration tends to be good
  // across neighbouring shapes. The fastest joins the finalists (unless one already).
  struct Winner {
    const Kernel* kernel;
    Config config;
    const Problem* problem;
  };
  std::vector<Winner> winners;
  for (const Searched& s : rounds)
    for (const Finalist& f : s.finalists) {
      const auto same_kernel_better = [&](const Finalist& other) {
        return other.kernel == f.kernel && other.result.gflops > f.result.gflops;
      };
      if (std::none_of(s.finalists.begin(), s.finalists.end(), same_kernel_better))
        winners.push_back({f.kernel, f.result.config, &s.problem});
    }
  for (Searched& s : rounds) {
    const Problem& p = s.problem;
    for (const Kernel* kernel : kernels_for(p)) {
      const SearchSpace space = space_within(*kernel, p, s.threads, device.info());
      std::vector<std::pair<double, Config>> nearest;  // shape distance, configuration
      for (const Winner& w : winners) {
        if (w.kernel != kernel || w.problem->precision != p.precision) continue;
        const Config config = with_threads(w.config, s.threads);
        const bool finalist = has_finalist(s.finalists, kernel, config);
        const bool listed =
            std::any_of(nearest.begin(), nearest.end(), [&](const auto& n) { return n.second == config; });
        if (!finalist && !listed && space.is_valid(config))
          nearest.push_back({shape_distance(*w.problem, p), config});
      }
      if (nearest.empty()) continue;
      std::stable_sort(nearest.begin(), nearest.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      if (nearest.size() > blas_transfer_candidates) nearest.resize(blas_transfer_candidates);
      std::vector<Config> configs;
      for (const auto& n : nearest) configs.push_back(n.second);
      const TuneResult result =
          evaluate_only(*kernel, p, space, std::move(configs),
                        {.problem = p, .kernel = *kernel, .threads = s.threads, .configurations = 0,
                         .from_other_problems = true});
      if (const std::vector<ConfigResult> best = result.top(1); !best.empty()) {
        Finalist joining{kernel, best.front()};
        joining.result.reason = blas_finalist_reason;
        s.finalists.push_back(std::move(joining));
      }
    }
  }

  // Two rounds of the finalists timed together, each round across every problem, so that a
  // problem's two rounds lie minutes apart. Each finalist keeps the slower of its two rounds: the
  // machine's speed moves between minutes, and a configuration fast in only some of its states
  // must not win on one lucky timing. Every finalist of a problem, those that joined from other
  // problems too, has the same two rounds. (Round one once came right after each search, before
  // the joiners, whose own evaluation stood for it: a joiner was then compared on other minutes.
  // On the Intel Xeon machine the fp32 table at 2079267 took for 2048^3 on one thread a joiner
  // kept at 188.0 GFLOP/s, timed 15 minutes after 05's default was kept at its round one's
  // 185.5; beside oneDNN the joiner ran 0.95 of it, the default 1.00-1.01.)
  // A library thread count's entry lets configurations with fewer threads compete (on a small
  // problem one thread can win), so a problem's finalists from its searches with fewer threads are
  // timed again in the rounds of its searches with more: beside the others, not on other minutes.
  // (On a second Intel Xeon the fp32 table took for 2048^3 on two threads the one-thread search's
  // finalist at the 154.4 GFLOP/s of the one-thread rounds, against two-thread finalists whose
  // rounds, nine minutes later, ran while the second core was mostly taken away: 131-150.) A
  // configuration in both keeps the figure of the later rounds, so the finalists of the smaller
  // count's entry are compared on the same minutes too.
  for (Searched& s : rounds)
    for (const Searched& fewer : rounds)
      if (fewer.threads < s.threads && fewer.problem == s.problem)
        for (const Finalist& f : fewer.finalists)
          if (!has_finalist(s.finalists, f.kernel, f.result.config))
            s.finalists.push_back({f.kernel, f.result, false});
  for (Searched& s : rounds) time_finalists_round(s.problem, s.finalists);  // a lone one is stored
  for (Searched& s : rounds)
    if (s.finalists.size() > 1) time_finalists_round(s.problem, s.finalists);

  // The class's other shapes. The table keeps one entry per class, and the configuration fastest
  // on the shape searched can run a neighbour of its class badly (a block of B sized for one N
  // spilling the cache at another): each kernel's finalists are evaluated on each other shape of
  // the class in the set (validated, where its space there accepts them), then timed together
  // there, one round, and stored as that shape's finalists. blas_table_from_cache then keeps the
  // finalist whose worst share of each shape's fastest is the largest.
  for (const Searched& s : rounds)
    for (const Problem& shape : s.class_shapes) {
      Finalists there;
      for (const Kernel* kernel : kernels_for(shape)) {
        const SearchSpace space = space_within(*kernel, shape, s.threads, device.info());
        std::vector<Config> configs;
        for (const Finalist& f : s.finalists)
          if (f.kernel == kernel && space.is_valid(f.result.config) &&
              std::find(configs.begin(), configs.end(), f.result.config) == configs.end())
            configs.push_back(f.result.config);
        if (configs.empty()) continue;
        const std::size_t count = configs.size();
        const TuneResult result =
            evaluate_only(*kernel, shape, space, std::move(configs),
                          {.problem = shape, .kernel = *kernel, .threads = s.threads, .configurations = 0,
                           .finalists_of = &s.problem});
        for (ConfigResult& r : result.top(count)) {
          r.reason = blas_finalist_reason;
          there.push_back({kernel, std::move(r)});
        }
      }
      time_finalists_round(shape, there);
    }
  return tuned;
}

std::vector<Problem> blas_benchmark_shapes() {
  std::vector<Problem> shapes;
  for (std::int64_t s : {64, 128, 256, 512, 1024, 2048, 4096}) shapes.push_back(Problem::packed(s, s, s));
  for (auto [m, n, k] : std::initializer_list<std::array<std::int64_t, 3>>{
           {4096, 64, 4096}, {64, 4096, 4096}, {4096, 4096, 64},     // tall-skinny, short-wide, small K
           {512, 768, 768}, {512, 3072, 768}, {512, 768, 3072},      // BERT-base: attention projections, FFN
           {1, 4096, 4096}, {4, 4096, 4096}, {16, 4096, 4096},       // LLM decoding, 4096 x 4096
           {1, 11008, 4096}, {4, 11008, 4096}, {16, 11008, 4096},    // and the 4096 x 11008 MLP
           {12544, 64, 147}, {3136, 64, 576}, {784, 128, 1152},      // ResNet-50 im2col: conv1, 3x3 layers
           {196, 256, 2304}, {49, 512, 4608}})
    shapes.push_back(Problem::packed(m, n, k));
  return shapes;
}

std::vector<Problem> blas_tuning_shapes() {
  std::vector<Problem> shapes = blas_benchmark_shapes();
  for (std::int64_t n : {4096, 11008})
    for (std::int64_t m : {1, 4, 16}) {
      Problem p = Problem::packed(m, n, 4096);
      p.trans_b = true;
      shapes.push_back(with_padding(p, 0));  // B stored N x K
    }
  return shapes;
}

}  // namespace gemmlab
