// The one measurement routine every timing in gemmlab goes through (CLI, tests, benchmarks,
// tuner): warm-up runs, then repetitions until the relative spread of the samples is small or a
// time limit is reached; the result is the median and the spread.
#pragma once

#include <functional>
#include <utility>
#include <vector>

namespace gemmlab {

struct MeasureOptions {
  int warmup = 1;
  int min_repetitions = 5;
  int max_repetitions = 1000;
  double max_seconds = 2.0;      // stop repeating after this much measured time
  double target_spread = 0.02;   // stop once (q3 - q1) / median is at most this
  double block_seconds = 0.25;   // measure_interleaved: sampled time of one block
  double settle_seconds = 0.15;  // measure_interleaved: discarded runs at the start of a block
  int min_blocks = 1;            // measure_interleaved: blocks of each side at least (see there)
};

struct Measurement {
  double median_s = 0;
  double spread = 0;  // interquartile range relative to the median
  double min_s = 0;
  double max_s = 0;
  int repetitions = 0;
  std::vector<double> samples_s;
};

// `run_once` performs one run and returns its duration in seconds, measured the way its backend
// measures (wall clock on the CPU, events on a GPU).
Measurement measure(const std::function<double()>& run_once, const MeasureOptions& options = {});

// Two measurements taken in alternating blocks (a a a, b b b, a a a, ...), for a ratio that a
// drift of the machine's speed during the run does not bias. Each block starts with discarded
// runs lasting `settle_seconds` (at least one run): the other side's thread pool may still be
// spinning on the cores — OpenBLAS's idle workers poll for 2^28 TSC cycles (~0.1 s) after each
// call, OpenMP's for a shorter while — and would slow this side's first runs. Then the block
// samples for about `block_seconds`, or as long as the longest single run seen on either side
// (at most 1 s): beside a slow kernel the fast side is sampled over a comparable stretch. Stops
// when both have min_repetitions and either both spreads are within target or the sampled time of
// both reaches 2 x max_seconds.
// Each side's samples come from at least `min_blocks` blocks unless the time limit ends it first:
// a block takes at most max_repetitions / min_blocks runs, and spreads within target do not end
// it before. (A slow product reaches the time limit in a few blocks of one run each, already
// alternating; forcing more would only add to its cost.) With one block a side, a product of a
// few microseconds fills max_repetitions in its first block: the two sides are sampled once each,
// a few milliseconds apart, and the ratio says which side a slow moment of the machine fell on.
// Ratios that are results take several blocks (result_measure); a search's many evaluations keep
// one, as each block costs a settle.
std::pair<Measurement, Measurement> measure_interleaved(const std::function<double()>& run_a,
                                                        const std::function<double()>& run_b,
                                                        const MeasureOptions& options = {});
// `options` for a ratio reported as a result (`gemmlab run`, the BLAS benchmark): eight blocks a
// side, each of up to the 1000 runs a block takes at most, so that a product of microseconds is
// sampled in alternation over up to 8000 runs a side. (05 at 128^3 against oneDNN on a 2-core VM
// with a noisy host, six processes: 0.43-1.36 with one block of up to 1000 runs a side.)
inline constexpr int result_min_blocks = 8;
inline MeasureOptions result_measure(MeasureOptions options = {}) {
  options.min_blocks = result_min_blocks;
  options.max_repetitions = 1000 * result_min_blocks;
  return options;
}

// The same for any number of runs, in turn (a a a, b b b, c c c, a a a, ...): one measurement each,
// in the order given. Stops when all have min_repetitions and either every spread is within
// target (after min_blocks blocks each) or the sampled time reaches runs.size() x max_seconds.
std::vector<Measurement> measure_round_robin(const std::vector<std::function<double()>>& runs,
                                             const MeasureOptions& options = {});

// Wall-clock seconds of one call of `f` (steady clock).
double wall_seconds(const std::function<void()>& f);

// Median and relative interquartile range of samples (sorted copy).
Measurement summarize(std::vector<double> samples_s);

}  // namespace gemmlab
