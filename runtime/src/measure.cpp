#include "gemmlab/measure.hpp"

#include <algorithm>
#include <chrono>

namespace gemmlab {

double wall_seconds(const std::function<void()>& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

namespace {
// Linear interpolation between closest ranks of sorted samples.
double quantile(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(pos);
  auto hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] * (1 - frac) + sorted[hi] * frac;
}
}  // namespace

Measurement summarize(std::vector<double> samples_s) {
  Measurement m;
  m.repetitions = static_cast<int>(samples_s.size());
  if (samples_s.empty()) return m;
  std::vector<double> sorted = samples_s;
  std::sort(sorted.begin(), sorted.end());
  m.median_s = quantile(sorted, 0.5);
  m.min_s = sorted.front();
  m.max_s = sorted.back();
  m.spread = m.median_s > 0 ? (quantile(sorted, 0.75) - quantile(sorted, 0.25)) / m.median_s : 0;
  m.samples_s = std::move(samples_s);
  return m;
}

Measurement measure(const std::function<double()>& run_once, const MeasureOptions& options) {
  for (int i = 0; i < options.warmup; ++i) run_once();
  std::vector<double> samples;
  double total = 0;
  int min_reps = std::max(1, options.min_repetitions);
  while (static_cast<int>(samples.size()) < options.max_repetitions) {
    double t = run_once();
    samples.push_back(t);
    total += t;
    if (static_cast<int>(samples.size()) < min_reps) continue;
    if (total >= options.max_seconds) break;
    if (summarize(samples).spread <= options.target_spread) break;
  }
  return summarize(std::move(samples));
}

std::vector<Measurement> measure_round_robin(const std::vector<std::function<double()>>& runs,
                                             const MeasureOptions& options) {
  std::vector<std::vector<double>> samples(runs.size());
  if (runs.empty()) return {};
  double total = 0;
  const int min_reps = std::max(1, options.min_repetitions);
  // The longest single run seen: a block of the faster side lasts at least as long (up to
  // balance_limit_s), so that beside a slow kernel the reference is not sampled in one short
  // burst between long stretches of the other.
  constexpr double balance_limit_s = 1.0;
  double longest = 0;
  // Runs one block may take, so that max_repetitions leaves room for min_blocks blocks.
  constexpr int max_block_runs = 1000;
  const int min_blocks = std::max(1, options.min_blocks);
  const int block_cap = std::max(1, std::min(max_block_runs, options.max_repetitions / min_blocks));
  int blocks = 0;  // of each side
  // One block: discarded runs for settle_seconds, then enough runs to fill the block.
  auto block = [&](const std::function<double()>& run, std::vector<double>& into) {
    double settled = 0, last = 0;
    do {
      last = run();
      settled += last;
    } while (settled < options.settle_seconds);
    longest = std::max(longest, last);
    const double span = std::max(options.block_seconds, std::min(longest, balance_limit_s));
    const int count = static_cast<int>(std::clamp(span / std::max(last, 1e-9), 1.0, double(block_cap)));
    for (int i = 0; i < count && static_cast<int>(into.size()) < options.max_repetitions; ++i) {
      into.push_back(run());
      total += into.back();
    }
  };
  auto fewest = [&] {
    std::size_t n = samples[0].size();
    for (const auto& s : samples) n = std::min(n, s.size());
    return static_cast<int>(n);
  };
  for (int i = 0; i < options.warmup; ++i)
    for (const auto& run : runs) run();
  while (fewest() < options.max_repetitions) {
    for (std::size_t r = 0; r < runs.size(); ++r) block(runs[r], samples[r]);
    ++blocks;
    if (fewest() < min_reps) continue;
    if (total >= static_cast<double>(runs.size()) * options.max_seconds) break;
    // A steady first block does not end it: the sides' blocks must alternate min_blocks times.
    if (blocks >= min_blocks &&
        std::all_of(samples.begin(), samples.end(), [&](const std::vector<double>& s) {
          return summarize(s).spread <= options.target_spread;
        }))
      break;
  }
  std::vector<Measurement> out;
  for (auto& s : samples) out.push_back(summarize(std::move(s)));
  return out;
}

std::pair<Measurement, Measurement> measure_interleaved(const std::function<double()>& run_a,
                                                        const std::function<double()>& run_b,
                                                        const MeasureOptions& options) {
  std::vector<Measurement> both = measure_round_robin({run_a, run_b}, options);
  return {std::move(both[0]), std::move(both[1])};
}

}  // namespace gemmlab
