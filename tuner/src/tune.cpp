#include "gemmlab/tune.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "gemmlab/kernel.hpp"

namespace gemmlab {

std::vector<ConfigResult> TuneResult::top(std::size_t n) const {
  std::vector<ConfigResult> ok;
  for (const auto& e : history)
    if (e.status == Status::ok) ok.push_back(e);
  std::stable_sort(ok.begin(), ok.end(), [](const ConfigResult& a, const ConfigResult& b) { return a.gflops > b.gflops; });
  if (ok.size() > n) ok.resize(n);
  return ok;
}

InProcessRunner::InProcessRunner(Device& device, const Kernel& kernel, const Problem& problem, Reference* truth_fp64,
                                 Reference* reference, std::uint64_t seed, const MeasureOptions& measure)
    : kernel_(kernel), reference_(reference), measure_(measure), seed_(seed), evaluator_(device, problem, truth_fp64, seed) {}

std::string InProcessRunner::reference_name() const { return reference_ != nullptr ? reference_->name() : ""; }

double InProcessRunner::reference_gflops() {
  if (!reference_gflops_) reference_gflops_ = reference_ != nullptr ? evaluator_.time_reference(*reference_, measure_).gflops : 0.0;
  return *reference_gflops_;
}

ConfigResult InProcessRunner::run(const Config& config, double abort_above_s, double) {
  try {
    const EvaluationOptions options{.seed = seed_, .time = true, .measure = measure_, .abort_above_s = abort_above_s};
    return result_of(config, evaluator_.run(kernel_, config, nullptr, options));
  } catch (const std::exception& error) {  // the kernel refused to build or run this one
    return {.config = config, .status = Status::failed, .reason = error.what()};
  }
}

void ConfigurationRunner::submit(std::size_t ticket, const Config& config, double abort_above_s, double timeout_s) {
  submitted_.push_back({ticket, config, abort_above_s, timeout_s});
}

ConfigurationRunner::Completion ConfigurationRunner::collect() {
  if (submitted_.empty()) throw std::logic_error("collect() with no configuration submitted");
  const Submitted next = std::move(submitted_.front());
  submitted_.pop_front();
  const auto start = std::chrono::steady_clock::now();
  Completion done{.ticket = next.ticket, .result = run(next.config, next.abort_above_s, next.timeout_s)};
  done.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return done;
}

CacheKey cache_key(const DeviceInfo& device, const Kernel& kernel, const Problem& problem) {
  char layout[160];
  // A transposed problem says so at the end; an untransposed one keeps the key it always had.
  std::snprintf(layout, sizeof layout, "row-major lda=%lld ldb=%lld ldc=%lld alpha=%.17g beta=%.17g%s%s",
                static_cast<long long>(problem.lda), static_cast<long long>(problem.ldb),
                static_cast<long long>(problem.ldc), problem.alpha, problem.beta,
                problem.transposed() ? " transposes=" : "", problem.transposed() ? problem.transposes().c_str() : "");
  return {.device = fingerprint(device), .backend = std::string(kernel.backend()), .kernel = std::string(kernel.name()),
          .kernel_hash = kernel.source_hash(), .m = problem.m, .n = problem.n, .k = problem.k,
          .precision = std::string(to_string(problem.precision)), .layout = layout};
}

namespace {
// A cached failure by timeout is measured again: the limit depends on the run (the best so far,
// --timeout-floor), and a longer one may let the configuration finish.
bool reusable(const ConfigResult& cached) {
  return !(cached.status == Status::failed && cached.reason.rfind("timed out", 0) == 0);
}
}  // namespace

double InProcessRunner::reference_gflops_beside(const Config& config, double) {
  if (reference_ == nullptr) return 0;
  try {
    const EvaluationOptions options{.seed = seed_, .time = true, .measure = measure_};
    const Evaluation e = evaluator_.run(kernel_, config, reference_, options);
    return e.reference ? e.reference->gflops : 0.0;
  } catch (const std::exception&) {
    return 0;
  }
}

namespace {
// Runs `work` (compiling a kernel) for announced configurations on a few threads. Each
// configuration is done once; when the strategy announces faster than the threads compile, the
// oldest announcements are dropped (the strategy has moved on from them).
class PrepareAhead {
 public:
  PrepareAhead(std::size_t threads, std::function<void(const Config&)> work) : work_(std::move(work)) {
    for (std::size_t t = 0; t < threads; ++t) threads_.emplace_back([this] { serve(); });
  }
  ~PrepareAhead() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
      queue_.clear();
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }
  PrepareAhead(const PrepareAhead&) = delete;
  PrepareAhead& operator=(const PrepareAhead&) = delete;

  void add(const Config& config) {
    {
      std::lock_guard lock(mutex_);
      if (!announced_.insert(config).second) return;
      queue_.push_back(config);
      while (queue_.size() > 2 * std::max<std::size_t>(threads_.size(), 4)) queue_.pop_front();
    }
    ready_.notify_one();
  }

 private:
  void serve() {
    for (;;) {
      Config config;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        config = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        work_(config);
      } catch (...) {  // prepare() will meet the same problem and report it
      }
    }
  }
  std::function<void(const Config&)> work_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Config> queue_;
  std::set<Config> announced_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};
}  // namespace

TuneResult tune(const SearchSpace& space, const Problem& problem, ConfigurationRunner& runner,
                const TuneOptions& options, const TuneProgress& progress, const TuneCache& cache) {
  const auto search_start = std::chrono::steady_clock::now();
  const SearchDomain domain(space);
  auto strategy = make_strategy(options.strategy);

  TuneResult result;
  result.space_size = domain.size();
  result.reference_name = runner.reference_name();
  const auto reference_start = std::chrono::steady_clock::now();
  result.reference_gflops = runner.reference_gflops();
  result.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - reference_start).count();
  double best_wall_s = 0;  // wall time the evaluation of the best configuration took

  // Candidates found in the cache wait here to be collected before anything the runner has.
  std::deque<std::pair<std::size_t, ConfigResult>> reused;
  auto submit = [&](std::size_t candidate) {
    const Config config = domain.config(candidate);
    if (cache.cache != nullptr)
      if (std::optional<ConfigResult> cached = cache.cache->find(cache.key, config); cached && reusable(*cached)) {
        reused.emplace_back(candidate, std::move(*cached));
        return;
      }
    double abort_above_s = 0;
    if (options.early_abort_factor > 0 && result.best)
      abort_above_s = options.early_abort_factor * problem.flops() / (result.best->gflops * 1e9);
    const double timeout_s = std::max(options.timeout_floor_s, options.timeout_factor * best_wall_s);
    runner.submit(candidate, config, abort_above_s, timeout_s);
  };
  auto collect = [&] {
    std::size_t candidate = 0;
    ConfigResult entry;
    double wall_s = 0;
    if (!reused.empty()) {
      std::tie(candidate, entry) = std::move(reused.front());
      reused.pop_front();
      ++result.reused_from_cache;
    } else {
      const auto waiting = std::chrono::steady_clock::now();
      ConfigurationRunner::Completion done = runner.collect();
      result.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting).count();
      candidate = done.ticket;
      entry = std::move(done.result);
      wall_s = done.wall_s;
      entry.config = domain.config(candidate);
      entry.reference_name = result.reference_name;
      entry.reference_gflops = result.reference_gflops;
      if (cache.cache != nullptr) {
        const auto committing = std::chrono::steady_clock::now();
        entry.recorded_at = utc_timestamp();
        cache.cache->store(cache.key, entry);
        result.commit_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - committing).count();
      }
    }
    if (entry.status == Status::aborted && entry.reason.empty())
      entry.reason = "first run slower than " + std::to_string(options.early_abort_factor) + "x the best";
    if (entry.timed() && result.reference_gflops > 0) entry.ratio_to_reference = entry.gflops / result.reference_gflops;
    result.failed += entry.status == Status::failed;
    result.invalid += entry.status == Status::invalid;
    result.aborted += entry.status == Status::aborted;
    if (entry.status == Status::ok && (!result.best || entry.gflops > result.best->gflops)) {
      result.best = entry;
      if (!entry.from_cache) best_wall_s = wall_s;  // a reused one's is unknown: keep the last
    }
    result.worker_restarts = runner.restarts();

    Observation o;
    o.candidate = candidate;
    o.status = entry.status;
    o.reason = entry.reason;
    if (entry.timed()) o.time_s = entry.time_s;
    result.history.push_back(std::move(entry));
    if (progress) progress(result, options.budget);
    return o;
  };
  const AsyncObjective objective{.slots = runner.slots(), .submit = submit, .collect = collect};
  SearchContext ctx(domain, objective, options.budget, options.seed);
  std::optional<PrepareAhead> ahead;
  if (options.compile_threads > 0 && options.prepare_ahead) {
    ahead.emplace(options.compile_threads, options.prepare_ahead);
    ctx.set_lookahead([&](std::size_t candidate) {
      // A configuration already in the results cache needs no compiling.
      const Config config = domain.config(candidate);
      if (cache.cache == nullptr || !cache.cache->find(cache.key, config)) ahead->add(config);
    });
  }
  for (const Config& config : options.start_with)
    if (const auto candidate = domain.find(config)) ctx.evaluate_start(*candidate);
  strategy->search(ctx);
  ctx.finish();
  ahead.reset();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - search_start).count();

  if (result.best && !result.reference_name.empty()) {
    const double timeout_s = std::max(options.timeout_floor_s, options.timeout_factor * best_wall_s);
    if (const double beside = runner.reference_gflops_beside(result.best->config, timeout_s); beside > 0) {
      result.reference_gflops = beside;
      result.reference_beside_best = true;
      result.best->ratio_to_reference = result.best->gflops / beside;
      for (auto& e : result.history)
        if (e.timed()) e.ratio_to_reference = e.gflops / beside;
    }
  }
  return result;
}

TuneResult tune(Device& device, const Kernel& kernel, const Problem& problem, Reference* truth_fp64,
                Reference* reference, const TuneOptions& options, const TuneProgress& progress) {
  if (auto s = kernel.supported(device.info()); !s.ok) throw Unsupported(std::string(kernel.name()) + ": " + s.reason);
  InProcessRunner runner(device, kernel, problem, truth_fp64, reference, options.seed, options.measure);
  TuneOptions with_lookahead = options;
  if (!with_lookahead.prepare_ahead)
    with_lookahead.prepare_ahead = [&](const Config& c) { kernel.prepare_ahead(device.info(), problem.precision, c); };
  return tune(kernel.space(device.info(), problem.precision), problem, runner, with_lookahead, progress);
}

}  // namespace gemmlab
