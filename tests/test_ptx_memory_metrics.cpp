// The PTX simulator's memory-access metrics against golden counts worked out by hand from the
// rules stated in runtime/src/ptx/memory_metrics.hpp (32-byte sectors; 32 banks of 32-bit words
// with broadcast of a shared word; 64-bit accesses by half-warps, 128-bit accesses and ldmatrix
// matrices by quarter-warps).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../runtime/src/ptx/memory_metrics.hpp"

namespace gemmlab::ptx::sim {
namespace {

using Lanes = std::array<std::uint64_t, 32>;
constexpr std::uint32_t all_lanes = 0xffff'ffffu;

// Lane i at base + stride * i.
Lanes strided(std::uint64_t base, std::uint64_t stride) {
  Lanes a{};
  for (std::uint64_t i = 0; i < 32; ++i) a[i] = base + stride * i;
  return a;
}

Lanes from(const std::function<std::uint64_t(unsigned)>& f) {
  Lanes a{};
  for (unsigned i = 0; i < 32; ++i) a[i] = f(i);
  return a;
}

// ---- global: sectors per request ------------------------------------------------------------

TEST(PtxMemoryMetricsGlobal, UnitStrideFloatsAreFourSectors) {
  // 32 x 4 bytes = 128 contiguous bytes from a 128-byte boundary: sectors 0x80..0x83.
  EXPECT_EQ(global_sectors(strided(0x1000, 4), all_lanes, 4), 4);
}

TEST(PtxMemoryMetricsGlobal, MisalignedUnitStrideTouchesAFifthSector) {
  // Bytes 0x1004..0x1083 span sectors 0x80..0x84.
  EXPECT_EQ(global_sectors(strided(0x1004, 4), all_lanes, 4), 5);
}

TEST(PtxMemoryMetricsGlobal, StridedFloats) {
  EXPECT_EQ(global_sectors(strided(0x1000, 8), all_lanes, 4), 8);     // stride 2: 256 bytes
  EXPECT_EQ(global_sectors(strided(0x1000, 32), all_lanes, 4), 32);   // one per sector
  EXPECT_EQ(global_sectors(strided(0x1000, 128), all_lanes, 4), 32);  // one per cache line
  EXPECT_EQ(global_sectors(strided(0x1000, 4096), all_lanes, 4), 32);
}

TEST(PtxMemoryMetricsGlobal, OneAddressForAllLanesIsOneSector) {
  EXPECT_EQ(global_sectors(strided(0x1234, 0), all_lanes, 4), 1);
}

TEST(PtxMemoryMetricsGlobal, VectorWidths) {
  EXPECT_EQ(global_sectors(strided(0x2000, 8), all_lanes, 8), 8);     // 256 bytes
  EXPECT_EQ(global_sectors(strided(0x2000, 16), all_lanes, 16), 16);  // 512 bytes
  EXPECT_EQ(global_sectors(strided(0x2000, 2), all_lanes, 2), 2);     // 64 bytes of halves
  EXPECT_EQ(global_sectors(strided(0x2000, 1), all_lanes, 1), 1);     // 32 bytes
}

TEST(PtxMemoryMetricsGlobal, OnlyActiveLanesCount) {
  const Lanes a = strided(0x1000, 4);
  EXPECT_EQ(global_sectors(a, 0x0000'ffffu, 4), 2);  // lanes 0-15: 64 bytes
  EXPECT_EQ(global_sectors(a, 0x8000'0001u, 4), 2);  // lanes 0 and 31: sectors 0x80 and 0x83
  EXPECT_EQ(global_sectors(a, 0x0000'0100u, 4), 1);  // lane 8 alone
  EXPECT_EQ(global_sectors(a, 0u, 4), 0);
  // An inactive lane's wild address is ignored.
  Lanes b = a;
  b[5] = 0xdead'beef'0000ull;
  EXPECT_EQ(global_sectors(b, all_lanes & ~(1u << 5), 4), 4);
}

TEST(PtxMemoryMetricsGlobal, AnAccessStraddlingASectorBoundaryCountsBoth) {
  Lanes a{};
  a[0] = 30;  // bytes 30..33
  EXPECT_EQ(global_sectors(a, 1u, 4), 2);
  a[0] = 24;  // bytes 24..39, a misaligned 16-byte access
  EXPECT_EQ(global_sectors(a, 1u, 16), 2);
}

TEST(PtxMemoryMetricsGlobal, RejectsOtherSizes) {
  const Lanes a{};
  EXPECT_THROW(global_sectors(a, all_lanes, 0), std::invalid_argument);
  EXPECT_THROW(global_sectors(a, all_lanes, 3), std::invalid_argument);
  EXPECT_THROW(global_sectors(a, all_lanes, 32), std::invalid_argument);
}

// ---- shared: wavefronts per request ---------------------------------------------------------

TEST(PtxMemoryMetricsShared, UnitStrideFloatsAreConflictFree) {
  EXPECT_EQ(shared_wavefronts(strided(0, 4), all_lanes, 4), 1);
  EXPECT_EQ(shared_ideal_wavefronts(all_lanes, 4), 1);
  // Any 32 consecutive words hit 32 different banks, whatever the (word-aligned) start.
  EXPECT_EQ(shared_wavefronts(strided(0x44, 4), all_lanes, 4), 1);
}

TEST(PtxMemoryMetricsShared, StrideTwoFloatsAreATwoWayConflict) {
  // Words 0, 2, ..., 62: the 16 even banks, two distinct words each.
  EXPECT_EQ(shared_wavefronts(strided(0, 8), all_lanes, 4), 2);
}

TEST(PtxMemoryMetricsShared, StrideThirtyTwoFloatsAreAThirtyTwoWayConflict) {
  // Words 0, 32, ..., 992: all in bank 0, all distinct.
  EXPECT_EQ(shared_wavefronts(strided(0, 128), all_lanes, 4), 32);
  // The padded layout (stride 33 words) spreads them over all banks.
  EXPECT_EQ(shared_wavefronts(strided(0, 132), all_lanes, 4), 1);
  // An odd stride has no common factor with 32 banks.
  EXPECT_EQ(shared_wavefronts(strided(0, 12), all_lanes, 4), 1);
  // Stride 8 words: banks 0, 8, 16, 24, eight distinct words each.
  EXPECT_EQ(shared_wavefronts(strided(0, 32), all_lanes, 4), 8);
}

TEST(PtxMemoryMetricsShared, OneWordIsBroadcast) {
  EXPECT_EQ(shared_wavefronts(strided(0x40, 0), all_lanes, 4), 1);
  // Multicast: pairs of lanes share a word, 16 words in 16 banks.
  EXPECT_EQ(shared_wavefronts(from([](unsigned i) { return 4ull * (i / 2); }), all_lanes, 4), 1);
  // Bytes of the same word do not conflict either: 32 consecutive bytes are 8 words.
  EXPECT_EQ(shared_wavefronts(strided(0, 1), all_lanes, 1), 1);
  // Two words in bank 0, each read by half the warp: 2.
  EXPECT_EQ(shared_wavefronts(from([](unsigned i) { return i < 16 ? 0ull : 128ull; }), all_lanes, 4), 2);
}

TEST(PtxMemoryMetricsShared, SixtyFourBitUnitStrideIsTwoWavefronts) {
  // Each half-warp reads 16 x 8 = 128 contiguous bytes: one conflict-free phase each.
  EXPECT_EQ(shared_wavefronts(strided(0, 8), all_lanes, 8), 2);
  EXPECT_EQ(shared_ideal_wavefronts(all_lanes, 8), 2);
  // Stride 16 bytes: each half-warp covers 256 bytes, two words per bank: 2 + 2.
  EXPECT_EQ(shared_wavefronts(strided(0, 16), all_lanes, 8), 4);
  // Only one half-warp active: one phase.
  EXPECT_EQ(shared_wavefronts(strided(0, 8), 0x0000'ffffu, 8), 1);
  EXPECT_EQ(shared_wavefronts(strided(0, 8), 0x0001'0000u, 8), 1);
  EXPECT_EQ(shared_ideal_wavefronts(0x0001'0000u, 8), 1);
  // Stride 128 bytes (doubles down a column of a 16-double-wide tile): 16-way per half-warp.
  EXPECT_EQ(shared_wavefronts(strided(0, 128), all_lanes, 8), 32);
}

TEST(PtxMemoryMetricsShared, OneHundredTwentyEightBitUnitStrideIsFourWavefronts) {
  // Each quarter-warp reads 8 x 16 = 128 contiguous bytes.
  EXPECT_EQ(shared_wavefronts(strided(0, 16), all_lanes, 16), 4);
  EXPECT_EQ(shared_ideal_wavefronts(all_lanes, 16), 4);
  // Stride 32 bytes: 256 bytes per quarter, 2-way: 4 x 2.
  EXPECT_EQ(shared_wavefronts(strided(0, 32), all_lanes, 16), 8);
  // Lanes 0-7 only: one phase.
  EXPECT_EQ(shared_wavefronts(strided(0, 16), 0x0000'00ffu, 16), 1);
  // Lanes 0 and 8: two phases with one lane each.
  EXPECT_EQ(shared_wavefronts(strided(0, 16), 0x0000'0101u, 16), 2);
  EXPECT_EQ(shared_ideal_wavefronts(0x0000'0101u, 16), 2);
}

TEST(PtxMemoryMetricsShared, WideBroadcastCostsItsPhases) {
  // The model does not credit Volta/Turing's packing of uniform wide loads (header).
  EXPECT_EQ(shared_wavefronts(strided(0x80, 0), all_lanes, 8), 2);
  EXPECT_EQ(shared_wavefronts(strided(0x80, 0), all_lanes, 16), 4);
}

TEST(PtxMemoryMetricsShared, InactiveLanesDoNotConflict) {
  // Stride 32 words with only lanes 0 and 1 active: 2-way.
  EXPECT_EQ(shared_wavefronts(strided(0, 128), 0x0000'0003u, 4), 2);
  // Stride 2 words with the lower half-warp active: words 0..30 even, 16 banks, conflict-free.
  EXPECT_EQ(shared_wavefronts(strided(0, 8), 0x0000'ffffu, 4), 1);
  // Stride 32 words, every fourth lane: 8-way.
  EXPECT_EQ(shared_wavefronts(strided(0, 128), 0x1111'1111u, 4), 8);
  EXPECT_EQ(shared_wavefronts(strided(0, 128), 0u, 4), 0);
  EXPECT_EQ(shared_ideal_wavefronts(0u, 4), 0);
}

TEST(PtxMemoryMetricsShared, RejectsOtherSizes) {
  const Lanes a{};
  EXPECT_THROW(shared_wavefronts(a, all_lanes, 12), std::invalid_argument);
  EXPECT_THROW(shared_ideal_wavefronts(all_lanes, 0), std::invalid_argument);
}

// ---- ldmatrix -------------------------------------------------------------------------------

// Lane l supplies row l % 8 of matrix l / 8: a tile of 16-bit elements with rows `row_bytes`
// apart, matrix j at 16-byte chunk j of the row, the chunk optionally XOR-swizzled by the row.
Lanes ldmatrix_rows(std::uint64_t row_bytes, bool swizzle) {
  return from([=](unsigned lane) {
    const std::uint64_t row = lane % 8, matrix = lane / 8;
    const std::uint64_t chunk = swizzle ? (matrix ^ (row % 8)) : matrix;
    return 0x400 + row * row_bytes + chunk * 16;
  });
}

TEST(PtxMemoryMetricsLdmatrix, ContiguousMatricesAreOneWavefrontEach) {
  // Rows 16 bytes apart: each 8x8 matrix is 128 contiguous bytes.
  EXPECT_EQ(ldmatrix_wavefronts(strided(0, 16), 4), 4);
  EXPECT_EQ(ldmatrix_wavefronts(strided(0, 16), 2), 2);
  EXPECT_EQ(ldmatrix_wavefronts(strided(0, 16), 1), 1);
}

TEST(PtxMemoryMetricsLdmatrix, RowsOneHundredTwentyEightBytesApartAreAnEightWayConflict) {
  // 64 halves per row: the eight rows of a matrix sit on the same four banks.
  EXPECT_EQ(ldmatrix_wavefronts(ldmatrix_rows(128, false), 4), 32);
  EXPECT_EQ(ldmatrix_wavefronts(ldmatrix_rows(128, false), 1), 8);
}

TEST(PtxMemoryMetricsLdmatrix, XorSwizzleRemovesTheConflict) {
  // chunk ^= row % 8 puts row r of every matrix on banks 4(j^r)..4(j^r)+3: all distinct.
  EXPECT_EQ(ldmatrix_wavefronts(ldmatrix_rows(128, true), 4), 4);
  EXPECT_EQ(ldmatrix_wavefronts(ldmatrix_rows(128, true), 1), 1);
}

TEST(PtxMemoryMetricsLdmatrix, RowsSixtyFourBytesApartAreAFourWayConflict) {
  // Even rows on banks 4j..4j+3, odd rows 16 banks further: four distinct words per bank.
  EXPECT_EQ(ldmatrix_wavefronts(ldmatrix_rows(64, false), 4), 16);
}

TEST(PtxMemoryMetricsLdmatrix, LanesBeyondTheMatricesAreIgnored) {
  Lanes a = strided(0, 16);
  for (unsigned l = 16; l < 32; ++l) a[l] = 128ull * l;  // would conflict if they counted
  EXPECT_EQ(ldmatrix_wavefronts(a, 2), 2);
  EXPECT_THROW(ldmatrix_wavefronts(a, 3), std::invalid_argument);
  EXPECT_THROW(ldmatrix_wavefronts(a, 0), std::invalid_argument);
}

// ---- unique sectors over a launch -------------------------------------------------------------

TEST(PtxMemoryMetricsSectorSet, CountsEachSectorOnce) {
  const std::array<SectorSet::Range, 1> ranges{{{0x1000, 0x2000}}};
  SectorSet set(ranges);
  set.record(strided(0x1000, 4), all_lanes, 4);
  EXPECT_EQ(set.unique_sectors(), 4u);
  EXPECT_EQ(set.unique_bytes(), 128u);
  set.record(strided(0x1000, 4), all_lanes, 4);  // again: nothing new
  EXPECT_EQ(set.unique_sectors(), 4u);
  // Stride 128 from 0x1000: sectors 0x80 + 4i; i = 0 is already there.
  set.record(strided(0x1000, 128), all_lanes, 4);
  EXPECT_EQ(set.unique_sectors(), 35u);
  EXPECT_EQ(set.sectors_outside_ranges(), 0u);
  // Inactive lanes record nothing.
  set.record(strided(0x1800, 4), 0u, 4);
  EXPECT_EQ(set.unique_sectors(), 35u);
}

TEST(PtxMemoryMetricsSectorSet, ByteRangesAndStraddles) {
  const std::array<SectorSet::Range, 1> ranges{{{0, 4096}}};
  SectorSet set(ranges);
  set.record(30, 4);  // sectors 0 and 1
  EXPECT_EQ(set.unique_sectors(), 2u);
  set.record(64, 1024);  // sectors 2..33
  EXPECT_EQ(set.unique_sectors(), 34u);
  set.record(0, 0);
  EXPECT_EQ(set.unique_sectors(), 34u);
  set.clear();
  EXPECT_EQ(set.unique_sectors(), 0u);
}

TEST(PtxMemoryMetricsSectorSet, AdjacentRangesShareTheirBoundarySector) {
  // Buffers [0, 100) and [100, 200) both hold sector 3 (bytes 96..127): counted once.
  const std::array<SectorSet::Range, 2> ranges{{{100, 200}, {0, 100}}};
  SectorSet set(ranges);
  set.record(96, 4);
  set.record(100, 4);
  EXPECT_EQ(set.unique_sectors(), 1u);
  set.record(196, 4);  // sector 6, the last of the second buffer
  EXPECT_EQ(set.unique_sectors(), 2u);
  EXPECT_EQ(set.sectors_outside_ranges(), 0u);
}

TEST(PtxMemoryMetricsSectorSet, SectorsOutsideTheRangesGoToTheHashSet) {
  const std::array<SectorSet::Range, 1> ranges{{{0x1000, 0x1100}}};
  SectorSet set(ranges);
  set.record(0x5000, 4);
  set.record(0x5004, 4);
  set.record(0x1000, 4);
  EXPECT_EQ(set.sectors_outside_ranges(), 1u);
  EXPECT_EQ(set.unique_sectors(), 2u);

  SectorSet unranged;  // everything in the hash set
  unranged.record(strided(0x40, 128), all_lanes, 4);
  EXPECT_EQ(unranged.unique_sectors(), 32u);
  EXPECT_EQ(unranged.sectors_outside_ranges(), 32u);

  SectorSet moved(std::move(set));
  EXPECT_EQ(moved.unique_sectors(), 2u);
}

TEST(PtxMemoryMetricsSectorSet, ConcurrentRecordersAgree) {
  // Four threads cover one MiB with overlapping patterns: every sector exactly once.
  constexpr std::uint64_t base = 0x10'0000, bytes = 1 << 20;
  const std::array<SectorSet::Range, 1> ranges{{{base, base + bytes}}};
  SectorSet set(ranges);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t)
    threads.emplace_back([&set, t] {
      for (std::uint64_t off = 0; off < bytes; off += 128) {
        const std::uint64_t start = (off + t * 4096) % bytes;
        set.record(strided(base + start, 4), all_lanes, 4);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(set.unique_sectors(), bytes / 32);
  EXPECT_EQ(set.unique_bytes(), bytes);
}

}  // namespace
}  // namespace gemmlab::ptx::sim
