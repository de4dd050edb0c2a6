// Golden tests of the simulator's warp-level matrix operations (runtime/src/ptx/warp_matrix.hpp).
// The expectations come from the PTX ISA, written out here on their own: the fragment formulas
// of "Matrix Fragments for mma.m16n8k16 with floating point type", the thread/row rules of
// "ldmatrix", the register counts of "Matrix Fragments for WMMA" and the addressing of "Matrix
// Storage for WMMA". Products use small integers, exact in f16, bf16 and fp32, so results compare
// exactly with a plain triple loop.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "gemmlab/validate.hpp"
#include "ptx/fault.hpp"
#include "ptx/warp_matrix.hpp"

namespace gemmlab::ptx::sim {
namespace {

using Coord = WarpMatrixCoord;

// ---- The ISA's formulas, as printed ---------------------------------------------------------------
namespace isa {
int group_id(int lane) { return lane >> 2; }
int thread_id_in_group(int lane) { return lane % 4; }

int a_row(int lane, int i) {
  return ((0 <= i && i < 2) || (4 <= i && i < 6)) ? group_id(lane) : group_id(lane) + 8;
}
int a_col(int lane, int i) {
  return i < 4 ? (thread_id_in_group(lane) * 2) + (i & 0x1) : (thread_id_in_group(lane) * 2) + (i & 0x1) + 8;
}
int b_row(int lane, int i) {
  return i < 2 ? (thread_id_in_group(lane) * 2) + (i & 0x1) : (thread_id_in_group(lane) * 2) + (i & 0x1) + 8;
}
int b_col(int lane, int) { return group_id(lane); }
int c_row(int lane, int i) { return i < 2 ? group_id(lane) : group_id(lane) + 8; }
int c_col(int lane, int i) { return (thread_id_in_group(lane) * 2) + (i & 0x1); }
}  // namespace isa

std::uint16_t bits_of(WarpMatrixType type, int value) {
  return type == WarpMatrixType::f16 ? to_fp16(value) : to_bf16(value);
}
std::uint32_t f32_bits(float x) { return std::bit_cast<std::uint32_t>(x); }
float f32_value(std::uint32_t bits) { return std::bit_cast<float>(bits); }
std::uint16_t low_half(std::uint32_t reg) { return static_cast<std::uint16_t>(reg & 0xffffu); }
std::uint16_t high_half(std::uint32_t reg) { return static_cast<std::uint16_t>(reg >> 16); }
// Element i of a fragment of 16-bit elements: register i/2, the lower index in the low half.
std::uint16_t half_at(const std::uint32_t* regs, int i) {
  return i % 2 == 0 ? low_half(regs[i / 2]) : high_half(regs[i / 2]);
}
void put_half(std::uint32_t* regs, int i, std::uint16_t value) {
  std::uint32_t& reg = regs[i / 2];
  reg = i % 2 == 0 ? (reg & 0xffff0000u) | value : (reg & 0x0000ffffu) | (std::uint32_t{value} << 16);
}

std::vector<int> random_ints(std::mt19937& rng, int count, int low, int high) {
  std::uniform_int_distribution<int> pick(low, high);
  std::vector<int> out(count);
  for (int& x : out) x = pick(rng);
  return out;
}

// ---- mma.m16n8k16: fragment layout ----------------------------------------------------------------

TEST(MmaM16n8k16Layout, EntriesOfTheIsaFigures) {
  // Figure "MMA .m16n8k16 fragment layout for matrix A": T0 holds a0,a1 = A[0][0..1],
  // a2,a3 = A[8][0..1], a4,a5 = A[0][8..9], a6,a7 = A[8][8..9].
  EXPECT_EQ(mma_m16n8k16_a_element(0, 0), (Coord{0, 0}));
  EXPECT_EQ(mma_m16n8k16_a_element(0, 1), (Coord{0, 1}));
  EXPECT_EQ(mma_m16n8k16_a_element(0, 2), (Coord{8, 0}));
  EXPECT_EQ(mma_m16n8k16_a_element(0, 3), (Coord{8, 1}));
  EXPECT_EQ(mma_m16n8k16_a_element(0, 4), (Coord{0, 8}));
  EXPECT_EQ(mma_m16n8k16_a_element(0, 5), (Coord{0, 9}));
  EXPECT_EQ(mma_m16n8k16_a_element(0, 6), (Coord{8, 8}));
  EXPECT_EQ(mma_m16n8k16_a_element(0, 7), (Coord{8, 9}));
  // T1..T3 continue along row 0 two columns at a time; T4 starts row 1; T31 ends at A[15][15].
  EXPECT_EQ(mma_m16n8k16_a_element(1, 0), (Coord{0, 2}));
  EXPECT_EQ(mma_m16n8k16_a_element(3, 1), (Coord{0, 7}));
  EXPECT_EQ(mma_m16n8k16_a_element(4, 0), (Coord{1, 0}));
  EXPECT_EQ(mma_m16n8k16_a_element(31, 0), (Coord{7, 6}));
  EXPECT_EQ(mma_m16n8k16_a_element(31, 7), (Coord{15, 15}));

  // Figure for matrix B (16x8): T0 holds b0,b1 = B[0..1][0] and b2,b3 = B[8..9][0]; T1 rows 2-3;
  // T4 column 1; T31 ends at B[15][7].
  EXPECT_EQ(mma_m16n8k16_b_element(0, 0), (Coord{0, 0}));
  EXPECT_EQ(mma_m16n8k16_b_element(0, 1), (Coord{1, 0}));
  EXPECT_EQ(mma_m16n8k16_b_element(0, 2), (Coord{8, 0}));
  EXPECT_EQ(mma_m16n8k16_b_element(0, 3), (Coord{9, 0}));
  EXPECT_EQ(mma_m16n8k16_b_element(1, 0), (Coord{2, 0}));
  EXPECT_EQ(mma_m16n8k16_b_element(4, 0), (Coord{0, 1}));
  EXPECT_EQ(mma_m16n8k16_b_element(31, 0), (Coord{6, 7}));
  EXPECT_EQ(mma_m16n8k16_b_element(31, 3), (Coord{15, 7}));

  // Figure for the accumulators C/D (16x8): T0 holds c0,c1 = C[0][0..1], c2,c3 = C[8][0..1].
  EXPECT_EQ(mma_m16n8k16_c_element(0, 0), (Coord{0, 0}));
  EXPECT_EQ(mma_m16n8k16_c_element(0, 1), (Coord{0, 1}));
  EXPECT_EQ(mma_m16n8k16_c_element(0, 2), (Coord{8, 0}));
  EXPECT_EQ(mma_m16n8k16_c_element(0, 3), (Coord{8, 1}));
  EXPECT_EQ(mma_m16n8k16_c_element(5, 0), (Coord{1, 2}));
  EXPECT_EQ(mma_m16n8k16_c_element(31, 3), (Coord{15, 7}));
}

TEST(MmaM16n8k16Layout, MatchesTheIsaFormulasAndCoversEveryElementOnce) {
  int a_seen[16][16] = {}, b_seen[16][8] = {}, c_seen[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) {
      const Coord at = mma_m16n8k16_a_element(lane, i);
      EXPECT_EQ(at, (Coord{isa::a_row(lane, i), isa::a_col(lane, i)})) << "lane " << lane << " a" << i;
      ++a_seen[at.row][at.col];
    }
    for (int i = 0; i < 4; ++i) {
      const Coord at = mma_m16n8k16_b_element(lane, i);
      EXPECT_EQ(at, (Coord{isa::b_row(lane, i), isa::b_col(lane, i)})) << "lane " << lane << " b" << i;
      ++b_seen[at.row][at.col];
      const Coord c_at = mma_m16n8k16_c_element(lane, i);
      EXPECT_EQ(c_at, (Coord{isa::c_row(lane, i), isa::c_col(lane, i)})) << "lane " << lane << " c" << i;
      ++c_seen[c_at.row][c_at.col];
    }
  }
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 16; ++c) EXPECT_EQ(a_seen[r][c], 1);
    for (int c = 0; c < 8; ++c) {
      EXPECT_EQ(b_seen[r][c], 1);
      EXPECT_EQ(c_seen[r][c], 1);
    }
  }
}

TEST(MmaM16n8k16Layout, IndicesOutOfRangeAreCallerBugs) {
  EXPECT_THROW(mma_m16n8k16_a_element(32, 0), std::out_of_range);
  EXPECT_THROW(mma_m16n8k16_a_element(0, 8), std::out_of_range);
  EXPECT_THROW(mma_m16n8k16_b_element(-1, 0), std::out_of_range);
  EXPECT_THROW(mma_m16n8k16_c_element(0, 4), std::out_of_range);
}

// ---- mma.m16n8k16: arithmetic ---------------------------------------------------------------------

// Scatters full matrices into fragments with the ISA's formulas, runs the mma, gathers D the same way.
struct MmaCase {
  int a[16][16], b[16][8];
  float c[16][8];
};

void run_mma(WarpMatrixType type, const MmaCase& m, float d_out[16][8]) {
  std::uint32_t a[32][4] = {}, b[32][2] = {}, c[32][4] = {}, d[32][4] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) put_half(a[lane], i, bits_of(type, m.a[isa::a_row(lane, i)][isa::a_col(lane, i)]));
    for (int i = 0; i < 4; ++i) {
      put_half(b[lane], i, bits_of(type, m.b[isa::b_row(lane, i)][isa::b_col(lane, i)]));
      c[lane][i] = f32_bits(m.c[isa::c_row(lane, i)][isa::c_col(lane, i)]);
    }
  }
  mma_m16n8k16(type, type, a, b, c, d);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) d_out[isa::c_row(lane, i)][isa::c_col(lane, i)] = f32_value(d[lane][i]);
}

TEST(MmaM16n8k16, ConstantMatricesWithKnownBitPatterns) {
  // 1.0 is 0x3C00 in f16 and 0x3F80 in bf16, 2.0 is 0x4000 in both (IEEE binary16; bf16 is the
  // top half of binary32). Every D element is 16 * 1 * 2 + 0.5.
  for (const auto& [type, one, two] : {std::tuple{WarpMatrixType::f16, 0x3C00u, 0x4000u},
                                       std::tuple{WarpMatrixType::bf16, 0x3F80u, 0x4000u}}) {
    std::uint32_t a[32][4], b[32][2], c[32][4], d[32][4];
    for (int lane = 0; lane < 32; ++lane) {
      for (auto& reg : a[lane]) reg = one | (one << 16);
      for (auto& reg : b[lane]) reg = two | (two << 16);
      for (auto& reg : c[lane]) reg = f32_bits(0.5f);
    }
    mma_m16n8k16(type, type, a, b, c, d);
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 4; ++i) EXPECT_EQ(f32_value(d[lane][i]), 32.5f);
  }
}

TEST(MmaM16n8k16, RandomIntegerMatricesMatchATripleLoop) {
  std::mt19937 rng(1234);
  for (WarpMatrixType type : {WarpMatrixType::f16, WarpMatrixType::bf16}) {
    for (int trial = 0; trial < 5; ++trial) {
      MmaCase m{};
      const auto a = random_ints(rng, 16 * 16, -8, 8), b = random_ints(rng, 16 * 8, -8, 8),
                 c = random_ints(rng, 16 * 8, -100, 100);
      for (int r = 0; r < 16; ++r)
        for (int k = 0; k < 16; ++k) m.a[r][k] = a[r * 16 + k];
      for (int k = 0; k < 16; ++k)
        for (int n = 0; n < 8; ++n) m.b[k][n] = b[k * 8 + n];
      for (int r = 0; r < 16; ++r)
        for (int n = 0; n < 8; ++n) m.c[r][n] = static_cast<float>(c[r * 8 + n]);
      float d[16][8];
      run_mma(type, m, d);
      for (int r = 0; r < 16; ++r)
        for (int n = 0; n < 8; ++n) {
          double expected = m.c[r][n];
          for (int k = 0; k < 16; ++k) expected += m.a[r][k] * m.b[k][n];
          EXPECT_EQ(d[r][n], expected) << "type " << static_cast<int>(type) << " D[" << r << "][" << n << "]";
        }
    }
  }
}

TEST(MmaM16n8k16, NonIntegerValuesAndSubnormalInputs) {
  // 2^-24 is the smallest f16 subnormal (bits 0x0001); times 2^10 it is 2^-14, exact in fp32.
  std::uint32_t a[32][4] = {}, b[32][2] = {}, c[32][4] = {}, d[32][4];
  const std::uint32_t subnormal = 0x0001, two_to_10 = 0x6400;  // f16 1024.0
  for (int lane = 0; lane < 32; ++lane) {
    a[lane][0] = subnormal;  // a0 only: A[g][2t] = 2^-24
    b[lane][0] = two_to_10;  // b0 only: B[2t][g] = 1024
  }
  mma_m16n8k16(WarpMatrixType::f16, WarpMatrixType::f16, a, b, c, d);
  // D[r][n] = sum over k of A[r][k] B[k][n]; nonzero terms need k = 2t even with r < 8: 4 of them.
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(f32_value(d[lane][i]), i < 2 ? 4 * 0x1p-14f : 0.0f);
}

TEST(MmaM16n8k16, DAliasingCAccumulatesInPlace) {
  std::uint32_t a[32][4], b[32][2], acc[32][4];
  for (int lane = 0; lane < 32; ++lane) {
    for (auto& reg : a[lane]) reg = 0x3C003C00u;  // f16 1.0, 1.0
    for (auto& reg : b[lane]) reg = 0x3C003C00u;
    for (auto& reg : acc[lane]) reg = f32_bits(1.0f);
  }
  mma_m16n8k16(WarpMatrixType::f16, WarpMatrixType::f16, a, b, acc, acc);
  mma_m16n8k16(WarpMatrixType::f16, WarpMatrixType::f16, a, b, acc, acc);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(f32_value(acc[lane][i]), 33.0f);
}

TEST(MmaM16n8k16, SumsInTheDocumentedOrder) {
  // Not an ISA fact (the order is unspecified there) but the simulator's documented one: start
  // from C and add the products k = 0..15 one at a time in fp32. From C = 2^24 each +1 is a tie
  // that rounds back to 2^24; adding the products first would give 2^24 + 16.
  std::uint32_t a[32][4], b[32][2], c[32][4], d[32][4];
  for (int lane = 0; lane < 32; ++lane) {
    for (auto& reg : a[lane]) reg = 0x3F803F80u;  // bf16 1.0, 1.0
    for (auto& reg : b[lane]) reg = 0x3F803F80u;
    for (auto& reg : c[lane]) reg = f32_bits(0x1p24f);
  }
  mma_m16n8k16(WarpMatrixType::bf16, WarpMatrixType::bf16, a, b, c, d);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(f32_value(d[lane][i]), 0x1p24f);
}

TEST(MmaM16n8k16, UnsupportedTypeCombinationsFault) {
  std::uint32_t a[32][4] = {}, b[32][2] = {}, c[32][4] = {}, d[32][4];
  EXPECT_THROW(mma_m16n8k16(WarpMatrixType::f16, WarpMatrixType::bf16, a, b, c, d), Fault);
  EXPECT_THROW(mma_m16n8k16(WarpMatrixType::f32, WarpMatrixType::f32, a, b, c, d), Fault);
}

// ---- ldmatrix ------------------------------------------------------------------------------------

// Element c of the row supplied by lane 8*m + r, a value naming (matrix, row, column).
std::uint16_t tag(int m, int r, int c) { return static_cast<std::uint16_t>(0x1000 * (m + 1) + 0x10 * r + c); }

void fill_tagged_rows(std::uint16_t rows[4][8][8]) {
  for (int m = 0; m < 4; ++m)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) rows[m][r][c] = tag(m, r, c);
}

TEST(Ldmatrix, AddressingLanesPerNum) {
  // ".x1: threads 0-7 give addr0-addr7; .x2: threads 0-15; .x4: threads 0-31".
  EXPECT_EQ(ldmatrix_address_lanes(1), 8);
  EXPECT_EQ(ldmatrix_address_lanes(2), 16);
  EXPECT_EQ(ldmatrix_address_lanes(4), 32);
  EXPECT_THROW(ldmatrix_address_lanes(0), Fault);
  EXPECT_THROW(ldmatrix_address_lanes(3), Fault);
  EXPECT_THROW(ldmatrix_address_lanes(8), Fault);
  EXPECT_EQ(ldmatrix_row_bytes, 16);  // 8 elements of 16 bits: "a group of four threads loads 16 bytes"
}

// Runs ldmatrix_distribute for .x1, .x2 and .x4 on tagged rows: register m of each lane must hold
// the elements `expected(lane, half)` (row, col) of matrix m, registers from num on untouched.
template <class Expected>
void expect_distribution(const std::uint16_t (&rows)[4][8][8], bool trans, Expected expected) {
  for (int num : {1, 2, 4}) {
    std::uint32_t out[32][4];
    for (auto& lane : out)
      for (auto& reg : lane) reg = 0xDEADBEEFu;
    ldmatrix_distribute(num, trans, rows, out);
    for (int lane = 0; lane < 32; ++lane)
      for (int m = 0; m < 4; ++m) {
        if (m >= num) {
          EXPECT_EQ(out[lane][m], 0xDEADBEEFu) << "x" << num << " must leave register " << m;
          continue;
        }
        const Coord lo = expected(lane, 0), hi = expected(lane, 1);
        EXPECT_EQ(low_half(out[lane][m]), tag(m, lo.row, lo.col)) << "x" << num << " lane " << lane;
        EXPECT_EQ(high_half(out[lane][m]), tag(m, hi.row, hi.col)) << "x" << num << " lane " << lane;
      }
  }
}

TEST(Ldmatrix, EachLaneReceivesTwoElementsOfRowLaneOverFour) {
  // "Each thread loads fragments of a row, thread 0 receiving the first fragment; a group of four
  // threads loads an entire row": lane l gets row l/4, columns 2*(l%4) and +1, of matrix m in
  // register m.
  std::uint16_t rows[4][8][8];
  fill_tagged_rows(rows);
  expect_distribution(rows, false, [](int lane, int half) { return Coord{lane / 4, 2 * (lane % 4) + half}; });
  // Spot checks: lane 0 gets (row 0, cols 0-1), lane 7 (row 1, cols 6-7), lane 31 (row 7, cols 6-7).
  std::uint32_t out[32][4];
  ldmatrix_distribute(4, false, rows, out);
  EXPECT_EQ(out[0][0], tag(0, 0, 0) | (std::uint32_t{tag(0, 0, 1)} << 16));
  EXPECT_EQ(out[7][2], tag(2, 1, 6) | (std::uint32_t{tag(2, 1, 7)} << 16));
  EXPECT_EQ(out[31][3], tag(3, 7, 6) | (std::uint32_t{tag(3, 7, 7)} << 16));
}

TEST(Ldmatrix, TransDeliversTheTranspose) {
  // ".trans: the matrix is loaded in column-major format": lane l gets row l/4 of the transpose,
  // i.e. stored elements (2*(l%4), l/4) and (2*(l%4)+1, l/4).
  std::uint16_t rows[4][8][8];
  fill_tagged_rows(rows);
  expect_distribution(rows, true, [](int lane, int half) { return Coord{2 * (lane % 4) + half, lane / 4}; });
  EXPECT_EQ(ldmatrix_element(true, 1, 0), (Coord{2, 0}));
  EXPECT_EQ(ldmatrix_element(true, 4, 1), (Coord{1, 1}));
  EXPECT_EQ(ldmatrix_element(false, 4, 1), (Coord{1, 1}));
  EXPECT_EQ(ldmatrix_element(false, 1, 0), (Coord{0, 2}));
  std::uint32_t out[32][4];
  EXPECT_THROW(ldmatrix_distribute(3, true, rows, out), Fault);
}

TEST(Ldmatrix, X4OfTheFourQuadrantsIsTheMmaAFragment) {
  // Quadrant order A[0:8][0:8], A[8:16][0:8], A[0:8][8:16], A[8:16][8:16] yields a0..a7 as the
  // mma.m16n8k16 formulas place them.
  std::uint16_t a[16][16];
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) a[r][c] = static_cast<std::uint16_t>(r * 16 + c);
  const int row0[4] = {0, 8, 0, 8}, col0[4] = {0, 0, 8, 8};
  std::uint16_t rows[4][8][8];
  for (int m = 0; m < 4; ++m)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) rows[m][r][c] = a[row0[m] + r][col0[m] + c];
  std::uint32_t out[32][4];
  ldmatrix_distribute(4, false, rows, out);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 8; ++i)
      EXPECT_EQ(half_at(out[lane], i), a[isa::a_row(lane, i)][isa::a_col(lane, i)]) << "lane " << lane << " a" << i;
}

TEST(Ldmatrix, X2TransOfRowMajorBIsTheMmaBFragment) {
  // B (16x8, k x n) stored row by row: rows k 0-7 as matrix 0 and 8-15 as matrix 1, transposed,
  // yield b0..b3 as the mma.m16n8k16 formulas place them.
  std::uint16_t b[16][8];
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n) b[k][n] = static_cast<std::uint16_t>(k * 8 + n);
  std::uint16_t rows[4][8][8] = {};
  for (int m = 0; m < 2; ++m)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) rows[m][r][c] = b[8 * m + r][c];
  std::uint32_t out[32][4];
  ldmatrix_distribute(2, true, rows, out);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(half_at(out[lane], i), b[isa::b_row(lane, i)][isa::b_col(lane, i)]) << "lane " << lane << " b" << i;
}

// ---- wmma m16n16k16 ------------------------------------------------------------------------------

TEST(Wmma, RegisterCountsOfTheIsa) {
  // "Matrix Fragments for WMMA": .f16 A or B: eight .f16x2 registers; .bf16 m16n16k16 A or B:
  // four .b32 registers of two elements; .f32 C or D: eight .f32 registers.
  EXPECT_EQ(wmma_register_count(WmmaMatrix::a, WarpMatrixType::f16), 8);
  EXPECT_EQ(wmma_register_count(WmmaMatrix::b, WarpMatrixType::f16), 8);
  EXPECT_EQ(wmma_register_count(WmmaMatrix::a, WarpMatrixType::bf16), 4);
  EXPECT_EQ(wmma_register_count(WmmaMatrix::b, WarpMatrixType::bf16), 4);
  EXPECT_EQ(wmma_register_count(WmmaMatrix::accumulator, WarpMatrixType::f32), 8);
  EXPECT_EQ(wmma_elements_per_register(WarpMatrixType::f16), 2);
  EXPECT_EQ(wmma_elements_per_register(WarpMatrixType::bf16), 2);
  EXPECT_EQ(wmma_elements_per_register(WarpMatrixType::f32), 1);
  EXPECT_EQ(wmma_slot_count(WmmaMatrix::a, WarpMatrixType::f16), 16);
  EXPECT_EQ(wmma_slot_count(WmmaMatrix::b, WarpMatrixType::bf16), 8);
  EXPECT_EQ(wmma_slot_count(WmmaMatrix::accumulator, WarpMatrixType::f32), 8);
  // "Matrix Storage for WMMA": for wmma.load.a...m16n16k16.f16 "fragment size in bytes = 32".
  EXPECT_EQ(wmma_fragment_bytes(WmmaMatrix::a, WarpMatrixType::f16), 32);
  EXPECT_EQ(wmma_fragment_bytes(WmmaMatrix::a, WarpMatrixType::bf16), 16);
  EXPECT_EQ(wmma_fragment_bytes(WmmaMatrix::accumulator, WarpMatrixType::f32), 32);
  // Not simulated: f32 multiplicands, 16-bit accumulators.
  EXPECT_THROW(wmma_register_count(WmmaMatrix::a, WarpMatrixType::f32), Fault);
  EXPECT_THROW(wmma_register_count(WmmaMatrix::accumulator, WarpMatrixType::f16), Fault);
  EXPECT_THROW(wmma_register_count(WmmaMatrix::accumulator, WarpMatrixType::bf16), Fault);
}

TEST(Wmma, EveryElementIsHeldAndDuplicatesOnlyWhereRegistersExceedTheTile) {
  // 32 lanes x slots must cover the 256 elements of the tile evenly: f16 A/B 512 slots (each
  // element twice), bf16 A/B and the f32 accumulator 256 (each once).
  struct Kind {
    WmmaMatrix matrix;
    WarpMatrixType type;
    int copies;
  };
  for (const Kind kind : {Kind{WmmaMatrix::a, WarpMatrixType::f16, 2}, Kind{WmmaMatrix::b, WarpMatrixType::f16, 2},
                          Kind{WmmaMatrix::a, WarpMatrixType::bf16, 1}, Kind{WmmaMatrix::b, WarpMatrixType::bf16, 1},
                          Kind{WmmaMatrix::accumulator, WarpMatrixType::f32, 1}})
    for (WmmaLayout layout : {WmmaLayout::row, WmmaLayout::col}) {
      int seen[16][16] = {};
      const int slots = wmma_slot_count(kind.matrix, kind.type);
      for (int lane = 0; lane < 32; ++lane)
        for (int slot = 0; slot < slots; ++slot) {
          const Coord at = wmma_element(kind.matrix, kind.type, layout, lane, slot);
          ASSERT_TRUE(at.row >= 0 && at.row < 16 && at.col >= 0 && at.col < 16);
          ++seen[at.row][at.col];
        }
      for (auto& row : seen)
        for (int count : row) EXPECT_EQ(count, kind.copies);
    }
  EXPECT_THROW(wmma_element(WmmaMatrix::a, WarpMatrixType::bf16, WmmaLayout::row, 0, 8), std::out_of_range);
  EXPECT_THROW(wmma_element(WmmaMatrix::a, WarpMatrixType::f16, WmmaLayout::row, 32, 0), std::out_of_range);
}

TEST(Wmma, ElementOffsetsFollowTheMatrixStorageRules) {
  // "Matrix Storage for WMMA": row-major keeps each row contiguous, column-major each column; the
  // stride (in elements, not bytes) separates the starts of consecutive rows or columns and may
  // not be below the default, 16 for every m16n16k16 matrix.
  EXPECT_EQ(wmma_element_offset(WmmaLayout::row, 3, 5, 16), 3 * 16 + 5);
  EXPECT_EQ(wmma_element_offset(WmmaLayout::col, 3, 5, 16), 5 * 16 + 3);
  EXPECT_EQ(wmma_element_offset(WmmaLayout::row, 15, 15, 1000), 15 * 1000 + 15);
  EXPECT_EQ(wmma_element_offset(WmmaLayout::col, 2, 7, 48), 7 * 48 + 2);
  EXPECT_EQ(wmma_default_stride, 16);
  EXPECT_THROW(wmma_element_offset(WmmaLayout::row, 0, 0, 15), Fault);
  EXPECT_THROW(wmma_element_offset(WmmaLayout::row, 16, 0, 16), std::out_of_range);
}

TEST(Wmma, EachLaneReadsSixteenContiguousBytesOfAMultiplicand) {
  // The simulator's own choice (documented in the header): a lane's eight distinct A/B elements
  // lie next to each other in memory, in either layout, and .f16 holds them twice.
  for (WarpMatrixType type : {WarpMatrixType::f16, WarpMatrixType::bf16})
    for (WmmaLayout layout : {WmmaLayout::row, WmmaLayout::col})
      for (int lane = 0; lane < 32; ++lane) {
        const Coord first = wmma_element(WmmaMatrix::a, type, layout, lane, 0);
        const std::int64_t start = wmma_element_offset(layout, first.row, first.col, 16);
        EXPECT_EQ(start, 8 * lane);
        for (int slot = 0; slot < 8; ++slot) {
          const Coord at = wmma_element(WmmaMatrix::a, type, layout, lane, slot);
          EXPECT_EQ(wmma_element_offset(layout, at.row, at.col, 16), start + slot);
          // .f16 has sixteen slots: registers 4..7 repeat registers 0..3.
          if (type == WarpMatrixType::f16) {
            EXPECT_EQ(wmma_element(WmmaMatrix::a, type, layout, lane, slot + 8), at);
          }
        }
      }
}

// Memory of one matrix as the interpreter would hold it: a stride-separated tile, poisoned around.
constexpr std::int64_t stride = 32;
constexpr std::size_t matrix_elements = 16 * stride;
constexpr std::uint16_t poison16 = 0x7E01;      // a NaN in f16 and in bf16
constexpr std::uint32_t poison32 = 0x7FC0DEADu;  // a NaN in f32

// wmma.load as an interpreter does it: each lane reads the elements its slots name.
void load_multiplicand(WmmaMatrix matrix, WarpMatrixType type, WmmaLayout layout,
                       const std::vector<std::uint16_t>& memory, std::uint32_t fragment[32][8]) {
  for (int lane = 0; lane < 32; ++lane)
    for (int slot = 0; slot < wmma_slot_count(matrix, type); ++slot) {
      const Coord at = wmma_element(matrix, type, layout, lane, slot);
      put_half(fragment[lane], slot, memory.at(wmma_element_offset(layout, at.row, at.col, stride)));
    }
}
void load_accumulator(WmmaLayout layout, const std::vector<std::uint32_t>& memory, std::uint32_t fragment[32][8]) {
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 8; ++reg) {
      const Coord at = wmma_element(WmmaMatrix::accumulator, WarpMatrixType::f32, layout, lane, reg);
      fragment[lane][reg] = memory.at(wmma_element_offset(layout, at.row, at.col, stride));
    }
}
void store_accumulator(WmmaLayout layout, const std::uint32_t fragment[32][8], std::vector<std::uint32_t>& memory) {
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 8; ++reg) {
      const Coord at = wmma_element(WmmaMatrix::accumulator, WarpMatrixType::f32, layout, lane, reg);
      memory.at(wmma_element_offset(layout, at.row, at.col, stride)) = fragment[lane][reg];
    }
}
// Where (row, col) of a tile lies in memory, by the storage rules (independent of the library).
std::size_t stored_at(WmmaLayout layout, int row, int col) {
  return static_cast<std::size_t>(layout == WmmaLayout::row ? row * stride + col : col * stride + row);
}

TEST(Wmma, LoadMmaStoreMatchesATripleLoopForEveryLayoutAndType) {
  std::mt19937 rng(99);
  const WmmaLayout layouts[] = {WmmaLayout::row, WmmaLayout::col};
  for (WarpMatrixType type : {WarpMatrixType::f16, WarpMatrixType::bf16})
    for (WmmaLayout a_layout : layouts)
      for (WmmaLayout b_layout : layouts)
        for (WmmaLayout c_layout : layouts)
          for (WmmaLayout d_layout : layouts) {
            SCOPED_TRACE(::testing::Message() << "type " << static_cast<int>(type) << " a " << static_cast<int>(a_layout)
                                              << " b " << static_cast<int>(b_layout) << " c " << static_cast<int>(c_layout)
                                              << " d " << static_cast<int>(d_layout));
            const auto a_values = random_ints(rng, 256, -8, 8), b_values = random_ints(rng, 256, -8, 8),
                       c_values = random_ints(rng, 256, -50, 50);
            std::vector<std::uint16_t> a_memory(matrix_elements, poison16), b_memory(matrix_elements, poison16);
            std::vector<std::uint32_t> c_memory(matrix_elements, poison32), d_memory(matrix_elements, poison32);
            for (int r = 0; r < 16; ++r)
              for (int c = 0; c < 16; ++c) {
                a_memory[stored_at(a_layout, r, c)] = bits_of(type, a_values[r * 16 + c]);
                b_memory[stored_at(b_layout, r, c)] = bits_of(type, b_values[r * 16 + c]);
                c_memory[stored_at(c_layout, r, c)] = f32_bits(static_cast<float>(c_values[r * 16 + c]));
              }
            // Registers a fragment does not have (4..7 for bf16) hold junk that must not matter.
            std::uint32_t a[32][8], b[32][8], c[32][8], d[32][8];
            for (int lane = 0; lane < 32; ++lane)
              for (int reg = 0; reg < 8; ++reg) a[lane][reg] = b[lane][reg] = d[lane][reg] = 0xFFFFFFFFu;
            load_multiplicand(WmmaMatrix::a, type, a_layout, a_memory, a);
            load_multiplicand(WmmaMatrix::b, type, b_layout, b_memory, b);
            load_accumulator(c_layout, c_memory, c);
            wmma_mma(type, type, a_layout, b_layout, a, b, c, d);
            store_accumulator(d_layout, d, d_memory);

            std::vector<bool> in_tile(matrix_elements, false);
            for (int r = 0; r < 16; ++r)
              for (int n = 0; n < 16; ++n) {
                double expected = c_values[r * 16 + n];
                for (int k = 0; k < 16; ++k) expected += a_values[r * 16 + k] * b_values[k * 16 + n];
                const std::size_t at = stored_at(d_layout, r, n);
                in_tile[at] = true;
                ASSERT_EQ(f32_value(d_memory[at]), expected) << "D[" << r << "][" << n << "]";
              }
            for (std::size_t i = 0; i < matrix_elements; ++i)
              if (!in_tile[i]) {
                ASSERT_EQ(d_memory[i], poison32) << "store wrote outside the tile at " << i;
              }
          }
}

TEST(Wmma, PackHelpersAgreeWithElementwiseLoads) {
  std::uint16_t tile[16][16];
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) tile[r][c] = static_cast<std::uint16_t>(0x100 * r + c);
  std::vector<std::uint16_t> memory(matrix_elements, poison16);
  for (WarpMatrixType type : {WarpMatrixType::f16, WarpMatrixType::bf16})
    for (WmmaMatrix matrix : {WmmaMatrix::a, WmmaMatrix::b})
      for (WmmaLayout layout : {WmmaLayout::row, WmmaLayout::col}) {
        for (int r = 0; r < 16; ++r)
          for (int c = 0; c < 16; ++c) memory[stored_at(layout, r, c)] = tile[r][c];
        std::uint32_t loaded[32][8] = {}, packed[32][8] = {};
        load_multiplicand(matrix, type, layout, memory, loaded);
        wmma_pack_multiplicand(matrix, type, layout, tile, packed);
        for (int lane = 0; lane < 32; ++lane)
          for (int reg = 0; reg < wmma_register_count(matrix, type); ++reg) EXPECT_EQ(packed[lane][reg], loaded[lane][reg]);
        std::uint16_t back[16][16];
        wmma_unpack_multiplicand(matrix, type, layout, packed, back);
        for (int r = 0; r < 16; ++r)
          for (int c = 0; c < 16; ++c) EXPECT_EQ(back[r][c], tile[r][c]);
      }
  std::uint32_t tile32[16][16], fragment[32][8], back32[16][16];
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) tile32[r][c] = f32_bits(static_cast<float>(r * 16 + c));
  wmma_pack_accumulator(tile32, fragment);
  wmma_unpack_accumulator(fragment, back32);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) EXPECT_EQ(back32[r][c], tile32[r][c]);
}

TEST(Wmma, UniformChangesOfAFragmentAreAllowedOthersFault) {
  // "Manipulating fragment contents": operating on every register uniformly changes the matrix
  // uniformly. Negating every element of A gives D = C - A*B.
  std::uint16_t a_tile[16][16], b_tile[16][16];
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) {
      a_tile[r][c] = to_fp16(r == c ? 1 : 0);
      b_tile[r][c] = to_fp16(r * 16 + c - 100);
    }
  std::uint32_t a[32][8], b[32][8], c[32][8], d[32][8];
  wmma_pack_multiplicand(WmmaMatrix::a, WarpMatrixType::f16, WmmaLayout::row, a_tile, a);
  wmma_pack_multiplicand(WmmaMatrix::b, WarpMatrixType::f16, WmmaLayout::col, b_tile, b);
  for (auto& lane : c)
    for (auto& reg : lane) reg = f32_bits(1000.0f);
  for (auto& lane : a)
    for (auto& reg : lane) reg ^= 0x80008000u;  // flip both sign bits: every element negated
  wmma_mma(WarpMatrixType::f16, WarpMatrixType::f16, WmmaLayout::row, WmmaLayout::col, a, b, c, d);
  std::uint32_t d_tile[16][16];
  wmma_unpack_accumulator(d, d_tile);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) EXPECT_EQ(f32_value(d_tile[r][n]), 1000.0f - static_cast<float>(r * 16 + n - 100));

  // Changing one register of one lane splits an f16 element's two copies: undefined in the ISA,
  // a Fault here.
  a[3][5] ^= 0x00000001u;
  EXPECT_THROW(wmma_mma(WarpMatrixType::f16, WarpMatrixType::f16, WmmaLayout::row, WmmaLayout::col, a, b, c, d), Fault);
}

TEST(Wmma, UnsupportedTypeCombinationsFault) {
  std::uint32_t a[32][8] = {}, b[32][8] = {}, c[32][8] = {}, d[32][8];
  EXPECT_THROW(wmma_mma(WarpMatrixType::f16, WarpMatrixType::bf16, WmmaLayout::row, WmmaLayout::row, a, b, c, d), Fault);
  EXPECT_THROW(wmma_mma(WarpMatrixType::f32, WarpMatrixType::f32, WmmaLayout::row, WmmaLayout::row, a, b, c, d), Fault);
  std::uint16_t tile[16][16] = {};
  EXPECT_THROW(wmma_pack_multiplicand(WmmaMatrix::a, WarpMatrixType::f32, WmmaLayout::row, tile, a), Fault);
}

}  // namespace
}  // namespace gemmlab::ptx::sim
