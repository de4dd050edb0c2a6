// Memory-access metrics of the PTX simulator: pure functions over one warp-wide memory
// instruction (the byte addresses of the 32 lanes, the mask of the lanes that take part, the bytes
// each lane accesses), and a set of touched 32-byte sectors for the "unique bytes" of a launch.
//
// The rules, and where they come from (facts taken from NVIDIA's documentation, restated here):
//
// Global memory: sectors per request (global_sectors).
//   A sector is an aligned 32-byte chunk of memory; a cache line is four sectors (128 bytes). A
//   warp's global load or store is one request, and the request accesses every sector that holds a
//   byte some active lane asked for (Nsight Compute, Kernel Profiling Guide, "Metrics Decoder" /
//   memory terms "request", "sector"; CUDA C++ Best Practices Guide, "Coalesced Access to Global
//   Memory"). Here each active lane covers the bytes [address, address + size), so an access that
//   straddles a sector boundary counts both sectors (aligned accesses never straddle), and
//   global_sectors is the number of distinct sector indices address / 32 over those bytes.
//   32 lanes reading consecutive floats: 128 bytes = 4 sectors; a 128-byte stride: 32 sectors.
//
// Shared memory: wavefronts per request (shared_wavefronts).
//   Shared memory has 32 banks; successive 32-bit words map to successive banks, so the bank of a
//   byte address is (address / 4) % 32; each bank delivers one 32-bit word per cycle (CUDA C++
//   Programming Guide, "Compute Capabilities", "Compute Capability 5.x" > "Shared Memory"; the
//   sections of the later compute capabilities keep this organization). Two lanes that access
//   the same 32-bit word do not conflict, even though they use the same bank: a read broadcasts
//   (multicasts) the word, and of several writes to one word one is performed (same section).
//   Lanes that access different words in the same bank conflict, and the request is split into
//   as many conflict-free parts as needed. Nsight Compute counts those parts as wavefronts: a
//   wavefront is the unit of work whose items are processed in parallel; different wavefronts of
//   a request are serialized, and each request takes at least one (Kernel Profiling Guide,
//   "Metrics Decoder" / "wavefront"; "Memory Tables" > "Shared Memory", where bank conflicts show
//   as wavefronts beyond the ideal).
//   The shared-memory data path moves at most 128 bytes (32 banks x 4 bytes) per wavefront, so a
//   64-bit access is processed a half-warp at a time and a 128-bit access a quarter-warp at a time
//   (GTC 2022 talk S41723 "How to Understand and Optimize Shared Memory Accesses using Nsight
//   Compute"; NVIDIA's forum answers state the same, e.g. that an LDS.128 without uniform
//   addresses takes 4 per instruction at 128 bytes per cycle).
//   Where these facts were checked: the reference search available when this was written held
//   NVIDIA's pages only as quoted elsewhere (the Programming Guide's "Shared Memory" paragraph on
//   32-bit words, quoted from its v7.5 section G.5.3 in NervanaSystems/maxas issue 8; the
//   Profiling Guide's terms, quoted by NVIDIA staff on forums.developer.nvidia.com; the
//   half-warp/quarter-warp split for 8- and 16-byte accesses, NVIDIA/cutlass issue 328 and the
//   maxas issue above), so re-read the sections named here when changing a rule.
//   The rule implemented, exactly:
//     1. Phases: size 1, 2 or 4 -> one phase of 32 lanes; size 8 -> two phases, lanes 0-15 and
//        16-31; size 16 -> four phases, lanes 0-7, 8-15, 16-23, 24-31.
//     2. A phase with no active lane costs nothing. For any other phase, take the set of distinct
//        32-bit words (word = address / 4) the phase's active lanes cover (a lane covers the words
//        of [address, address + size)); the phase costs the largest number of distinct words that
//        fall in one bank (word % 32), i.e. 1 without conflicts, n for an n-way conflict.
//     3. The request costs the sum over its phases; 0 if no lane is active.
//   Reads and writes are counted alike. Known simplification: Volta/Turing can pack the returns of
//   some 64/128-bit loads whose lanes share addresses pairwise (lane n with n^1 or n^2) into fewer
//   wavefronts (NVIDIA forum answer on "uniform addresses"); this model does not credit that, so a
//   64-bit broadcast is 2 wavefronts and a 128-bit broadcast 4 here.
//
// ldmatrix / stmatrix (ldmatrix_wavefronts).
//   ldmatrix.m8n8.x{1,2,4}.b16 reads 1, 2 or 4 8x8 matrices of 16-bit elements; the eight rows of
//   matrix i (16 bytes each) are addressed by lanes 8i..8i+7 (PTX ISA, "Warp-level matrix load
//   instruction: ldmatrix"). Each matrix's eight 16-byte row reads form one phase (8 x 16 = 128
//   bytes), i.e. exactly the quarter-warp phases of a 128-bit access above, restricted to the lanes
//   that supply addresses: x4 without conflicts is 4 wavefronts; rows of one matrix whose 16-byte
//   chunks fall on the same four banks (row stride a multiple of 128 bytes) are an 8-way conflict,
//   which an XOR swizzle of the chunk index by the row (chunk ^ row % 8) removes. The .trans
//   variant reads the same rows, so it counts the same.
//
// Addresses: any byte address works (the bank of a 128-byte-aligned base is 0, so a simulator may
// pass shared-window generic addresses or offsets into the CTA's shared memory alike).
//
// Unique bytes (SectorSet): the distinct 32-byte sectors a launch touched; unique_bytes() is
// 32 x that count (the granularity is the sector, as for Metrics::global_unique_bytes: a 4-byte
// read counts its whole sector once). Ranges given up front (the launch's buffers) get one bit per
// sector in a bitmap of atomic words (1 MiB of bitmap per 256 MiB of buffer); recording sets bits
// with a relaxed read first and a fetch_or only when the bit is clear, so concurrent CTAs on many
// host threads share it without locks. Sectors outside every range go to a hash set under a mutex
// (a slow path; the simulator's sanitizer rejects such accesses anyway).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_set>
#include <utility>
#include <vector>

namespace gemmlab::ptx::sim {

inline constexpr std::uint64_t sector_bytes = 32;
inline constexpr int shared_banks = 32;
inline constexpr std::uint64_t shared_bank_bytes = 4;

// The lanes' byte addresses of one warp-wide instruction (entries of inactive lanes are ignored).
using WarpAddresses = std::span<const std::uint64_t, 32>;

// Distinct 32-byte sectors covered by the active lanes' bytes [address, address + size).
// `size`: bytes per lane, 1, 2, 4, 8 or 16 (std::invalid_argument otherwise). 0 if mask is 0.
int global_sectors(WarpAddresses addresses, std::uint32_t active_mask, unsigned size);

// Wavefronts of one shared-memory request under the rule above (phases by access size, the
// largest count of distinct 32-bit words in one bank per phase, summed). 0 if mask is 0.
// `size`: bytes per lane, 1, 2, 4, 8 or 16 (std::invalid_argument otherwise).
int shared_wavefronts(WarpAddresses addresses, std::uint32_t active_mask, unsigned size);

// The fewest wavefronts the access width allows for these active lanes: the number of phases that
// hold an active lane (shared_wavefronts minus this is the bank-conflict excess).
int shared_ideal_wavefronts(std::uint32_t active_mask, unsigned size);

// Wavefronts of ldmatrix/stmatrix .m8n8 with `matrices` = 1, 2 or 4 (std::invalid_argument
// otherwise): lanes 0..8*matrices-1 hold the 16-byte row addresses, one phase per matrix.
int ldmatrix_wavefronts(WarpAddresses row_addresses, int matrices);

// The set of 32-byte sectors touched over a launch. Thread-safe: any number of threads may record
// concurrently; the counts are exact once they have finished.
class SectorSet {
 public:
  struct Range {
    std::uint64_t begin = 0, end = 0;  // bytes [begin, end)
  };

  // Ranges to cover with bitmaps (overlapping or adjacent ranges are merged at sector
  // granularity, so a sector is counted once whichever range it is reached through). With none,
  // every sector goes to the hash set.
  explicit SectorSet(std::span<const Range> ranges = {});
  SectorSet(SectorSet&&) noexcept;
  SectorSet& operator=(SectorSet&&) noexcept;
  SectorSet(const SectorSet&) = delete;
  SectorSet& operator=(const SectorSet&) = delete;
  ~SectorSet();

  // Records the sectors of bytes [address, address + bytes) (nothing for bytes == 0).
  void record(std::uint64_t address, std::uint64_t bytes);
  // Records the sectors of a warp-wide access (the active lanes, `size` bytes each).
  void record(WarpAddresses addresses, std::uint32_t active_mask, unsigned size);

  std::uint64_t unique_sectors() const;
  std::uint64_t unique_bytes() const { return unique_sectors() * sector_bytes; }
  // Sectors recorded outside every range (held in the hash set).
  std::uint64_t sectors_outside_ranges() const;
  // Forgets every recorded sector (not concurrently with record()).
  void clear();

 private:
  struct Bitmap {
    std::uint64_t first_sector = 0, end_sector = 0;  // [first, end)
    std::unique_ptr<std::atomic<std::uint64_t>[]> words;
    std::size_t word_count = 0;
  };
  struct Overflow {
    std::mutex mutex;
    std::unordered_set<std::uint64_t> sectors;
  };
  void record_sector(std::uint64_t sector);

  std::vector<Bitmap> bitmaps_;  // sorted by first_sector, disjoint
  std::unique_ptr<Overflow> overflow_;
};

}  // namespace gemmlab::ptx::sim
