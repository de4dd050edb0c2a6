#include "gemmlab/buffer.hpp"
#include "gemmlab/device.hpp"

#include <sys/mman.h>

#include <new>

namespace gemmlab {

namespace {
class HostMemory final : public DeviceBuffer {
 public:
  explicit HostMemory(std::size_t bytes) : bytes_(bytes), memory_(aligned_bytes(bytes)) {}
  void* data() override { return memory_.get(); }
  std::size_t bytes() const override { return bytes_; }

 private:
  std::size_t bytes_;
  std::unique_ptr<std::byte, AlignedFree> memory_;
};
}  // namespace

std::unique_ptr<DeviceBuffer> allocate_host_buffer(std::size_t bytes) { return std::make_unique<HostMemory>(bytes); }

std::unique_ptr<std::byte, AlignedFree> aligned_bytes(std::size_t bytes) {
  std::size_t rounded = (bytes + buffer_alignment - 1) / buffer_alignment * buffer_alignment;
  if (rounded == 0) rounded = buffer_alignment;
  void* p = std::aligned_alloc(buffer_alignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return std::unique_ptr<std::byte, AlignedFree>(static_cast<std::byte*>(p));
}

std::unique_ptr<std::byte, AlignedFree> huge_page_bytes(std::size_t bytes) {
  constexpr std::size_t huge = std::size_t{2} << 20;
  if (bytes < huge / 2) return aligned_bytes(bytes);
  const std::size_t rounded = (bytes + huge - 1) / huge * huge;
  void* p = std::aligned_alloc(huge, rounded);
  if (p == nullptr) throw std::bad_alloc();
  madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure leaves small pages
  return std::unique_ptr<std::byte, AlignedFree>(static_cast<std::byte*>(p));
}

namespace {
class Xoshiro256 {
 public:
  explicit Xoshiro256(std::uint64_t seed) {
    for (auto& s : state_) s = splitmix(seed);
  }
  std::uint64_t next() {
    std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  // Uniform in [-1, 1] with 53 random bits.
  double next_signed_unit() { return static_cast<double>(next() >> 11) * 0x1p-52 - 1.0; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t state_[4];
};

template <class T>
void fill(std::span<T> values, std::uint64_t seed) {
  Xoshiro256 rng(seed);
  for (auto& v : values) v = static_cast<T>(rng.next_signed_unit());
}
}  // namespace

void fill_uniform(std::span<float> values, std::uint64_t seed) { fill(values, seed); }
void fill_uniform(std::span<double> values, std::uint64_t seed) { fill(values, seed); }

}  // namespace gemmlab
