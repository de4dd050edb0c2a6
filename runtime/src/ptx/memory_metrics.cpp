// Memory-access metrics of the PTX simulator (memory_metrics.hpp states the rules and sources).
#include "memory_metrics.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <stdexcept>
#include <string>

namespace gemmlab::ptx::sim {

namespace {

void check_size(unsigned size) {
  if (size != 1 && size != 2 && size != 4 && size != 8 && size != 16)
    throw std::invalid_argument("memory access size must be 1, 2, 4, 8 or 16 bytes per lane, not " +
                                std::to_string(size));
}

// Lanes per shared-memory phase: at most 128 bytes move per wavefront.
unsigned lanes_per_phase(unsigned size) { return size <= 4 ? 32u : 128u / size; }

std::uint32_t phase_mask(unsigned phase, unsigned lanes) {
  const std::uint32_t ones = lanes == 32 ? ~0u : ((1u << lanes) - 1u);
  return ones << (phase * lanes);
}

// The wavefronts of one phase: the largest number of distinct 32-bit words in one bank. Each
// bank keeps the distinct words seen so far (a linear search: one or two entries without
// conflicts, at most 32 in the worst case), which is cheaper than sorting the words.
int phase_wavefronts_slow(WarpAddresses addresses, std::uint32_t lanes, unsigned size) {
  std::array<std::uint8_t, shared_banks> count{};
  std::array<std::array<std::uint64_t, 64>, shared_banks> seen;  // a phase covers <= 64 words
  int worst = 0;
  for (std::uint32_t m = lanes; m != 0; m &= m - 1) {
    const std::uint64_t a = addresses[static_cast<std::size_t>(std::countr_zero(m))];
    const std::uint64_t first = a / shared_bank_bytes, last = (a + size - 1) / shared_bank_bytes;
    for (std::uint64_t w = first; w <= last; ++w) {
      const auto bank = static_cast<std::size_t>(w % shared_banks);
      std::uint8_t& n = count[bank];
      auto& words = seen[bank];
      bool found = false;
      for (std::uint8_t i = 0; i < n && !found; ++i) found = words[i] == w;
      if (found) continue;
      words[n++] = w;
      worst = std::max(worst, static_cast<int>(n));
    }
  }
  return worst;
}

// The common case first: every bank holds at most one distinct word (conflict-free, broadcasts
// included) -> 1; at the first bank asked for a second word, the general count above.
int phase_wavefronts(WarpAddresses addresses, std::uint32_t lanes, unsigned size) {
  std::array<std::uint64_t, shared_banks> word_of_bank;
  std::uint32_t used = 0;
  for (std::uint32_t m = lanes; m != 0; m &= m - 1) {
    const std::uint64_t a = addresses[static_cast<std::size_t>(std::countr_zero(m))];
    const std::uint64_t first = a / shared_bank_bytes, last = (a + size - 1) / shared_bank_bytes;
    for (std::uint64_t w = first; w <= last; ++w) {
      const auto bank = static_cast<unsigned>(w % shared_banks);
      const std::uint32_t bit = 1u << bank;
      if ((used & bit) == 0) {
        used |= bit;
        word_of_bank[bank] = w;
      } else if (word_of_bank[bank] != w) {
        return phase_wavefronts_slow(addresses, lanes, size);
      }
    }
  }
  return used != 0 ? 1 : 0;
}

// Sorts a few values in place (insertion sort: the lanes' sectors mostly arrive in order).
void sort_small(std::uint64_t* v, std::size_t n) {
  for (std::size_t i = 1; i < n; ++i) {
    const std::uint64_t x = v[i];
    std::size_t j = i;
    for (; j > 0 && v[j - 1] > x; --j) v[j] = v[j - 1];
    v[j] = x;
  }
}

}  // namespace

int global_sectors(WarpAddresses addresses, std::uint32_t active_mask, unsigned size) {
  check_size(size);
  // A lane of <= 16 bytes spans at most 2 sectors. Neighbouring lanes usually share a sector, so
  // repeats of the last sector are dropped on the way in and only the rest is sorted.
  std::array<std::uint64_t, 64> sectors;
  std::size_t n = 0;
  for (std::uint32_t m = active_mask; m != 0; m &= m - 1) {
    const std::uint64_t a = addresses[static_cast<std::size_t>(std::countr_zero(m))];
    const std::uint64_t first = a / sector_bytes, last = (a + size - 1) / sector_bytes;
    if (n == 0 || sectors[n - 1] != first) sectors[n++] = first;
    if (last != first) sectors[n++] = last;
  }
  sort_small(sectors.data(), n);
  return static_cast<int>(std::unique(sectors.begin(), sectors.begin() + static_cast<std::ptrdiff_t>(n)) -
                          sectors.begin());
}

int shared_wavefronts(WarpAddresses addresses, std::uint32_t active_mask, unsigned size) {
  check_size(size);
  const unsigned lanes = lanes_per_phase(size);
  int total = 0;
  for (unsigned phase = 0; phase < 32 / lanes; ++phase) {
    const std::uint32_t in_phase = active_mask & phase_mask(phase, lanes);
    if (in_phase != 0) total += phase_wavefronts(addresses, in_phase, size);
  }
  return total;
}

int shared_ideal_wavefronts(std::uint32_t active_mask, unsigned size) {
  check_size(size);
  const unsigned lanes = lanes_per_phase(size);
  int total = 0;
  for (unsigned phase = 0; phase < 32 / lanes; ++phase)
    if ((active_mask & phase_mask(phase, lanes)) != 0) ++total;
  return total;
}

int ldmatrix_wavefronts(WarpAddresses row_addresses, int matrices) {
  if (matrices != 1 && matrices != 2 && matrices != 4)
    throw std::invalid_argument("ldmatrix reads 1, 2 or 4 matrices, not " + std::to_string(matrices));
  const std::uint32_t lanes = matrices == 4 ? ~0u : ((1u << (8 * matrices)) - 1u);
  return shared_wavefronts(row_addresses, lanes, 16);
}

// ---------------------------------------------------------------------------------------------
// SectorSet

SectorSet::SectorSet(std::span<const Range> ranges) : overflow_(std::make_unique<Overflow>()) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;  // sector [first, end)
  for (const Range& r : ranges) {
    if (r.end <= r.begin) continue;
    spans.emplace_back(r.begin / sector_bytes, (r.end - 1) / sector_bytes + 1);
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, s.second);
    else
      merged.push_back(s);
  }
  for (const auto& [first, end] : merged) {
    Bitmap b;
    b.first_sector = first;
    b.end_sector = end;
    b.word_count = static_cast<std::size_t>((end - first + 63) / 64);
    b.words = std::make_unique<std::atomic<std::uint64_t>[]>(b.word_count);  // zeroed
    bitmaps_.push_back(std::move(b));
  }
}

SectorSet::SectorSet(SectorSet&&) noexcept = default;
SectorSet& SectorSet::operator=(SectorSet&&) noexcept = default;
SectorSet::~SectorSet() = default;

void SectorSet::record_sector(std::uint64_t sector) {
  // The bitmap whose range holds the sector: the last one beginning at or before it.
  auto it = std::upper_bound(bitmaps_.begin(), bitmaps_.end(), sector,
                             [](std::uint64_t s, const Bitmap& b) { return s < b.first_sector; });
  if (it != bitmaps_.begin()) {
    const Bitmap& b = *(it - 1);
    if (sector < b.end_sector) {
      const std::uint64_t i = sector - b.first_sector;
      std::atomic<std::uint64_t>& word = b.words[static_cast<std::size_t>(i / 64)];
      const std::uint64_t bit = std::uint64_t{1} << (i % 64);
      // Read first: after the first touch, the common case writes nothing and keeps the cache
      // line shared between the threads.
      if ((word.load(std::memory_order_relaxed) & bit) == 0) word.fetch_or(bit, std::memory_order_relaxed);
      return;
    }
  }
  const std::lock_guard<std::mutex> lock(overflow_->mutex);
  overflow_->sectors.insert(sector);
}

void SectorSet::record(std::uint64_t address, std::uint64_t bytes) {
  if (bytes == 0) return;
  const std::uint64_t first = address / sector_bytes, last = (address + bytes - 1) / sector_bytes;
  for (std::uint64_t s = first; s <= last; ++s) record_sector(s);
}

void SectorSet::record(WarpAddresses addresses, std::uint32_t active_mask, unsigned size) {
  check_size(size);
  std::uint64_t previous = ~std::uint64_t{0};  // consecutive lanes usually share a sector
  for (std::uint32_t m = active_mask; m != 0; m &= m - 1) {
    const std::uint64_t a = addresses[static_cast<std::size_t>(std::countr_zero(m))];
    const std::uint64_t first = a / sector_bytes, last = (a + size - 1) / sector_bytes;
    for (std::uint64_t s = first; s <= last; ++s) {
      if (s == previous) continue;
      record_sector(s);
      previous = s;
    }
  }
}

std::uint64_t SectorSet::unique_sectors() const {
  std::uint64_t n = 0;
  for (const Bitmap& b : bitmaps_)
    for (std::size_t i = 0; i < b.word_count; ++i)
      n += static_cast<std::uint64_t>(std::popcount(b.words[i].load(std::memory_order_relaxed)));
  return n + sectors_outside_ranges();
}

std::uint64_t SectorSet::sectors_outside_ranges() const {
  if (!overflow_) return 0;  // moved from
  const std::lock_guard<std::mutex> lock(overflow_->mutex);
  return overflow_->sectors.size();
}

void SectorSet::clear() {
  for (Bitmap& b : bitmaps_)
    for (std::size_t i = 0; i < b.word_count; ++i) b.words[i].store(0, std::memory_order_relaxed);
  if (overflow_) {
    const std::lock_guard<std::mutex> lock(overflow_->mutex);
    overflow_->sectors.clear();
  }
}

}  // namespace gemmlab::ptx::sim
