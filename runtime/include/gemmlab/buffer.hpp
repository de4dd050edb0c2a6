// Host memory: 64-byte aligned buffers (one cache line, one AVX-512 register) and a seeded fill,
// so every run of every program sees the same matrices for the same seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

namespace gemmlab {

inline constexpr std::size_t buffer_alignment = 64;

struct AlignedFree {
  void operator()(void* p) const noexcept { std::free(p); }
};

// Allocates `bytes` (at least one byte) aligned to 64; throws std::bad_alloc on failure.
std::unique_ptr<std::byte, AlignedFree> aligned_bytes(std::size_t bytes);

// As aligned_bytes, for large work buffers that are streamed through many times (packed
// panels): 2 MiB aligned and marked for transparent huge pages, so that walking them costs few
// TLB entries. Falls back to small pages where the OS declines.
std::unique_ptr<std::byte, AlignedFree> huge_page_bytes(std::size_t bytes);

template <class T>
class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(std::size_t count)
      : count_(count), memory_(aligned_bytes(count * sizeof(T))) {}
  T* data() { return reinterpret_cast<T*>(memory_.get()); }
  const T* data() const { return reinterpret_cast<const T*>(memory_.get()); }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  std::span<T> span() { return {data(), count_}; }
  std::span<const T> span() const { return {data(), count_}; }

 private:
  std::size_t count_ = 0;
  std::unique_ptr<std::byte, AlignedFree> memory_;
};

// Uniform in [-1, 1], deterministic for a given seed (xoshiro256**, independent of the standard
// library's distributions, which differ between implementations).
void fill_uniform(std::span<float> values, std::uint64_t seed);
void fill_uniform(std::span<double> values, std::uint64_t seed);

}  // namespace gemmlab
