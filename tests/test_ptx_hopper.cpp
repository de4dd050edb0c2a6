// Golden tests of the simulator's Hopper pieces (ptx/hopper.hpp). The expected values come from
// the PTX ISA and the driver documentation, worked out by hand or written here directly from
// their text, not from the implementation:
//   - "Matrix Descriptor Format" (wgmma): start address bits 0-13, LBO 16-29, SBO 32-45, base
//     offset 49-51, swizzle mode 62-63 (0 none, 1 128B, 2 64B, 3 32B), addresses and offsets
//     stored as (x & 0x3FFFF) >> 4.
//   - "Shared Memory Matrix Layout" and "Strides": imm-trans 0 = K-major, 1 = M/N-major; swizzle
//     atoms of 8 rows x 128 bytes (128B mode), the 16-byte chunk p of row r of an atom stored at
//     chunk position p ^ r; K-major: SBO from one 8-row group to the next, LBO unused when
//     swizzled, the K step between core matrices when not; MN-major swizzled: LBO from one atom
//     along M/N to the next, SBO from one group of 8 k to the next; not swizzled: core matrices of
//     8 rows x 16 bytes.
//   - Figure "WGMMA .m64nNk16 register fragment layout for accumulator matrix D".
//   - cuTensorMapEncodeTiled (cuda.h): the requirements on its parameters, SWIZZLE_128B = 16-byte
//     chunks swizzled within a 128-byte span; cp.async.bulk.tensor: zero fill outside the tensor,
//     complete_tx counts the whole box.
//   - "mbarrier": phases, pending arrivals, tx-count, completion when both reach zero, test_wait
//     and the parity of the current or preceding phase.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "gemmlab/validate.hpp"
#include "ptx/fault.hpp"
#include "ptx/hopper.hpp"

namespace gemmlab::ptx::sim {
namespace {

// ---- helpers written from the ISA text ---------------------------------------------------------------

// A descriptor per "Matrix Descriptor Format" (mode: 0 none, 1 128B, 2 64B, 3 32B).
std::uint64_t descriptor(std::uint32_t start, std::uint32_t lbo, std::uint32_t sbo, std::uint64_t mode,
                         std::uint64_t base_offset = 0) {
  return std::uint64_t{(start & 0x3FFFFu) >> 4} | std::uint64_t{(lbo & 0x3FFFFu) >> 4} << 16 |
         std::uint64_t{(sbo & 0x3FFFFu) >> 4} << 32 | base_offset << 49 | mode << 62;
}

// Byte offsets (from a 1024-byte aligned base) of element (mn, k) of a 16-bit operand.
// K-major, 128-byte swizzle: row mn%8 of atom mn/8 (atoms SBO apart), 16-byte chunk k/8 stored at
// chunk position (k/8) ^ (mn%8).
std::uint32_t k_major_sw128(std::uint32_t mn, std::uint32_t k, std::uint32_t sbo) {
  return (mn / 8) * sbo + (mn % 8) * 128 + (((k / 8) ^ (mn % 8)) * 16) + (k % 8) * 2;
}
// MN-major, 128-byte swizzle: atoms of 8 k-rows x 64 elements; atom mn/64 LBO apart, k/8 SBO apart;
// row k%8, chunk (mn%64)/8 stored at position ((mn%64)/8) ^ (k%8).
std::uint32_t mn_major_sw128(std::uint32_t mn, std::uint32_t k, std::uint32_t lbo, std::uint32_t sbo) {
  return (mn / 64) * lbo + (k / 8) * sbo + (k % 8) * 128 + ((((mn % 64) / 8) ^ (k % 8)) * 16) + (mn % 8) * 2;
}
// K-major, no swizzle: core matrices of 8 rows (mn) x 16 bytes (8 k); SBO along mn, LBO along k.
std::uint32_t k_major_plain(std::uint32_t mn, std::uint32_t k, std::uint32_t lbo, std::uint32_t sbo) {
  return (mn / 8) * sbo + (k / 8) * lbo + (mn % 8) * 16 + (k % 8) * 2;
}
// MN-major, no swizzle: core matrices of 8 rows (k) x 16 bytes (8 mn); SBO along mn, LBO along k.
std::uint32_t mn_major_plain(std::uint32_t mn, std::uint32_t k, std::uint32_t lbo, std::uint32_t sbo) {
  return (mn / 8) * sbo + (k / 8) * lbo + (k % 8) * 16 + (mn % 8) * 2;
}

// The accumulator figure: warp w holds rows 16w..16w+15; lane l holds d0,d1 at row l/4, columns
// 2*(l%4), +1; d2,d3 at row l/4 + 8; the pattern repeats every 8 columns with the next 4 registers.
std::pair<std::uint32_t, std::uint32_t> figure_coord(std::uint32_t thread, std::uint32_t reg) {
  const std::uint32_t warp = thread / 32, lane = thread % 32;
  const std::uint32_t row = 16 * warp + lane / 4 + ((reg / 2) % 2) * 8;
  const std::uint32_t col = 8 * (reg / 4) + 2 * (lane % 4) + reg % 2;
  return {row, col};
}

void put16(std::vector<std::byte>& mem, std::size_t address, std::uint16_t bits) {
  mem.at(address) = static_cast<std::byte>(bits & 0xFF);
  mem.at(address + 1) = static_cast<std::byte>(bits >> 8);
}

std::uint16_t get16(const std::vector<std::byte>& mem, std::size_t address) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(mem.at(address)) |
                                    std::to_integer<unsigned>(mem.at(address + 1)) << 8);
}

std::uint16_t encode(WgmmaType t, double v) { return t == WgmmaType::f16 ? to_fp16(v) : to_bf16(v); }

// Small values whose products and sums of 16 are exact in fp32 (multiples of 0.25 below 2^10).
double a_value(std::uint32_t m, std::uint32_t k) { return static_cast<double>((m * 3 + k * 5) % 7) - 3.0; }
double b_value(std::uint32_t k, std::uint32_t n) { return (static_cast<double>((k * 7 + n * 3) % 9) - 4.0) * 0.5; }
double d_value(std::uint32_t row, std::uint32_t col) {
  return static_cast<double>(row % 5) - static_cast<double>(col % 3) * 0.25;
}

// ---- swizzle -----------------------------------------------------------------------------------------

TEST(PtxHopperSwizzle, AddressesWorkedOutByHand) {
  // 128B: chunk bits 4-6 XOR row bits 7-9.
  EXPECT_EQ(swizzle_address(0x0000, Swizzle::bytes128), 0x0000u);
  EXPECT_EQ(swizzle_address(0x0090, Swizzle::bytes128), 0x0080u);  // row 1, chunk 1 -> chunk 0
  EXPECT_EQ(swizzle_address(0x0080, Swizzle::bytes128), 0x0090u);  // row 1, chunk 0 -> chunk 1
  EXPECT_EQ(swizzle_address(0x03F0, Swizzle::bytes128), 0x0380u);  // row 7, chunk 7 -> chunk 0
  EXPECT_EQ(swizzle_address(0x02A6, Swizzle::bytes128), 0x02F6u);  // row 5, chunk 2 -> 7, byte 6
  EXPECT_EQ(swizzle_address(0x0415, Swizzle::bytes128), 0x0415u);  // next 1 KiB block, row 0
  EXPECT_EQ(swizzle_address(0x0C9F, Swizzle::bytes128), 0x0C8Fu);  // block 3, row 1, chunk 1 -> 0
  // 64B: chunk bits 4-5 XOR bits 7-8.
  EXPECT_EQ(swizzle_address(0x00D0, Swizzle::bytes64), 0x00C0u);
  EXPECT_EQ(swizzle_address(0x0150, Swizzle::bytes64), 0x0170u);
  EXPECT_EQ(swizzle_address(0x0040, Swizzle::bytes64), 0x0040u);
  // 32B: bit 4 XOR bit 7.
  EXPECT_EQ(swizzle_address(0x0080, Swizzle::bytes32), 0x0090u);
  EXPECT_EQ(swizzle_address(0x00B0, Swizzle::bytes32), 0x00A0u);
  EXPECT_EQ(swizzle_address(0x0070, Swizzle::bytes32), 0x0070u);
  EXPECT_EQ(swizzle_address(0x1234, Swizzle::none), 0x1234u);
  EXPECT_EQ(swizzle_span(Swizzle::bytes128), 128u);
  EXPECT_EQ(swizzle_repeat(Swizzle::bytes128), 1024u);
  EXPECT_EQ(swizzle_repeat(Swizzle::bytes64), 512u);
  EXPECT_EQ(swizzle_repeat(Swizzle::bytes32), 256u);
}

// ---- descriptors -------------------------------------------------------------------------------------

TEST(PtxHopperDescriptor, DecodesHandBuiltValues) {
  // Start 0x400 (field 0x40), LBO 16 (1), SBO 1024 (64), 128B swizzle: the kernels' A descriptor.
  MatrixDescriptor d = decode_matrix_descriptor(0x4000004000010040ull);
  EXPECT_EQ(d.start_address, 0x400u);
  EXPECT_EQ(d.leading_byte_offset, 16u);
  EXPECT_EQ(d.stride_byte_offset, 1024u);
  EXPECT_EQ(d.base_offset, 0u);
  EXPECT_EQ(d.swizzle, Swizzle::bytes128);

  // Start field 0x3FFF (0x3FFF0 bytes), LBO field 0x200 (8192), SBO 0x40 (1024), base offset 5, 64B.
  d = decode_matrix_descriptor(0x800A004002003FFFull);
  EXPECT_EQ(d.start_address, 0x3FFF0u);
  EXPECT_EQ(d.leading_byte_offset, 8192u);
  EXPECT_EQ(d.stride_byte_offset, 1024u);
  EXPECT_EQ(d.base_offset, 5u);
  EXPECT_EQ(d.swizzle, Swizzle::bytes64);

  d = decode_matrix_descriptor(0xC000000800080010ull);  // 32B; LBO 128, SBO 128, start 0x100
  EXPECT_EQ(d.swizzle, Swizzle::bytes32);
  EXPECT_EQ(d.start_address, 0x100u);
  EXPECT_EQ(d.leading_byte_offset, 128u);
  EXPECT_EQ(d.stride_byte_offset, 128u);

  d = decode_matrix_descriptor(0x0000001000080020ull);  // no swizzle; start 0x200, LBO 128, SBO 256
  EXPECT_EQ(d.swizzle, Swizzle::none);
  EXPECT_EQ(d.start_address, 0x200u);
  EXPECT_EQ(d.leading_byte_offset, 128u);
  EXPECT_EQ(d.stride_byte_offset, 256u);

  // The test's own encoder agrees with the hand-built value.
  EXPECT_EQ(descriptor(0x400, 16, 1024, 1), 0x4000004000010040ull);
}

TEST(PtxHopperDescriptor, UnusedBitsFault) {
  for (int bit : {14, 15, 30, 31, 46, 47, 48, 52, 57, 61})
    EXPECT_THROW(decode_matrix_descriptor(0x4000004000010040ull | 1ull << bit), Fault) << "bit " << bit;
  // An LBO of 16 KiB written in bytes instead of 16-byte units lands in bits 30-31.
  EXPECT_THROW(decode_matrix_descriptor(std::uint64_t{16384} << 16), Fault);
}

TEST(PtxHopperDescriptor, OperandAddressesOfTheKernelsLayouts) {
  // A (K-major, 128B, SBO 1024) as kernel 11 stages it: element (m, k') of the 64-column stage at
  // m*128 + ((k'/8) ^ (m%8))*16 + (k'%8)*2; k-step kk starts 32*kk bytes into the rows.
  const MatrixDescriptor a0 = decode_matrix_descriptor(descriptor(0, 16, 1024, 1));
  EXPECT_EQ(wgmma_a_address(a0, 0, 9, 3), 1152u + 16 + 6);                          // 1174
  const MatrixDescriptor a2 = decode_matrix_descriptor(descriptor(64, 16, 1024, 1));
  EXPECT_EQ(wgmma_a_address(a2, 0, 9, 3), 1152u + ((35 / 8) ^ 1) * 16 + 3 * 2);      // k' = 35: 1238
  EXPECT_EQ(wgmma_a_address(a2, 0, 63, 15), 63u * 128 + ((47 / 8) ^ 7) * 16 + 7 * 2);      // k' = 47

  // B (N-major, 128B, LBO 8192 between 64-column chunks, SBO 1024): element (k', n) at
  // (n/64)*8192 + k'*128 + (((n%64)/8) ^ (k'%8))*16 + (n%8)*2; k-step 1 starts 2048 bytes in.
  const MatrixDescriptor b1 = decode_matrix_descriptor(descriptor(2048, 8192, 1024, 1));
  EXPECT_EQ(wgmma_b_address(b1, 1, 128, 10, 70), 8192u + 26 * 128 + (0 ^ 2) * 16 + 6 * 2);  // 11564
  EXPECT_EQ(wgmma_b_address(b1, 1, 256, 15, 255), 3u * 8192 + 31 * 128 + (7 ^ 7) * 16 + 7 * 2);

  // No swizzle, K-major: (m%8)*16 + (m/8)*SBO + (k%8)*2 + (k/8)*LBO after the start.
  const MatrixDescriptor plain = decode_matrix_descriptor(descriptor(256, 128, 256, 0));
  EXPECT_EQ(wgmma_a_address(plain, 0, 10, 9), 256u + 32 + 256 + 2 + 128);  // 674
  // No swizzle, N-major B: (n%8)*2 + (n/8)*SBO + (k%8)*16 + (k/8)*LBO.
  const MatrixDescriptor plain0 = decode_matrix_descriptor(descriptor(0, 128, 256, 0));
  EXPECT_EQ(wgmma_b_address(plain0, 1, 16, 9, 11), 6u + 256 + 16 + 128);  // 406

  EXPECT_THROW(wgmma_a_address(a0, 0, 64, 0), std::out_of_range);
  EXPECT_THROW(wgmma_b_address(b1, 1, 64, 0, 64), std::out_of_range);
  EXPECT_THROW(wgmma_a_address(a0, 2, 0, 0), Fault);
  // A base offset with a swizzle: not supported, said so.
  EXPECT_THROW(wgmma_a_address(decode_matrix_descriptor(descriptor(0x80, 16, 1024, 1, 1)), 0, 0, 0), Fault);
}

// ---- the accumulator fragment ------------------------------------------------------------------------

TEST(PtxHopperWgmma, AccumulatorEntriesOfTheFigure) {
  struct Entry {
    std::uint32_t thread, reg, n, row, col;
  };
  const Entry entries[] = {
      {0, 0, 64, 0, 0},   {0, 1, 64, 0, 1},   {0, 2, 64, 8, 0},     {0, 3, 64, 8, 1},
      {0, 4, 64, 0, 8},   {0, 5, 64, 0, 9},   {0, 6, 64, 8, 8},     {1, 0, 64, 0, 2},
      {3, 1, 64, 0, 7},   {4, 0, 64, 1, 0},   {31, 3, 64, 15, 7},   {32, 0, 64, 16, 0},
      {64, 2, 64, 40, 0}, {127, 31, 64, 63, 63}, {127, 127, 256, 63, 255}, {5, 9, 8 * 3, 1, 19},
  };
  for (const Entry& e : entries) {
    const FragmentCoord c = wgmma_accumulator_coord(e.thread, e.reg, e.n);
    EXPECT_EQ(c.row, e.row) << "thread " << e.thread << " d" << e.reg;
    EXPECT_EQ(c.col, e.col) << "thread " << e.thread << " d" << e.reg;
  }
}

TEST(PtxHopperWgmma, AccumulatorsCoverTheTileOnce) {
  for (std::uint32_t n = 8; n <= 256; n += 8) {
    std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
    for (std::uint32_t t = 0; t < 128; ++t)
      for (std::uint32_t r = 0; r < n / 2; ++r) {
        const FragmentCoord c = wgmma_accumulator_coord(t, r, n);
        EXPECT_EQ(std::make_pair(c.row, c.col), figure_coord(t, r));
        ASSERT_LT(c.row, 64u);
        ASSERT_LT(c.col, n);
        seen.insert({c.row, c.col});
      }
    EXPECT_EQ(seen.size(), 64u * n) << "N = " << n;
  }
  EXPECT_THROW(wgmma_accumulator_coord(0, 0, 12), Fault);
  EXPECT_THROW(wgmma_accumulator_coord(0, 0, 264), Fault);
  EXPECT_THROW(wgmma_accumulator_coord(0, 0, 0), Fault);
  EXPECT_THROW(wgmma_accumulator_coord(128, 0, 64), std::out_of_range);
  EXPECT_THROW(wgmma_accumulator_coord(0, 32, 64), std::out_of_range);
}

// ---- wgmma products ----------------------------------------------------------------------------------

enum class BLayout { k_major_sw128, n_major_sw128 };

struct ProductCase {
  WgmmaType type;
  std::uint32_t n;
  BLayout b_layout;
  bool scale_d;
  int scale_a, scale_b;
};

// Lays A and B out in shared memory as the ISA's canonical layouts say, runs one wgmma and compares
// every accumulator with a triple loop (exact: the values keep every sum exact in fp32).
void check_product(const ProductCase& pc) {
  const std::uint32_t n = pc.n, a_base = 0, b_base = 16384;
  std::vector<std::byte> shared(65536, std::byte{0x5A});
  for (std::uint32_t m = 0; m < 64; ++m)
    for (std::uint32_t k = 0; k < 16; ++k) put16(shared, a_base + k_major_sw128(m, k, 1024), encode(pc.type, a_value(m, k)));
  Wgmma op;
  op.n = n;
  op.a_type = op.b_type = pc.type;
  op.a_desc = descriptor(a_base, 16, 1024, 1);
  op.scale_d = pc.scale_d;
  op.scale_a = pc.scale_a;
  op.scale_b = pc.scale_b;
  op.trans_a = 0;
  for (std::uint32_t k = 0; k < 16; ++k)
    for (std::uint32_t j = 0; j < n; ++j) {
      const std::uint32_t offset =
          pc.b_layout == BLayout::k_major_sw128 ? k_major_sw128(j, k, 1024) : mn_major_sw128(j, k, 8192, 1024);
      put16(shared, b_base + offset, encode(pc.type, b_value(k, j)));
    }
  if (pc.b_layout == BLayout::k_major_sw128) {
    op.b_desc = descriptor(b_base, 16, 1024, 1);
    op.trans_b = 0;
  } else {
    op.b_desc = descriptor(b_base, 8192, 1024, 1);
    op.trans_b = 1;
  }

  std::vector<float> d(128 * n / 2);
  for (std::uint32_t t = 0; t < 128; ++t)
    for (std::uint32_t r = 0; r < n / 2; ++r) {
      const auto [row, col] = figure_coord(t, r);
      d[t * n / 2 + r] = pc.scale_d ? static_cast<float>(d_value(row, col)) : std::numeric_limits<float>::quiet_NaN();
    }
  wgmma_mma_async(op, shared, d);

  for (std::uint32_t t = 0; t < 128; ++t)
    for (std::uint32_t r = 0; r < n / 2; ++r) {
      const auto [row, col] = figure_coord(t, r);
      double expected = pc.scale_d ? d_value(row, col) : 0.0;
      for (std::uint32_t k = 0; k < 16; ++k) expected += pc.scale_a * a_value(row, k) * pc.scale_b * b_value(k, col);
      ASSERT_EQ(static_cast<double>(d[t * n / 2 + r]), expected)
          << "N " << n << " row " << row << " col " << col << " (thread " << t << ", d" << r << ")";
    }
}

TEST(PtxHopperWgmma, KMajorSwizzled128N64F16) {
  check_product({WgmmaType::f16, 64, BLayout::k_major_sw128, true, 1, 1});
}
TEST(PtxHopperWgmma, KMajorSwizzled128N256Bf16) {
  check_product({WgmmaType::bf16, 256, BLayout::k_major_sw128, true, 1, 1});
}
TEST(PtxHopperWgmma, KMajorSwizzled128N256F16) {
  check_product({WgmmaType::f16, 256, BLayout::k_major_sw128, true, 1, 1});
}
TEST(PtxHopperWgmma, KMajorSwizzled128N64Bf16) {
  check_product({WgmmaType::bf16, 64, BLayout::k_major_sw128, true, 1, 1});
}
// The kernels' form: B N-major (imm-trans-b = 1), operands "1, 1, 1, 0, 1", all their N.
TEST(PtxHopperWgmma, KernelLayoutAllN) {
  for (WgmmaType type : {WgmmaType::f16, WgmmaType::bf16})
    for (std::uint32_t n : {64u, 128u, 192u, 256u}) check_product({type, n, BLayout::n_major_sw128, true, 1, 1});
}
TEST(PtxHopperWgmma, ScaleDZeroIgnoresTheOldAccumulators) {
  check_product({WgmmaType::f16, 64, BLayout::n_major_sw128, false, 1, 1});
  check_product({WgmmaType::bf16, 128, BLayout::k_major_sw128, false, 1, 1});
}
TEST(PtxHopperWgmma, NegatedOperands) {
  check_product({WgmmaType::f16, 64, BLayout::k_major_sw128, true, -1, 1});
  check_product({WgmmaType::bf16, 64, BLayout::n_major_sw128, true, 1, -1});
  check_product({WgmmaType::f16, 256, BLayout::n_major_sw128, true, -1, -1});
}

// No swizzle: A K-major (core matrices: LBO 128 along k, SBO 256 along m), B N-major (LBO 128
// along k, SBO 256 along n), N = 8 and 24.
TEST(PtxHopperWgmma, UnswizzledLayouts) {
  for (std::uint32_t n : {8u, 24u}) {
    std::vector<std::byte> shared(16384);
    const std::uint32_t a_base = 0x100, b_base = 0x2000;
    for (std::uint32_t m = 0; m < 64; ++m)
      for (std::uint32_t k = 0; k < 16; ++k) put16(shared, a_base + k_major_plain(m, k, 128, 256), to_fp16(a_value(m, k)));
    for (std::uint32_t k = 0; k < 16; ++k)
      for (std::uint32_t j = 0; j < n; ++j) put16(shared, b_base + mn_major_plain(j, k, 128, 256), to_fp16(b_value(k, j)));
    Wgmma op;
    op.n = n;
    op.a_desc = descriptor(a_base, 128, 256, 0);
    op.b_desc = descriptor(b_base, 128, 256, 0);
    op.trans_b = 1;
    op.scale_d = false;
    std::vector<float> d(64 * n);
    wgmma_mma_async(op, shared, d);
    for (std::uint32_t t = 0; t < 128; ++t)
      for (std::uint32_t r = 0; r < n / 2; ++r) {
        const auto [row, col] = figure_coord(t, r);
        double expected = 0;
        for (std::uint32_t k = 0; k < 16; ++k) expected += a_value(row, k) * b_value(k, col);
        ASSERT_EQ(static_cast<double>(d[t * n / 2 + r]), expected) << "row " << row << " col " << col;
      }
  }
}

// M-major A (imm-trans-a = 1), no swizzle: core matrices of 8 k-rows x 8 m.
TEST(PtxHopperWgmma, TransposedA) {
  std::vector<std::byte> shared(16384);
  for (std::uint32_t m = 0; m < 64; ++m)
    for (std::uint32_t k = 0; k < 16; ++k) put16(shared, mn_major_plain(m, k, 1024, 128), to_bf16(a_value(m, k)));
  for (std::uint32_t k = 0; k < 16; ++k)
    for (std::uint32_t j = 0; j < 8; ++j) put16(shared, 4096 + k_major_plain(j, k, 128, 256), to_bf16(b_value(k, j)));
  Wgmma op;
  op.n = 8;
  op.a_type = op.b_type = WgmmaType::bf16;
  op.a_desc = descriptor(0, 1024, 128, 0);
  op.b_desc = descriptor(4096, 128, 256, 0);
  op.trans_a = 1;
  op.scale_d = false;
  std::vector<float> d(512);
  wgmma_mma_async(op, shared, d);
  for (std::uint32_t t = 0; t < 128; ++t)
    for (std::uint32_t r = 0; r < 4; ++r) {
      const auto [row, col] = figure_coord(t, r);
      double expected = 0;
      for (std::uint32_t k = 0; k < 16; ++k) expected += a_value(row, k) * b_value(k, col);
      ASSERT_EQ(static_cast<double>(d[t * 4 + r]), expected);
    }
}

// Values that round: within fp32 rounding of the exact sum.
TEST(PtxHopperWgmma, RandomValuesWithinRounding) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const std::uint32_t n = 128;
  std::vector<double> a(64 * 16), b(16 * n);
  std::vector<std::byte> shared(65536);
  for (std::uint32_t m = 0; m < 64; ++m)
    for (std::uint32_t k = 0; k < 16; ++k) {
      const std::uint16_t bits = to_fp16(dist(rng));
      a[m * 16 + k] = from_fp16(bits);
      put16(shared, k_major_sw128(m, k, 1024), bits);
    }
  for (std::uint32_t k = 0; k < 16; ++k)
    for (std::uint32_t j = 0; j < n; ++j) {
      const std::uint16_t bits = to_fp16(dist(rng));
      b[k * n + j] = from_fp16(bits);
      put16(shared, 16384 + mn_major_sw128(j, k, 8192, 1024), bits);
    }
  Wgmma op;
  op.n = n;
  op.a_desc = descriptor(0, 16, 1024, 1);
  op.b_desc = descriptor(16384, 8192, 1024, 1);
  op.trans_b = 1;
  std::vector<float> d(64 * n, 0.5f);
  wgmma_mma_async(op, shared, d);
  for (std::uint32_t t = 0; t < 128; ++t)
    for (std::uint32_t r = 0; r < n / 2; ++r) {
      const auto [row, col] = figure_coord(t, r);
      double exact = 0.5, magnitude = 0.5;
      for (std::uint32_t k = 0; k < 16; ++k) {
        exact += a[row * 16 + k] * b[k * n + col];
        magnitude += std::abs(a[row * 16 + k] * b[k * n + col]);
      }
      EXPECT_NEAR(d[t * n / 2 + r], exact, 17 * magnitude * std::ldexp(1.0, -24));
    }
}

TEST(PtxHopperWgmma, FaultsOnBadForms) {
  std::vector<std::byte> shared(65536);
  Wgmma op;
  op.n = 64;
  op.a_desc = descriptor(0, 16, 1024, 1);
  op.b_desc = descriptor(16384, 8192, 1024, 1);
  op.trans_b = 1;
  std::vector<float> d(128 * 32);
  EXPECT_NO_THROW(wgmma_mma_async(op, shared, d));

  Wgmma bad = op;
  bad.b_type = WgmmaType::bf16;  // .f16.bf16 is no wgmma form
  EXPECT_THROW(wgmma_mma_async(bad, shared, d), Fault);
  bad = op;
  bad.n = 100;
  EXPECT_THROW(wgmma_mma_async(bad, shared, d), Fault);
  bad = op;
  bad.scale_a = 2;
  EXPECT_THROW(wgmma_mma_async(bad, shared, d), Fault);
  bad = op;
  bad.trans_b = 3;
  EXPECT_THROW(wgmma_mma_async(bad, shared, d), Fault);
  // A 96 bytes into its 128-byte swizzled rows still fits 32 bytes of k; 112 does not.
  bad = op;
  bad.a_desc = descriptor(96, 16, 1024, 1);
  EXPECT_NO_THROW(wgmma_mma_async(bad, shared, d));
  bad.a_desc = descriptor(112, 16, 1024, 1);
  EXPECT_THROW(wgmma_mma_async(bad, shared, d), Fault);
  // B (N-major, 64 columns = one 128-byte row) must start at a row's beginning.
  bad = op;
  bad.b_desc = descriptor(16384 + 32, 8192, 1024, 1);
  EXPECT_THROW(wgmma_mma_async(bad, shared, d), Fault);
  // Reading past the end of shared memory.
  std::vector<std::byte> small(17000);  // B's rows reach 18432
  EXPECT_THROW(wgmma_mma_async(op, small, d), Fault);
  // A garbage descriptor (unused bits set).
  bad = op;
  bad.a_desc |= 1ull << 47;
  EXPECT_THROW(wgmma_mma_async(bad, shared, d), Fault);
  // The caller's accumulator array of the wrong size.
  std::vector<float> short_d(100);
  EXPECT_THROW(wgmma_mma_async(op, shared, short_d), std::invalid_argument);
}

// ---- tensor maps -------------------------------------------------------------------------------------

// The host's call (kernels/cuda/cuda_kernel.cpp tensor_map): a row-major rows x cols matrix with
// leading dimension ld, dims and box innermost first.
TensorMap host_map(std::uint64_t address, TensorMapDataType type, std::uint64_t rows, std::uint64_t cols,
                   std::uint64_t ld_bytes, std::uint32_t box_rows, std::uint32_t box_cols, TensorMapSwizzle swizzle,
                   std::uint32_t row_step = 1) {
  const std::uint64_t dims[2] = {cols, rows};
  const std::uint64_t strides[1] = {ld_bytes};
  const std::uint32_t box[2] = {box_cols, box_rows};
  const std::uint32_t element_strides[2] = {1, row_step};
  return encode_tensor_map_tiled(type, 2, address, dims, strides, box, element_strides, TensorMapInterleave::none,
                                 swizzle, TensorMapL2Promotion::bytes128, TensorMapOobFill::none);
}

TEST(PtxHopperTensorMap, EncodesAndDecodesTheHostsMaps) {
  const TensorMap map = host_map(0x7f0000001000, TensorMapDataType::bfloat16, 1000, 520, 528 * 2, 128, 64,
                                 TensorMapSwizzle::bytes128);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&map) % 64, 0u);
  const TiledTensorMap m = decode_tensor_map(map);
  EXPECT_EQ(m.data_type, TensorMapDataType::bfloat16);
  EXPECT_EQ(m.element_bytes, 2u);
  EXPECT_EQ(m.global_address, 0x7f0000001000u);
  EXPECT_EQ(m.global_dim[0], 520u);
  EXPECT_EQ(m.global_dim[1], 1000u);
  EXPECT_EQ(m.row_stride, 1056u);
  EXPECT_EQ(m.box_dim[0], 64u);
  EXPECT_EQ(m.box_dim[1], 128u);
  EXPECT_EQ(m.swizzle, Swizzle::bytes128);
  EXPECT_EQ(m.l2_promotion, TensorMapL2Promotion::bytes128);
  EXPECT_EQ(m.box_bytes(), 64u * 128 * 2);  // the kernels' A stage for BM = 128: 16 KiB

  // The same through the 128 bytes a kernel parameter holds.
  std::byte bytes[128];
  std::memcpy(bytes, &map, 128);
  EXPECT_EQ(decode_tensor_map(std::span<const std::byte, 128>(bytes)).global_dim[1], 1000u);

  const TiledTensorMap f = decode_tensor_map(
      host_map(0x1000, TensorMapDataType::float32, 7, 9, 48, 5, 4, TensorMapSwizzle::none));
  EXPECT_EQ(f.element_bytes, 4u);
  EXPECT_EQ(f.box_bytes(), 4u * 5 * 4);
}

TEST(PtxHopperTensorMap, DecoderRejectsWhatIsNoMap) {
  TensorMap zero;
  EXPECT_THROW(decode_tensor_map(zero), Fault);
  TensorMap map = host_map(0x1000, TensorMapDataType::float16, 64, 64, 128, 64, 64, TensorMapSwizzle::bytes128);
  for (int word = 1; word < 16; ++word) {
    TensorMap changed = map;
    changed.opaque[word] ^= 1ull << 17;
    EXPECT_THROW(decode_tensor_map(changed), Fault) << "word " << word;
  }
}

TEST(PtxHopperTensorMap, EncoderRejectsWhatTheDriverDocumentsAsInvalid) {
  using T = TensorMapDataType;
  const auto refuses = [](auto&& f) { EXPECT_THROW(f(), TensorMapError); };
  const TensorMapSwizzle none = TensorMapSwizzle::none, sw128 = TensorMapSwizzle::bytes128;
  EXPECT_NO_THROW(host_map(0x1000, T::float16, 64, 64, 128, 64, 64, sw128));
  // globalAddress must be 16-byte aligned.
  refuses([&] { host_map(0x1008, T::float16, 64, 64, 128, 64, 64, sw128); });
  // globalStrides: a multiple of 16 (ld = 100 halves = 200 bytes is not), below 2^40.
  refuses([&] { host_map(0x1000, T::float16, 64, 100, 200, 64, 64, sw128); });
  refuses([&] { host_map(0x1000, T::float16, 64, 64, 1ull << 40, 64, 64, sw128); });
  // A stride shorter than a row.
  refuses([&] { host_map(0x1000, T::float16, 64, 64, 64, 64, 32, none); });
  // globalDim: 1 .. 2^32.
  refuses([&] { host_map(0x1000, T::float16, 0, 64, 128, 64, 64, sw128); });
  refuses([&] { host_map(0x1000, T::float16, (1ull << 32) + 1, 64, 128, 64, 64, sw128); });
  EXPECT_NO_THROW(host_map(0x1000, T::uint8, 1ull << 32, 16, 16, 1, 16, none));
  // boxDim: 1 .. 256, and boxDim[0] * element size a multiple of 16 bytes.
  refuses([&] { host_map(0x1000, T::float16, 512, 64, 128, 257, 64, none); });
  refuses([&] { host_map(0x1000, T::float16, 512, 64, 128, 0, 64, none); });
  refuses([&] { host_map(0x1000, T::float16, 512, 64, 128, 8, 4, none); });  // 8 bytes wide
  EXPECT_NO_THROW(host_map(0x1000, T::float16, 512, 512, 1024, 256, 256, none));
  // With a swizzle the box's inner dimension must fit its span: 64 halves = 128 bytes fit 128B,
  // 128 halves do not; 64B takes 32 halves, 32B 16.
  refuses([&] { host_map(0x1000, T::float16, 512, 512, 1024, 64, 128, sw128); });
  refuses([&] { host_map(0x1000, T::float16, 512, 512, 1024, 64, 64, TensorMapSwizzle::bytes64); });
  EXPECT_NO_THROW(host_map(0x1000, T::float16, 512, 512, 1024, 64, 32, TensorMapSwizzle::bytes64));
  refuses([&] { host_map(0x1000, T::float16, 512, 512, 1024, 64, 32, TensorMapSwizzle::bytes32); });
  EXPECT_NO_THROW(host_map(0x1000, T::float16, 512, 512, 1024, 64, 16, TensorMapSwizzle::bytes32));
  // elementStrides: 1 .. 8.
  refuses([&] { host_map(0x1000, T::float16, 64, 64, 128, 64, 64, sw128, 0); });
  refuses([&] { host_map(0x1000, T::float16, 64, 64, 128, 64, 64, sw128, 9); });

  const std::uint64_t dims[2] = {64, 64}, strides[1] = {128};
  const std::uint32_t box[2] = {64, 64}, es[2] = {1, 1};
  const auto encode_map = [&](T type, std::uint32_t rank, TensorMapInterleave il, std::uint32_t swizzle,
                          TensorMapOobFill oob) {
    return encode_tensor_map_tiled(type, rank, 0x1000, std::span(dims, rank), std::span(strides, rank - 1),
                                   std::span(box, rank), std::span(es, rank), il,
                                   static_cast<TensorMapSwizzle>(swizzle), TensorMapL2Promotion::none, oob);
  };
  const TensorMapInterleave il_none = TensorMapInterleave::none;
  const TensorMapOobFill zero_fill = TensorMapOobFill::none;
  EXPECT_NO_THROW(encode_map(T::float16, 2, il_none, 3, zero_fill));
  refuses([&] { encode_map(T::float16, 1, il_none, 3, zero_fill); });                      // rank 1: unsupported
  refuses([&] { encode_map(T::float16, 2, TensorMapInterleave::bytes16, 0, zero_fill); });  // unsupported
  refuses([&] { encode_map(T::float16, 2, il_none, 7, zero_fill); });                      // no such swizzle
  refuses([&] { encode_map(T::float16, 2, il_none, 4, zero_fill); });                      // 128B atom 32B
  refuses([&] { encode_map(T::float16, 2, il_none, 3, TensorMapOobFill::nan_request_zero_fma); });
  refuses([&] { encode_map(T::tfloat32, 2, il_none, 0, zero_fill); });
  refuses([&] { encode_map(static_cast<T>(16), 2, il_none, 0, zero_fill); });
  refuses([&] {
    encode_tensor_map_tiled(T::float16, 0, 0x1000, {}, {}, {}, {}, il_none, sw128, TensorMapL2Promotion::none,
                            zero_fill);
  });
  refuses([&] {  // arrays that do not match the rank
    encode_tensor_map_tiled(T::float16, 2, 0x1000, std::span(dims, 2), std::span(strides, 1), std::span(box, 1),
                            std::span(es, 2), il_none, sw128, TensorMapL2Promotion::none, zero_fill);
  });
}

// ---- the TMA tile load -------------------------------------------------------------------------------

// A global matrix of 16-bit values v(r, c) = r*256 + c + 1 (never 0) at a made-up address, read
// through a callback that checks bounds and logs every read.
struct Global {
  std::uint64_t base = 0x10000;
  std::uint64_t rows, cols, ld;  // ld in elements
  std::vector<std::uint16_t> data;
  std::vector<std::pair<std::uint64_t, std::size_t>> reads;

  Global(std::uint64_t r, std::uint64_t c, std::uint64_t l) : rows(r), cols(c), ld(l), data(r * l, 0xDEAD) {
    for (std::uint64_t i = 0; i < rows; ++i)
      for (std::uint64_t j = 0; j < cols; ++j) data[i * ld + j] = value(i, j);
  }
  static std::uint16_t value(std::uint64_t r, std::uint64_t c) { return static_cast<std::uint16_t>(r * 256 + c + 1); }
  GlobalRead reader() {
    return [this](std::uint64_t address, void* out, std::size_t bytes) {
      reads.emplace_back(address, bytes);
      ASSERT_GE(address, base);
      ASSERT_LE(address - base + bytes, data.size() * 2);
      std::memcpy(out, reinterpret_cast<const std::byte*>(data.data()) + (address - base), bytes);
    };
  }
  TiledTensorMap map(std::uint32_t box_rows, std::uint32_t box_cols, TensorMapSwizzle s, std::uint32_t row_step = 1) {
    return decode_tensor_map(host_map(base, TensorMapDataType::float16, rows, cols, ld * 2, box_rows, box_cols, s, row_step));
  }
};

TEST(PtxHopperTma, PlainBoxWithZeroFillPastTheEdges) {
  Global g(5, 24, 24);
  const TiledTensorMap m = g.map(4, 16, TensorMapSwizzle::none);
  std::vector<std::byte> shared(4096, std::byte{0xAA});
  // Columns 16..31 of rows 3..6: columns 24.. and rows 5.. lie outside.
  EXPECT_EQ(tma_load_2d(m, 16, 3, shared, 256, g.reader()), 16u * 4 * 2);
  for (std::uint32_t j = 0; j < 4; ++j)
    for (std::uint32_t i = 0; i < 16; ++i) {
      const std::uint64_t r = 3 + j, c = 16 + i;
      const std::uint16_t expected = r < 5 && c < 24 ? Global::value(r, c) : 0;
      EXPECT_EQ(get16(shared, 256 + j * 32 + i * 2), expected) << "box row " << j << " col " << i;
    }
  EXPECT_EQ(shared[255], std::byte{0xAA});
  EXPECT_EQ(shared[256 + 128], std::byte{0xAA});
  // Only the in-bounds runs are read: 8 elements of rows 3 and 4.
  ASSERT_EQ(g.reads.size(), 2u);
  EXPECT_EQ(g.reads[0], std::make_pair(g.base + 3 * 48 + 32, std::size_t{16}));
  EXPECT_EQ(g.reads[1], std::make_pair(g.base + 4 * 48 + 32, std::size_t{16}));
}

TEST(PtxHopperTma, NegativeAndFarCoordinates) {
  Global g(5, 24, 32);
  const TiledTensorMap m = g.map(4, 16, TensorMapSwizzle::none);
  std::vector<std::byte> shared(4096, std::byte{0xAA});
  EXPECT_EQ(tma_load_2d(m, -8, -2, shared, 0, g.reader()), 128u);
  for (std::uint32_t j = 0; j < 4; ++j)
    for (std::uint32_t i = 0; i < 16; ++i) {
      const std::int64_t r = -2 + static_cast<std::int64_t>(j), c = -8 + static_cast<std::int64_t>(i);
      const std::uint16_t expected =
          r >= 0 && c >= 0 ? Global::value(static_cast<std::uint64_t>(r), static_cast<std::uint64_t>(c)) : 0;
      EXPECT_EQ(get16(shared, j * 32 + i * 2), expected) << "box row " << j << " col " << i;
    }
  // Wholly outside: nothing read, the whole box zeroed and counted.
  g.reads.clear();
  std::fill(shared.begin(), shared.end(), std::byte{0xAA});
  EXPECT_EQ(tma_load_2d(m, 1000, 0, shared, 0, g.reader()), 128u);
  EXPECT_EQ(tma_load_2d(m, 0, -100, shared, 128, g.reader()), 128u);
  EXPECT_TRUE(g.reads.empty());
  for (std::size_t i = 0; i < 256; ++i) EXPECT_EQ(shared[i], std::byte{0}) << i;
  EXPECT_EQ(shared[256], std::byte{0xAA});
}

// The 128-byte swizzle: box row r at r*128, its 16-byte chunk p at chunk position p ^ (r%8).
TEST(PtxHopperTma, Swizzle128PlacesChunksAsTheKernelsExpect) {
  Global g(100, 200, 200);
  const TiledTensorMap m = g.map(64, 64, TensorMapSwizzle::bytes128);
  std::vector<std::byte> shared(3 * 8192);
  EXPECT_EQ(tma_load_2d(m, 64, 16, shared, 8192, g.reader()), 8192u);
  for (std::uint32_t r = 0; r < 64; ++r)
    for (std::uint32_t c = 0; c < 64; ++c)
      ASSERT_EQ(get16(shared, 8192 + r * 128 + ((c / 8) ^ (r % 8)) * 16 + (c % 8) * 2), Global::value(16 + r, 64 + c))
          << r << ", " << c;
}

TEST(PtxHopperTma, Swizzle128ZeroFillAtTheEdges) {
  Global g(10, 40, 40);  // stride 80 bytes
  const TiledTensorMap m = g.map(16, 64, TensorMapSwizzle::bytes128);
  std::vector<std::byte> shared(4096, std::byte{0xAA});
  for (const auto& [c0, c1] : {std::pair{0, 0}, std::pair{-8, 4}, std::pair{32, -3}}) {
    EXPECT_EQ(tma_load_2d(m, c0, c1, shared, 1024, g.reader()), 2048u);
    for (std::int64_t r = 0; r < 16; ++r)
      for (std::int64_t c = 0; c < 64; ++c) {
        const std::int64_t y = c1 + r, x = c0 + c;
        const std::uint16_t expected =
            y >= 0 && y < 10 && x >= 0 && x < 40
                ? Global::value(static_cast<std::uint64_t>(y), static_cast<std::uint64_t>(x))
                : 0;
        ASSERT_EQ(get16(shared, static_cast<std::size_t>(1024 + r * 128 + ((c / 8) ^ (r % 8)) * 16 + (c % 8) * 2)),
                  expected)
            << "(" << c0 << ", " << c1 << "): box row " << r << " col " << c;
      }
  }
}

// 64B: 64-byte rows, 16-byte chunk p of row r at position p ^ ((address bits 7-8) = r/2 % 4).
// 32B: 32-byte rows, chunk p of row r at p ^ (r/4 % 2).
TEST(PtxHopperTma, Swizzle64And32) {
  Global g(64, 64, 64);
  std::vector<std::byte> shared(4096);
  const TiledTensorMap m64 = g.map(16, 32, TensorMapSwizzle::bytes64);
  EXPECT_EQ(tma_load_2d(m64, 8, 1, shared, 512, g.reader()), 1024u);
  for (std::uint32_t r = 0; r < 16; ++r)
    for (std::uint32_t c = 0; c < 32; ++c)
      ASSERT_EQ(get16(shared, 512 + r * 64 + ((c / 8) ^ ((r / 2) % 4)) * 16 + (c % 8) * 2), Global::value(1 + r, 8 + c));
  const TiledTensorMap m32 = g.map(16, 16, TensorMapSwizzle::bytes32);
  EXPECT_EQ(tma_load_2d(m32, 0, 0, shared, 256, g.reader()), 512u);
  for (std::uint32_t r = 0; r < 16; ++r)
    for (std::uint32_t c = 0; c < 16; ++c)
      ASSERT_EQ(get16(shared, 256 + r * 32 + ((c / 8) ^ ((r / 4) % 2)) * 16 + (c % 8) * 2), Global::value(r, c));
}

TEST(PtxHopperTma, ElementStrideAlongRows) {
  Global g(32, 16, 16);
  const TiledTensorMap m = g.map(8, 16, TensorMapSwizzle::none, 2);  // every other row: 4 rows
  EXPECT_EQ(m.box_rows(), 4u);
  std::vector<std::byte> shared(1024);
  EXPECT_EQ(tma_load_2d(m, 0, 3, shared, 0, g.reader()), 4u * 32);
  for (std::uint32_t j = 0; j < 4; ++j)
    for (std::uint32_t i = 0; i < 16; ++i) EXPECT_EQ(get16(shared, j * 32 + i * 2), Global::value(3 + 2 * j, i));
}

TEST(PtxHopperTma, DestinationFaults) {
  Global g(64, 64, 64);
  std::vector<std::byte> shared(16384);
  const TiledTensorMap plain = g.map(64, 64, TensorMapSwizzle::none);
  const TiledTensorMap swizzled = g.map(64, 64, TensorMapSwizzle::bytes128);
  EXPECT_THROW(tma_load_2d(plain, 0, 0, shared, 64, g.reader()), Fault);     // not 128-byte aligned
  EXPECT_NO_THROW(tma_load_2d(plain, 0, 0, shared, 128, g.reader()));
  EXPECT_THROW(tma_load_2d(swizzled, 0, 0, shared, 128, g.reader()), Fault);  // 128B swizzle: 1024
  EXPECT_NO_THROW(tma_load_2d(swizzled, 0, 0, shared, 1024, g.reader()));
  EXPECT_THROW(tma_load_2d(swizzled, 0, 0, shared, 9216, g.reader()), Fault);  // 8 KiB box past the end
}

// ---- mbarrier ----------------------------------------------------------------------------------------

TEST(PtxHopperMbarrier, PhasesAndParity) {
  std::vector<std::byte> shared(64);
  Mbarrier bar(shared, 8);
  bar.init(3);
  Mbarrier::State s = bar.state();
  EXPECT_TRUE(s.initialized);
  EXPECT_EQ(s.phase, 0u);
  EXPECT_EQ(s.pending, 3u);
  EXPECT_EQ(s.expected, 3u);
  EXPECT_EQ(s.tx_count, 0);
  // Phase 0 is current: waiting on parity 0 waits; parity 1 names the preceding phase, complete.
  EXPECT_FALSE(bar.test_wait_parity(0));
  EXPECT_TRUE(bar.test_wait_parity(1));
  EXPECT_TRUE(bar.try_wait_parity(1));
  bar.arrive();
  bar.arrive();
  EXPECT_FALSE(bar.test_wait_parity(0));
  EXPECT_EQ(bar.state().pending, 1u);
  bar.arrive();
  s = bar.state();
  EXPECT_EQ(s.phase, 1u);
  EXPECT_EQ(s.pending, 3u);  // reset to the expected count
  EXPECT_TRUE(bar.test_wait_parity(0));
  EXPECT_FALSE(bar.test_wait_parity(1));
  bar.arrive(2);
  bar.arrive(1);
  EXPECT_EQ(bar.state().phase, 2u);
  EXPECT_FALSE(bar.test_wait_parity(0));
  EXPECT_TRUE(bar.test_wait_parity(1));
  // Parity keeps alternating after the phase number wraps.
  for (int i = 0; i < 7; ++i) bar.arrive(3);
  EXPECT_EQ(bar.state().phase % 2, 1u);
  EXPECT_TRUE(bar.test_wait_parity(0));
  EXPECT_THROW(bar.test_wait_parity(2), Fault);
  // The bytes outside the barrier's 8 are untouched.
  for (std::size_t i = 0; i < 64; ++i) {
    if (i < 8 || i >= 16) {
      EXPECT_EQ(shared[i], std::byte{0}) << i;
    }
  }
}

TEST(PtxHopperMbarrier, TransactionsAndArrivalsBothComplete) {
  std::vector<std::byte> shared(16);
  Mbarrier bar(shared, 0);
  // The kernels' full barrier: 1 arrival with expect_tx, then the copies' complete_tx.
  bar.init(1);
  bar.arrive_expect_tx(8192 + 16384);
  EXPECT_EQ(bar.state().pending, 0u);
  EXPECT_EQ(bar.state().tx_count, 24576);
  EXPECT_FALSE(bar.test_wait_parity(0));
  bar.complete_tx(8192);
  bar.complete_tx(8192);
  EXPECT_FALSE(bar.test_wait_parity(0));
  bar.complete_tx(8192);
  EXPECT_TRUE(bar.test_wait_parity(0));
  EXPECT_EQ(bar.state().tx_count, 0);

  // Bytes landing before they are announced: the tx-count goes negative and the phase waits for the
  // arrival that announces them.
  bar.init(1);
  bar.complete_tx(256);
  EXPECT_EQ(bar.state().tx_count, -256);
  EXPECT_FALSE(bar.test_wait_parity(0));
  bar.arrive_expect_tx(256);
  EXPECT_TRUE(bar.test_wait_parity(0));
  // A negative tx-count is not zero either: all arrivals in, the phase still waits for expect_tx.
  bar.init(1);
  bar.complete_tx(256);
  bar.arrive();
  EXPECT_EQ(bar.state().pending, 0u);
  EXPECT_FALSE(bar.test_wait_parity(0));
  bar.expect_tx(256);
  EXPECT_TRUE(bar.test_wait_parity(0));

  // The tx-count at zero does not complete a phase whose arrivals are pending.
  bar.init(2);
  bar.expect_tx(100);
  bar.complete_tx(100);
  EXPECT_FALSE(bar.test_wait_parity(0));
  bar.arrive();
  EXPECT_FALSE(bar.test_wait_parity(0));
  bar.arrive();
  EXPECT_TRUE(bar.test_wait_parity(0));

  // Range of the tx-count: 2^20 - 1 either way.
  bar.init(1);
  bar.expect_tx((1u << 20) - 1);
  EXPECT_THROW(bar.expect_tx(1), Fault);
  bar.init(1);
  bar.complete_tx((1u << 20) - 1);
  EXPECT_THROW(bar.complete_tx(1), Fault);
}

TEST(PtxHopperMbarrier, StateTokens) {
  std::vector<std::byte> shared(8);
  Mbarrier bar(shared, 0);
  bar.init(2);
  const std::uint64_t token = bar.arrive();
  EXPECT_FALSE(bar.test_wait(token));
  EXPECT_FALSE(bar.try_wait(token));
  const std::uint64_t last = bar.arrive();  // completes phase 0; its token names phase 0 too
  EXPECT_TRUE(bar.test_wait(token));
  EXPECT_TRUE(bar.test_wait(last));
  const std::uint64_t next = bar.arrive();
  EXPECT_FALSE(bar.test_wait(next));
  bar.arrive();
  EXPECT_TRUE(bar.test_wait(next));
  EXPECT_THROW(bar.test_wait(token), Fault);  // two phases old
  EXPECT_THROW(bar.test_wait(0x1234), Fault);  // not a token
}

// Kernel 12's ring: the producer waits on the empty barrier with parity phase ^ 1, so its first
// pass goes through a fresh barrier; the consumers' four warps release each fill.
TEST(PtxHopperMbarrier, ProducerConsumerRing) {
  std::vector<std::byte> shared(16);
  Mbarrier full(shared, 0), empty(shared, 8);
  full.init(1);
  empty.init(4);
  std::uint32_t phase = 0;
  for (int pass = 0; pass < 5; ++pass) {
    EXPECT_TRUE(empty.test_wait_parity(phase ^ 1)) << "pass " << pass;
    full.arrive_expect_tx(4096);
    EXPECT_FALSE(full.test_wait_parity(phase));
    full.complete_tx(4096);
    EXPECT_TRUE(full.test_wait_parity(phase));
    EXPECT_FALSE(empty.test_wait_parity(phase));  // not yet released
    for (int warp = 0; warp < 4; ++warp) empty.arrive();
    EXPECT_TRUE(empty.test_wait_parity(phase));
    phase ^= 1;
  }
}

TEST(PtxHopperMbarrier, MisuseFaults) {
  std::vector<std::byte> shared(32);
  EXPECT_THROW((void)Mbarrier(shared, 4), Fault);   // not 8-byte aligned
  EXPECT_THROW((void)Mbarrier(shared, 32), Fault);  // outside
  EXPECT_THROW((void)Mbarrier(shared, 0xFFFFFFF8u), Fault);
  Mbarrier bar(shared, 16);
  EXPECT_THROW(bar.arrive(), Fault);  // never initialized
  EXPECT_THROW(bar.test_wait_parity(0), Fault);
  EXPECT_THROW(bar.init(0), Fault);
  EXPECT_THROW(bar.init(1u << 20), Fault);
  bar.init((1u << 20) - 1);
  bar.init(2);
  EXPECT_THROW(bar.arrive(3), Fault);  // more arrivals than pending
  EXPECT_THROW(bar.arrive(0), Fault);
  bar.arrive_expect_tx(64);
  bar.arrive();
  EXPECT_EQ(bar.state().pending, 0u);  // arrived, bytes outstanding
  EXPECT_THROW(bar.arrive(), Fault);  // an arrival too many for phase 0
  bar.complete_tx(64);
  EXPECT_EQ(bar.state().phase, 1u);
  bar.inval();
  EXPECT_FALSE(bar.state().initialized);
  EXPECT_THROW(bar.complete_tx(1), Fault);
  // Another view of the same bytes sees the same barrier.
  bar.init(1);
  Mbarrier same(shared, 16);
  same.arrive();
  EXPECT_TRUE(bar.test_wait_parity(0));
}

// ---- the kernels' pipeline: TMA, mbarrier, wgmma ------------------------------------------------------

// Kernel 11's k-slice for BM = 64, BN = 128: a 64 x 64 box of A and two 64 x 64 boxes of B, 128B
// swizzle, one full barrier, then four wgmma with the kernels' descriptors. Compared with the
// product of the matrices, zero-filled parts included.
void check_kernel_stage(std::uint64_t m_size, std::uint64_t n_size, std::uint64_t k_size, std::uint64_t lda,
                        std::uint64_t ldb, WgmmaType type) {
  const std::uint64_t a_base = 0x100000, b_base = 0x800000;
  std::vector<std::uint16_t> a(m_size * lda, 0xFFFF), b(k_size * ldb, 0xFFFF);  // NaN padding if read
  for (std::uint64_t i = 0; i < m_size; ++i)
    for (std::uint64_t k = 0; k < k_size; ++k)
      a[i * lda + k] = encode(type, a_value(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(k)));
  for (std::uint64_t k = 0; k < k_size; ++k)
    for (std::uint64_t j = 0; j < n_size; ++j)
      b[k * ldb + j] = encode(type, b_value(static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(j)));
  std::uint64_t traffic = 0;
  const GlobalRead read = [&](std::uint64_t address, void* out, std::size_t bytes) {
    const bool in_a = address >= a_base && address + bytes <= a_base + a.size() * 2;
    const bool in_b = address >= b_base && address + bytes <= b_base + b.size() * 2;
    ASSERT_TRUE(in_a || in_b) << std::hex << address;
    const auto* src = in_a ? reinterpret_cast<const std::byte*>(a.data()) + (address - a_base)
                           : reinterpret_cast<const std::byte*>(b.data()) + (address - b_base);
    std::memcpy(out, src, bytes);
    traffic += bytes;
  };
  const TensorMapDataType dt = type == WgmmaType::f16 ? TensorMapDataType::float16 : TensorMapDataType::bfloat16;
  const TiledTensorMap a_map = decode_tensor_map(host_map(a_base, dt, m_size, k_size, lda * 2, 64, 64, TensorMapSwizzle::bytes128));
  const TiledTensorMap b_map = decode_tensor_map(host_map(b_base, dt, k_size, n_size, ldb * 2, 64, 64, TensorMapSwizzle::bytes128));

  std::vector<std::byte> shared(2048 + 8192 + 16384 + 8, std::byte{0x77});
  const std::uint32_t a_smem = 1024, b_smem = a_smem + 8192, bar_addr = b_smem + 16384;
  Mbarrier full(shared, bar_addr);
  full.init(1);
  full.arrive_expect_tx(8192 + 2 * 8192);
  full.complete_tx(tma_load_2d(a_map, 0, 0, shared, a_smem, read));
  full.complete_tx(tma_load_2d(b_map, 0, 0, shared, b_smem, read));
  EXPECT_FALSE(full.test_wait_parity(0));
  full.complete_tx(tma_load_2d(b_map, 64, 0, shared, b_smem + 8192, read));
  EXPECT_TRUE(full.test_wait_parity(0));
  EXPECT_EQ(traffic, 2 * (m_size * std::min<std::uint64_t>(k_size, 64) + k_size * std::min<std::uint64_t>(n_size, 128)));

  std::vector<float> d(128 * 64, 0.0f);
  for (std::uint32_t kk = 0; kk < 4; ++kk) {
    Wgmma op;
    op.n = 128;
    op.a_type = op.b_type = type;
    // hopper_primitives.cuh: swizzle128_descriptor(a_tile + kk*32, 16, 1024) and
    // swizzle128_descriptor(b_tile + kk*16*128, 8192, 1024); operands 1, 1, 1, 0, 1.
    op.a_desc = descriptor(a_smem + kk * 32, 16, 1024, 1);
    op.b_desc = descriptor(b_smem + kk * 2048, 8192, 1024, 1);
    op.scale_d = true;
    op.trans_a = 0;
    op.trans_b = 1;
    wgmma_mma_async(op, shared, d);
  }
  for (std::uint32_t t = 0; t < 128; ++t)
    for (std::uint32_t r = 0; r < 64; ++r) {
      const auto [row, col] = figure_coord(t, r);
      double expected = 0;
      if (row < m_size && col < n_size)
        for (std::uint32_t k = 0; k < k_size && k < 64; ++k) expected += a_value(row, k) * b_value(k, col);
      ASSERT_EQ(static_cast<double>(d[t * 64 + r]), expected) << "row " << row << " col " << col;
    }
}

TEST(PtxHopperPipeline, KernelStageFullTile) { check_kernel_stage(64, 128, 64, 64, 128, WgmmaType::f16); }
TEST(PtxHopperPipeline, KernelStageEdgeTile) { check_kernel_stage(50, 100, 40, 40, 104, WgmmaType::bf16); }

}  // namespace
}  // namespace gemmlab::ptx::sim
