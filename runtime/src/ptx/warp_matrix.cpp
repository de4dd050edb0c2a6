// Warp-level tensor-core operations of the PTX simulator (warp_matrix.hpp).
#include "ptx/warp_matrix.hpp"

#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

#include "gemmlab/validate.hpp"
#include "ptx/fault.hpp"

namespace gemmlab::ptx::sim {

namespace {

void check_index(const char* what, int value, int count) {
  if (value < 0 || value >= count)
    throw std::out_of_range(std::string(what) + " " + std::to_string(value) + " is outside 0.." +
                            std::to_string(count - 1));
}

std::string type_name(WarpMatrixType type) {
  switch (type) {
    case WarpMatrixType::f16: return ".f16";
    case WarpMatrixType::bf16: return ".bf16";
    case WarpMatrixType::f32: return ".f32";
  }
  return "?";
}

// The multiplicands of one instruction share one 16-bit type.
void check_multiplicand_types(const char* instruction, WarpMatrixType a_type, WarpMatrixType b_type) {
  if (a_type == WarpMatrixType::f32 || b_type == WarpMatrixType::f32 || a_type != b_type)
    throw Fault(std::string(instruction) + ": multiplicand types " + type_name(a_type) + " and " +
                type_name(b_type) + " are not supported; both must be .f16 or both .bf16");
}

std::uint16_t half_of(std::uint32_t reg, int half) {
  return static_cast<std::uint16_t>(half == 0 ? reg & 0xffffu : reg >> 16);
}
std::uint32_t pack_halves(std::uint16_t low, std::uint16_t high) {
  return std::uint32_t{low} | (std::uint32_t{high} << 16);
}

// Exact: every f16 and bf16 value is an fp32 value.
float decode(WarpMatrixType type, std::uint16_t bits) {
  return static_cast<float>(type == WarpMatrixType::f16 ? from_fp16(bits) : from_bf16(bits));
}

// The documented order: start from C, then one fp32 fused multiply-add per k, k ascending.
template <int M, int N, int K>
void multiply_accumulate(const float (&a)[M][K], const float (&b)[K][N], float (&acc)[M][N]) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) acc[i][j] = std::fma(a[i][k], b[k][j], acc[i][j]);
}

}  // namespace

// ---- mma m16n8k16 ----------------------------------------------------------------------------------
// The ISA's formulas seen as 8x8 quadrants: each register covers one quadrant, in which lane l
// holds row l/4 (groupID), columns 2*(l%4) and +1 (threadID_in_group) — for B the transpose.

WarpMatrixCoord mma_m16n8k16_a_element(int lane, int i) {
  check_index("lane", lane, warp_matrix_lanes);
  check_index("mma.m16n8k16 A element", i, 8);
  const int reg = i / 2;  // quadrants in register order: rows 0-7, 8-15, then columns 8-15
  return {8 * (reg % 2) + lane / 4, 8 * (reg / 2) + 2 * (lane % 4) + i % 2};
}

WarpMatrixCoord mma_m16n8k16_b_element(int lane, int i) {
  check_index("lane", lane, warp_matrix_lanes);
  check_index("mma.m16n8k16 B element", i, 4);
  const int reg = i / 2;  // register 0: k 0-7, register 1: k 8-15
  return {8 * reg + 2 * (lane % 4) + i % 2, lane / 4};
}

WarpMatrixCoord mma_m16n8k16_c_element(int lane, int i) {
  check_index("lane", lane, warp_matrix_lanes);
  check_index("mma.m16n8k16 C/D element", i, 4);
  return {8 * (i / 2) + lane / 4, 2 * (lane % 4) + i % 2};
}

void mma_m16n8k16(WarpMatrixType a_type, WarpMatrixType b_type,
                  const std::uint32_t a[warp_matrix_lanes][mma_m16n8k16_a_registers],
                  const std::uint32_t b[warp_matrix_lanes][mma_m16n8k16_b_registers],
                  const std::uint32_t c[warp_matrix_lanes][mma_m16n8k16_c_registers],
                  std::uint32_t d[warp_matrix_lanes][mma_m16n8k16_c_registers]) {
  check_multiplicand_types("mma.m16n8k16", a_type, b_type);
  float a_tile[16][16], b_tile[16][8], acc[16][8];
  for (int lane = 0; lane < warp_matrix_lanes; ++lane) {
    for (int i = 0; i < 8; ++i) {
      const auto at = mma_m16n8k16_a_element(lane, i);
      a_tile[at.row][at.col] = decode(a_type, half_of(a[lane][i / 2], i % 2));
    }
    for (int i = 0; i < 4; ++i) {
      const auto at = mma_m16n8k16_b_element(lane, i);
      b_tile[at.row][at.col] = decode(b_type, half_of(b[lane][i / 2], i % 2));
    }
    for (int i = 0; i < 4; ++i) {
      const auto at = mma_m16n8k16_c_element(lane, i);
      acc[at.row][at.col] = std::bit_cast<float>(c[lane][i]);
    }
  }
  multiply_accumulate(a_tile, b_tile, acc);
  // Written only now, so that d may be c.
  for (int lane = 0; lane < warp_matrix_lanes; ++lane)
    for (int i = 0; i < 4; ++i) {
      const auto at = mma_m16n8k16_c_element(lane, i);
      d[lane][i] = std::bit_cast<std::uint32_t>(acc[at.row][at.col]);
    }
}

// ---- ldmatrix m8n8 .b16 ----------------------------------------------------------------------------

int ldmatrix_address_lanes(int num) {
  if (num != 1 && num != 2 && num != 4)
    throw Fault("ldmatrix: .num must be .x1, .x2 or .x4, not " + std::to_string(num) + " matrices");
  return 8 * num;
}

WarpMatrixCoord ldmatrix_element(bool trans, int lane, int half) {
  check_index("lane", lane, warp_matrix_lanes);
  check_index("register half", half, 2);
  const int row = lane / 4, col = 2 * (lane % 4) + half;  // in the matrix as delivered
  return trans ? WarpMatrixCoord{col, row} : WarpMatrixCoord{row, col};
}

void ldmatrix_distribute(int num, bool trans, const std::uint16_t rows[4][8][8],
                         std::uint32_t out[warp_matrix_lanes][4]) {
  ldmatrix_address_lanes(num);  // validates num
  for (int lane = 0; lane < warp_matrix_lanes; ++lane) {
    const auto low = ldmatrix_element(trans, lane, 0), high = ldmatrix_element(trans, lane, 1);
    for (int m = 0; m < num; ++m)
      out[lane][m] = pack_halves(rows[m][low.row][low.col], rows[m][high.row][high.col]);
  }
}

// ---- wmma m16n16k16 --------------------------------------------------------------------------------

int wmma_register_count(WmmaMatrix matrix, WarpMatrixType type) {
  if (matrix == WmmaMatrix::accumulator) {
    if (type == WarpMatrixType::f32) return 8;
    throw Fault("wmma.m16n16k16: accumulators of type " + type_name(type) +
                " are not supported by the simulator; only .f32");
  }
  if (type == WarpMatrixType::f16) return 8;   // eight .f16x2 registers
  if (type == WarpMatrixType::bf16) return 4;  // four .b32 registers of two elements
  throw Fault("wmma.m16n16k16: matrix " + std::string(matrix == WmmaMatrix::a ? "a" : "b") +
              " cannot have type .f32; only .f16 or .bf16");
}

int wmma_elements_per_register(WarpMatrixType type) { return type == WarpMatrixType::f32 ? 1 : 2; }

int wmma_slot_count(WmmaMatrix matrix, WarpMatrixType type) {
  return wmma_register_count(matrix, type) * wmma_elements_per_register(type);
}

int wmma_fragment_bytes(WmmaMatrix matrix, WarpMatrixType type) {
  return wmma_register_count(matrix, type) * 4;
}

WarpMatrixCoord wmma_element(WmmaMatrix matrix, WarpMatrixType type, WmmaLayout layout, int lane,
                             int slot) {
  const int slots = wmma_slot_count(matrix, type);
  check_index("lane", lane, warp_matrix_lanes);
  check_index("wmma fragment slot", slot, slots);
  const int position = 8 * lane + slot % 8;  // in stored order; f16 slots 8..15 repeat 0..7
  if (matrix == WmmaMatrix::accumulator || layout == WmmaLayout::row)
    return {position / wmma_tile, position % wmma_tile};
  return {position % wmma_tile, position / wmma_tile};
}

std::int64_t wmma_element_offset(WmmaLayout layout, int row, int col, std::int64_t stride) {
  check_index("wmma row", row, wmma_tile);
  check_index("wmma column", col, wmma_tile);
  if (stride < wmma_default_stride)
    throw Fault("wmma: stride " + std::to_string(stride) + " is below the matrix's leading dimension " +
                std::to_string(wmma_default_stride));
  return layout == WmmaLayout::row ? row * stride + col : col * stride + row;
}

void wmma_pack_multiplicand(WmmaMatrix matrix, WarpMatrixType type, WmmaLayout layout,
                            const std::uint16_t tile16[wmma_tile][wmma_tile],
                            std::uint32_t fragment[warp_matrix_lanes][wmma_max_registers]) {
  if (matrix == WmmaMatrix::accumulator)
    throw std::invalid_argument("wmma_pack_multiplicand: the accumulator is not a multiplicand");
  const int registers = wmma_register_count(matrix, type);
  for (int lane = 0; lane < warp_matrix_lanes; ++lane)
    for (int reg = 0; reg < registers; ++reg) {
      const auto low = wmma_element(matrix, type, layout, lane, 2 * reg);
      const auto high = wmma_element(matrix, type, layout, lane, 2 * reg + 1);
      fragment[lane][reg] = pack_halves(tile16[low.row][low.col], tile16[high.row][high.col]);
    }
}

void wmma_unpack_multiplicand(WmmaMatrix matrix, WarpMatrixType type, WmmaLayout layout,
                              const std::uint32_t fragment[warp_matrix_lanes][wmma_max_registers],
                              std::uint16_t tile16[wmma_tile][wmma_tile]) {
  if (matrix == WmmaMatrix::accumulator)
    throw std::invalid_argument("wmma_unpack_multiplicand: the accumulator is not a multiplicand");
  const int slots = wmma_slot_count(matrix, type);
  bool seen[wmma_tile][wmma_tile] = {};
  for (int lane = 0; lane < warp_matrix_lanes; ++lane)
    for (int slot = 0; slot < slots; ++slot) {
      const auto at = wmma_element(matrix, type, layout, lane, slot);
      const std::uint16_t value = half_of(fragment[lane][slot / 2], slot % 2);
      if (!seen[at.row][at.col]) {
        tile16[at.row][at.col] = value;
        seen[at.row][at.col] = true;
      } else if (tile16[at.row][at.col] != value) {
        // Only a change that is not the same for every register can split the two copies.
        throw Fault("wmma: the fragment of matrix " + std::string(matrix == WmmaMatrix::a ? "a" : "b") +
                    " holds two different values for element (" + std::to_string(at.row) + ", " +
                    std::to_string(at.col) + ") (lane " + std::to_string(lane) + ", register " +
                    std::to_string(slot / 2) +
                    "); its registers were changed non-uniformly, which the ISA leaves undefined");
      }
    }
}

void wmma_pack_accumulator(const std::uint32_t tile32[wmma_tile][wmma_tile],
                           std::uint32_t fragment[warp_matrix_lanes][wmma_max_registers]) {
  for (int lane = 0; lane < warp_matrix_lanes; ++lane)
    for (int reg = 0; reg < 8; ++reg) {
      const auto at = wmma_element(WmmaMatrix::accumulator, WarpMatrixType::f32, WmmaLayout::row, lane, reg);
      fragment[lane][reg] = tile32[at.row][at.col];
    }
}

void wmma_unpack_accumulator(const std::uint32_t fragment[warp_matrix_lanes][wmma_max_registers],
                             std::uint32_t tile32[wmma_tile][wmma_tile]) {
  for (int lane = 0; lane < warp_matrix_lanes; ++lane)
    for (int reg = 0; reg < 8; ++reg) {
      const auto at = wmma_element(WmmaMatrix::accumulator, WarpMatrixType::f32, WmmaLayout::row, lane, reg);
      tile32[at.row][at.col] = fragment[lane][reg];
    }
}

void wmma_mma(WarpMatrixType a_type, WarpMatrixType b_type, WmmaLayout a_layout,
              WmmaLayout b_layout,
              const std::uint32_t a[warp_matrix_lanes][wmma_max_registers],
              const std::uint32_t b[warp_matrix_lanes][wmma_max_registers],
              const std::uint32_t c[warp_matrix_lanes][wmma_max_registers],
              std::uint32_t d[warp_matrix_lanes][wmma_max_registers]) {
  check_multiplicand_types("wmma.mma.m16n16k16", a_type, b_type);
  std::uint16_t a_bits[wmma_tile][wmma_tile], b_bits[wmma_tile][wmma_tile];
  wmma_unpack_multiplicand(WmmaMatrix::a, a_type, a_layout, a, a_bits);
  wmma_unpack_multiplicand(WmmaMatrix::b, b_type, b_layout, b, b_bits);
  std::uint32_t c_bits[wmma_tile][wmma_tile];
  wmma_unpack_accumulator(c, c_bits);

  float a_tile[wmma_tile][wmma_tile], b_tile[wmma_tile][wmma_tile], acc[wmma_tile][wmma_tile];
  for (int row = 0; row < wmma_tile; ++row)
    for (int col = 0; col < wmma_tile; ++col) {
      a_tile[row][col] = decode(a_type, a_bits[row][col]);
      b_tile[row][col] = decode(b_type, b_bits[row][col]);
      acc[row][col] = std::bit_cast<float>(c_bits[row][col]);
    }
  multiply_accumulate(a_tile, b_tile, acc);

  std::uint32_t d_bits[wmma_tile][wmma_tile];
  for (int row = 0; row < wmma_tile; ++row)
    for (int col = 0; col < wmma_tile; ++col) d_bits[row][col] = std::bit_cast<std::uint32_t>(acc[row][col]);
  wmma_pack_accumulator(d_bits, d);  // after every read of c, so d may be c
}

}  // namespace gemmlab::ptx::sim
