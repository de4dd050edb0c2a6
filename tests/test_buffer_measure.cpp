// Host buffers (alignment, seeded fill) and the measurement routines, driven by fake run
// functions so that no assertion depends on real time.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gemmlab/buffer.hpp"
#include "gemmlab/machine_load.hpp"
#include "gemmlab/measure.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

TEST(AlignedBytes, Are64ByteAlignedForEverySize) {
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{63}, std::size_t{64},
                            std::size_t{65}, std::size_t{4095}, std::size_t{1} << 20}) {
    auto p = aligned_bytes(bytes);
    ASSERT_NE(p.get(), nullptr) << bytes << " bytes";
    EXPECT_EQ(address(p.get()) % 64, 0u) << bytes << " bytes at " << p.get();
    if (bytes > 0) {  // the whole range is usable (AddressSanitizer checks this)
      std::memset(p.get(), 0x5a, bytes);
      EXPECT_EQ(static_cast<unsigned char>(p.get()[bytes - 1]), 0x5au);
    }
  }
  EXPECT_EQ(buffer_alignment, 64u);
}

TEST(HostBuffer, DataIs64ByteAlignedAndSizeIsTheElementCount) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{1000}}) {
    HostBuffer<float> f(n);
    HostBuffer<double> d(n);
    EXPECT_EQ(f.size(), n);
    EXPECT_EQ(d.size(), n);
    EXPECT_EQ(f.span().size(), n);
    EXPECT_EQ(address(f.data()) % 64, 0u) << n << " floats";
    EXPECT_EQ(address(d.data()) % 64, 0u) << n << " doubles";
    for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<double>(i);
    if (n > 0) {
      EXPECT_EQ(d[n - 1], static_cast<double>(n - 1));
    }
  }
  HostBuffer<float> empty;
  EXPECT_EQ(empty.size(), 0u);
}

TEST(HugePageBytes, LargeBuffersAre2MiBAlignedSmallOnes64) {
  constexpr std::size_t two_mib = std::size_t{2} << 20;
  for (std::size_t bytes : {two_mib, two_mib + 1, 3 * two_mib + 12345}) {
    auto p = huge_page_bytes(bytes);
    ASSERT_NE(p.get(), nullptr);
    EXPECT_EQ(address(p.get()) % two_mib, 0u) << bytes << " bytes at " << p.get();
    std::memset(p.get(), 1, bytes);
  }
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{100000}}) {
    auto p = huge_page_bytes(bytes);
    ASSERT_NE(p.get(), nullptr);
    EXPECT_EQ(address(p.get()) % 64, 0u) << bytes << " bytes at " << p.get();
    if (bytes > 0) std::memset(p.get(), 1, bytes);
  }
}

TEST(FillUniform, IsReproducibleForASeed) {
  std::vector<double> a(1000), b(1000);
  fill_uniform(std::span<double>(a), 42);
  fill_uniform(std::span<double>(b), 42);
  EXPECT_EQ(a, b);
  std::vector<float> fa(1000), fb(1000);
  fill_uniform(std::span<float>(fa), 7);
  fill_uniform(std::span<float>(fb), 7);
  EXPECT_EQ(fa, fb);
}

TEST(FillUniform, DiffersAcrossSeeds) {
  std::vector<double> a(256), b(256);
  fill_uniform(std::span<double>(a), 42);
  fill_uniform(std::span<double>(b), 43);
  int equal = 0;
  for (std::size_t i = 0; i < a.size(); ++i) equal += a[i] == b[i];
  EXPECT_LT(equal, 3) << "seeds 42 and 43 gave " << equal << " equal values out of 256";
  std::vector<float> fa(256), fb(256);
  fill_uniform(std::span<float>(fa), 0);
  fill_uniform(std::span<float>(fb), 1);
  EXPECT_NE(fa, fb);
}

TEST(FillUniform, ValuesLieInMinusOneToOneAndSpanTheRange) {
  std::vector<double> d(100000);
  fill_uniform(std::span<double>(d), 123);
  const auto [dmin, dmax] = std::minmax_element(d.begin(), d.end());
  EXPECT_GE(*dmin, -1.0);
  EXPECT_LE(*dmax, 1.0);
  EXPECT_LT(*dmin, -0.99) << "100000 uniform values should come close to -1";
  EXPECT_GT(*dmax, 0.99) << "100000 uniform values should come close to 1";
  double mean = 0;
  for (double v : d) mean += v;
  mean /= static_cast<double>(d.size());
  EXPECT_NEAR(mean, 0.0, 0.02);
  const auto distinct = std::set<double>(d.begin(), d.end()).size();
  EXPECT_GT(distinct, 99000u) << "values repeat: only " << distinct << " distinct out of 100000";

  std::vector<float> f(100000);
  fill_uniform(std::span<float>(f), 123);
  const auto [fmin, fmax] = std::minmax_element(f.begin(), f.end());
  EXPECT_GE(*fmin, -1.0f);
  EXPECT_LE(*fmax, 1.0f);
}

TEST(FillUniform, EmptySpanIsFine) {
  std::vector<double> none;
  EXPECT_NO_THROW(fill_uniform(std::span<double>(none), 1));
}

TEST(Summarize, MedianMinMaxAndSpreadOfOddSample) {
  const Measurement m = summarize({3.0, 1.0, 2.0});
  EXPECT_EQ(m.repetitions, 3);
  EXPECT_DOUBLE_EQ(m.median_s, 2.0);
  EXPECT_DOUBLE_EQ(m.min_s, 1.0);
  EXPECT_DOUBLE_EQ(m.max_s, 3.0);
  // q1 = 1.5, q3 = 2.5 (linear interpolation): (2.5 - 1.5) / 2 = 0.5
  EXPECT_DOUBLE_EQ(m.spread, 0.5);
  EXPECT_EQ(m.samples_s, (std::vector<double>{3.0, 1.0, 2.0})) << "the raw samples keep their order";
}

TEST(Summarize, MedianInterpolatesForEvenSample) {
  const Measurement m = summarize({4.0, 1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(m.median_s, 2.5);
  // q1 = 1.75, q3 = 3.25: 1.5 / 2.5
  EXPECT_DOUBLE_EQ(m.spread, 0.6);
}

TEST(Summarize, EqualSamplesHaveZeroSpread) {
  const Measurement m = summarize(std::vector<double>(10, 0.25));
  EXPECT_DOUBLE_EQ(m.median_s, 0.25);
  EXPECT_DOUBLE_EQ(m.spread, 0.0);
  const Measurement one = summarize({0.5});
  EXPECT_DOUBLE_EQ(one.median_s, 0.5);
  EXPECT_DOUBLE_EQ(one.spread, 0.0);
  EXPECT_EQ(one.repetitions, 1);
}

TEST(Summarize, EmptySampleGivesZeroRepetitions) {
  const Measurement m = summarize({});
  EXPECT_EQ(m.repetitions, 0);
  EXPECT_EQ(m.median_s, 0.0);
  EXPECT_TRUE(m.samples_s.empty());
}

// A fake run: returns durations from a list (cycling), counts calls.
struct FakeRun {
  std::vector<double> durations;
  int calls = 0;
  double operator()() { return durations[static_cast<std::size_t>(calls++) % durations.size()]; }
};

TEST(Measure, StopsAtMinRepetitionsWhenSamplesAgree) {
  FakeRun run{{1e-3}};
  const MeasureOptions o{.warmup = 2, .min_repetitions = 7, .max_repetitions = 100, .max_seconds = 1e9};
  const Measurement m = measure(std::ref(run), o);
  EXPECT_EQ(m.repetitions, 7);
  EXPECT_EQ(m.samples_s.size(), 7u);
  EXPECT_EQ(run.calls, 2 + 7) << "warm-up runs plus measured runs";
  EXPECT_DOUBLE_EQ(m.median_s, 1e-3);
  EXPECT_DOUBLE_EQ(m.spread, 0.0);
}

TEST(Measure, StopsAtMaxRepetitionsWhenSpreadStaysLarge) {
  FakeRun run{{1e-3, 3e-3}};  // spread 1: never within target
  const MeasureOptions o{.warmup = 0, .min_repetitions = 5, .max_repetitions = 40, .max_seconds = 1e9};
  const Measurement m = measure(std::ref(run), o);
  EXPECT_EQ(m.repetitions, 40);
  EXPECT_EQ(run.calls, 40);
  EXPECT_GT(m.spread, o.target_spread);
}

TEST(Measure, MinRepetitionsAreTakenEvenPastTheTimeLimit) {
  FakeRun run{{10.0, 30.0}};
  const MeasureOptions o{.warmup = 1, .min_repetitions = 5, .max_repetitions = 100, .max_seconds = 1.0};
  const Measurement m = measure(std::ref(run), o);
  EXPECT_EQ(m.repetitions, 5) << "the time limit must not cut below min_repetitions, nor go on past it";
}

TEST(Measure, StopsOnceMeasuredTimeReachesMaxSeconds) {
  FakeRun run{{0.125, 0.375}};  // cumulative: 0.125 0.5 0.625 1.0
  const MeasureOptions o{.warmup = 0, .min_repetitions = 2, .max_repetitions = 1000, .max_seconds = 1.0};
  const Measurement m = measure(std::ref(run), o);
  EXPECT_EQ(m.repetitions, 4);
}

TEST(Measure, WarmupRunsAreNotSampled) {
  int calls = 0;
  auto run = [&] { return ++calls <= 3 ? 100.0 : 1e-3; };
  const MeasureOptions o{.warmup = 3, .min_repetitions = 5, .max_seconds = 1e9};
  const Measurement m = measure(run, o);
  EXPECT_DOUBLE_EQ(m.max_s, 1e-3) << "a warm-up duration leaked into the samples";
  EXPECT_EQ(calls, 3 + m.repetitions);
}

// Records the order of calls of two fake sides; the first run of each block (the run after the
// other side ran) returns a distinctive duration, which must never show up in the samples.
// Durations are exact binary fractions, so settle and block lengths come out exactly.
struct Interleaving {
  std::string sequence;
  double first_of_block = 0x1p-5, steady = 0x1p-6;  // exact binary fractions
  std::function<double()> side(char name) {
    return [this, name] {
      const bool first = sequence.empty() || sequence.back() != name;
      sequence += name;
      return first ? first_of_block : steady;
    };
  }
};

using testing::blocks_of;

TEST(MeasureInterleaved, AlternatesBlocksAndDiscardsTheSettleRunsOfEachBlock) {
  Interleaving fake;
  // Settling takes the first run (1/32 s) and two steady ones (1/64 s each): 3 discarded runs.
  const MeasureOptions o{.warmup = 1, .min_repetitions = 5, .max_repetitions = 1000, .max_seconds = 1e9,
                         .block_seconds = 0.125, .settle_seconds = 0.0625};
  const auto [a, b] = measure_interleaved(fake.side('a'), fake.side('b'), o);
  const std::string& s = fake.sequence;
  SCOPED_TRACE("call sequence: " + s);
  ASSERT_GE(s.size(), 2u);
  EXPECT_EQ(s.substr(0, 2), "ab") << "one warm-up run of each side first";
  const std::size_t warm = 2;
  const auto calls_a = static_cast<int>(std::count(s.begin() + warm, s.end(), 'a'));
  const auto calls_b = static_cast<int>(std::count(s.begin() + warm, s.end(), 'b'));
  const int blocks_a = blocks_of(s, 'a', warm), blocks_b = blocks_of(s, 'b', warm);
  EXPECT_GE(blocks_a, 1);
  EXPECT_EQ(blocks_a, blocks_b) << "blocks must alternate a, b, a, b, ...";
  EXPECT_EQ(s[warm], 'a') << "the first block is a's";
  EXPECT_EQ(calls_a, 3 * blocks_a + a.repetitions) << "three discarded (settle) runs per block of a";
  EXPECT_EQ(calls_b, 3 * blocks_b + b.repetitions) << "three discarded (settle) runs per block of b";
  EXPECT_GE(a.repetitions, o.min_repetitions);
  EXPECT_GE(b.repetitions, o.min_repetitions);
  EXPECT_DOUBLE_EQ(a.max_s, fake.steady) << "a discarded first-of-block run was sampled";
  EXPECT_DOUBLE_EQ(b.max_s, fake.steady) << "a discarded first-of-block run was sampled";
  // A block samples about block_seconds: block_seconds / last settle run = 8 sampled runs.
  EXPECT_EQ(a.repetitions, 8 * blocks_a);
}

TEST(MeasureInterleaved, KeepsBlockingUntilBothSidesHaveMinRepetitions) {
  Interleaving fake;
  fake.first_of_block = 1.0;  // longer than block_seconds: one sampled run per block
  fake.steady = 1.0;
  // The time limit is exceeded after the first block; one run settles in each block.
  const MeasureOptions o{.warmup = 0, .min_repetitions = 4, .max_repetitions = 1000, .max_seconds = 1e-3,
                         .block_seconds = 0.1, .settle_seconds = 0.5};
  const auto [a, b] = measure_interleaved(fake.side('a'), fake.side('b'), o);
  EXPECT_EQ(a.repetitions, 4);
  EXPECT_EQ(b.repetitions, 4);
  EXPECT_EQ(fake.sequence, "aabbaabbaabbaabb");
}

TEST(MeasureInterleaved, RespectsMaxRepetitionsOnBothSides) {
  int calls = 0;
  // Ever longer runs: the spread never settles and the time limit is far away.
  auto growing = [&] { return 1e-6 * ++calls; };
  // settle_seconds 0: one discarded run per block.
  const MeasureOptions o{.warmup = 1, .min_repetitions = 3, .max_repetitions = 30, .max_seconds = 1e9,
                         .block_seconds = 1e-5, .settle_seconds = 0};
  const auto [a, b] = measure_interleaved(growing, growing, o);
  EXPECT_EQ(a.repetitions, 30);
  EXPECT_EQ(b.repetitions, 30);
  EXPECT_EQ(a.samples_s.size(), 30u);
}

// A side of a few microseconds a run fills a block's worth of runs at once: with one block a side
// it would fill max_repetitions in its first block, and the two sides would each be sampled in a
// single burst. min_blocks splits max_repetitions over that many alternating blocks.
TEST(MeasureInterleaved, SamplesAFastSideInAtLeastMinBlocksBlocks) {
  for (const int min_blocks : {1, 4}) {
    Interleaving fake;
    fake.first_of_block = fake.steady = 0x1p-20;  // about a microsecond
    const MeasureOptions o{.warmup = 0,
                           .min_repetitions = 3,
                           .max_repetitions = 40,
                           .max_seconds = 1e9,
                           .block_seconds = 0.125,
                           .settle_seconds = 0,
                           .min_blocks = min_blocks};
    const auto [a, b] = measure_interleaved(fake.side('a'), fake.side('b'), o);
    SCOPED_TRACE("min_blocks " + std::to_string(min_blocks) + ", call sequence: " + fake.sequence);
    EXPECT_EQ(a.repetitions, 40);
    EXPECT_EQ(b.repetitions, 40);
    EXPECT_EQ(blocks_of(fake.sequence, 'a', 0), min_blocks);
    EXPECT_EQ(blocks_of(fake.sequence, 'b', 0), min_blocks);
    // One discarded settle run and 40 / min_blocks samples per block, alternating.
    std::string expected;
    for (int block = 0; block < min_blocks; ++block)
      expected += std::string(1 + 40 / min_blocks, 'a') + std::string(1 + 40 / min_blocks, 'b');
    EXPECT_EQ(fake.sequence, expected);
  }
}

// A spread within target from the first block does not end the measurement before min_blocks
// blocks; the time limit does (a slow product's blocks of one run each already alternate).
TEST(MeasureInterleaved, ASteadyFirstBlockDoesNotEndItBeforeMinBlocksTheTimeLimitDoes) {
  for (const double max_seconds : {1e9, 1e-3}) {
    Interleaving fake;
    fake.first_of_block = fake.steady = 1.0;  // spread 0 from the first block
    const MeasureOptions o{.warmup = 0,
                           .min_repetitions = 1,
                           .max_repetitions = 1000,
                           .max_seconds = max_seconds,
                           .block_seconds = 0.1,
                           .settle_seconds = 0.5,
                           .min_blocks = 3};
    const auto [a, b] = measure_interleaved(fake.side('a'), fake.side('b'), o);
    const int blocks = max_seconds > 1 ? 3 : 1;
    SCOPED_TRACE("max_seconds " + std::to_string(max_seconds));
    EXPECT_EQ(a.repetitions, blocks);
    EXPECT_EQ(b.repetitions, blocks);
    std::string expected;
    for (int block = 0; block < blocks; ++block) expected += "aabb";
    EXPECT_EQ(fake.sequence, expected);
  }
}

// Three sides take their blocks in turn, as two do; each measurement is its own side's.
TEST(MeasureRoundRobin, TakesTheBlocksOfEverySideInTurn) {
  Interleaving fake;
  fake.first_of_block = 1.0;  // longer than block_seconds: one sampled run per block
  fake.steady = 1.0;
  const MeasureOptions o{.warmup = 1, .min_repetitions = 3, .max_repetitions = 1000, .max_seconds = 1e-3,
                         .block_seconds = 0.1, .settle_seconds = 0.5};
  const std::vector<Measurement> m = measure_round_robin({fake.side('a'), fake.side('b'), fake.side('c')}, o);
  ASSERT_EQ(m.size(), 3u);
  for (const Measurement& side : m) EXPECT_EQ(side.repetitions, 3);
  EXPECT_EQ(fake.sequence, "abc" "aabbcc" "aabbcc" "aabbcc") << "one warm-up each, then a settle run and a sample per block";
  EXPECT_TRUE(measure_round_robin({}, o).empty());

  // Each side's own durations: a side twice as slow measures twice as long.
  auto fast = [] { return 1e-3; };
  auto slow = [] { return 2e-3; };
  const MeasureOptions quick{.warmup = 0, .min_repetitions = 3, .max_repetitions = 5, .max_seconds = 1e9,
                             .block_seconds = 2e-3, .settle_seconds = 0};
  const std::vector<Measurement> two = measure_round_robin({slow, fast}, quick);
  EXPECT_DOUBLE_EQ(two[0].median_s, 2e-3);
  EXPECT_DOUBLE_EQ(two[1].median_s, 1e-3);
}

// Beside a slow side, a fast side's block lasts as long as one slow run (up to 1 s), not
// block_seconds: the reference beside a slow kernel is sampled over a comparable stretch.
TEST(MeasureInterleaved, AFastSidesBlockLastsAsLongAsTheSlowSidesRun) {
  std::string sequence;
  auto slow = [&] { sequence += 's'; return 0x1p-2; };    // 0.25 s per run
  auto fast = [&] { sequence += 'f'; return 0x1p-10; };   // ~1 ms per run
  const MeasureOptions o{.warmup = 0, .min_repetitions = 2, .max_repetitions = 1000, .max_seconds = 1e-3,
                         .block_seconds = 0x1p-7, .settle_seconds = 0};
  const auto [s, f] = measure_interleaved(slow, fast, o);
  EXPECT_EQ(s.repetitions, 2);
  // Each of the fast side's two blocks: one settle run, then 0.25 s / (1/1024 s) = 256 samples
  // (block_seconds alone would give 8).
  EXPECT_EQ(f.repetitions, 2 * 256);
  EXPECT_EQ(sequence.substr(0, 2), "ss");

  // A slow side beyond the limit: blocks of the fast side last 1 s (1024 runs, cut to the 1000 a
  // block takes at most).
  auto slower = [] { return 4.0; };
  MeasureOptions many = o;
  many.max_repetitions = 5000;
  const auto [s2, f2] = measure_interleaved(slower, fast, many);
  EXPECT_EQ(s2.repetitions, 2);
  EXPECT_EQ(f2.repetitions, 2 * 1000);
}

// Another process spinning on a core while this one sleeps: its CPU time is the others'.
TEST(LoadMeter, CountsAnotherProcessSpinningAsDisturbance) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile std::uint64_t x = 0;
    for (;;) x = x + 1;  // killed below
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the child is running
  const LoadMeter meter;
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  const std::optional<MachineLoad> load = meter.stop();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(load.has_value()) << "/proc/stat unreadable";
  EXPECT_NEAR(load->seconds, 0.8, 0.2);
  EXPECT_GT(load->others_cores + load->steal_cores, 0.5) << "a whole core spun by another process";
  EXPECT_TRUE(load->disturbed());
}

TEST(ResidentPeakMeter, SeesABufferTouchedAndFreedSinceItStarted) {
  release_freed_memory();
  const ResidentPeakMeter meter;
  {
    constexpr std::size_t bytes = std::size_t{64} << 20;
    auto buffer = aligned_bytes(bytes);
    // Resident only once written; every page written through a volatile pointer, so that the
    // compiler cannot drop the stores to a buffer freed unread.
    volatile std::byte* pages = buffer.get();
    for (std::size_t at = 0; at < bytes; at += 4096) pages[at] = std::byte{1};
  }
  const std::optional<std::int64_t> growth = meter.stop();
  ASSERT_TRUE(growth.has_value()) << "/proc/self/clear_refs or status unavailable";
  EXPECT_GE(*growth, std::int64_t{60} << 20);
  EXPECT_LT(*growth, std::int64_t{128} << 20);
}

TEST(WallSeconds, CallsTheFunctionOnceAndReturnsANonNegativeDuration) {
  int calls = 0;
  const double t = wall_seconds([&] { ++calls; });
  EXPECT_EQ(calls, 1);
  EXPECT_GE(t, 0.0);
}

}  // namespace
}  // namespace gemmlab
