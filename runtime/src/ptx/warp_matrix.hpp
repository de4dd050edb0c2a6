// Warp-level tensor-core operations of the PTX simulator, as pure functions on the registers of a
// whole warp: mma.sync m16n8k16 (f16/bf16 inputs, f32 accumulators), ldmatrix m8n8 .b16 (.x1,
// .x2, .x4, optional .trans) and wmma m16n16k16 (f16/bf16 inputs, f32 accumulators).
//
// Registers are 32-bit values in arrays indexed [lane][register] over the 32 lanes of a warp. A
// register of 16-bit elements (.f16x2, .b32 holding two .bf16/.b16) keeps the element with the
// lower index in its low 16 bits; an f32 register holds the float's bit pattern.
//
// Memory stays with the interpreter (bounds, alignment, traffic): the functions here say which
// lane and register holds which element of a matrix, and move or compute registers only.
//
// Errors: a misuse a kernel can cause (unsupported type combination, a .num other than 1, 2, 4, a
// wmma stride below the default, a manipulated wmma fragment whose copies disagree) throws Fault;
// a lane or element index out of range is the caller's bug and throws std::out_of_range.
//
// Arithmetic (mma and wmma.mma). The ISA leaves the accumulation order, its rounding and the
// handling of subnormal inputs unspecified; this simulator is deterministic:
//     D[i][j] = C[i][j];  for k = 0, 1, ..., K-1:  D[i][j] = fmaf(A[i][k], B[k][j], D[i][j])
// i.e. k ascending, starting from C, one fp32 fused multiply-add (one rounding, to nearest even)
// per product. Inputs are decoded exactly (f16 and bf16 values are all fp32 values), subnormals
// kept, so the product of two f16 values is exact; sums round at every step.
#pragma once

#include <cstdint>

namespace gemmlab::ptx::sim {

inline constexpr int warp_matrix_lanes = 32;

// Element types of the matrices; f32 only for accumulators.
enum class WarpMatrixType { f16, bf16, f32 };

// A position in a matrix or tile, 0-based.
struct WarpMatrixCoord {
  int row = 0;
  int col = 0;
  friend bool operator==(const WarpMatrixCoord&, const WarpMatrixCoord&) = default;
};

// ---- mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 -----------------------------
// D (16x8) = A (16x16) * B (16x8) + C (16x8). Ownership as in the PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type": A is a0..a7 in four registers (register i/2, low half
// for even i), B is b0..b3 in two registers, C and D are c0..c3 in four f32 registers.

inline constexpr int mma_m16n8k16_a_registers = 4;
inline constexpr int mma_m16n8k16_b_registers = 2;
inline constexpr int mma_m16n8k16_c_registers = 4;

// The element of A (row, col in 16x16) that `lane` holds as ai, i in 0..7.
WarpMatrixCoord mma_m16n8k16_a_element(int lane, int i);
// The element of B (row = k in 0..15, col = n in 0..7) that `lane` holds as bi, i in 0..3.
WarpMatrixCoord mma_m16n8k16_b_element(int lane, int i);
// The element of C or D (16x8) that `lane` holds as ci (f32 register i), i in 0..3.
WarpMatrixCoord mma_m16n8k16_c_element(int lane, int i);

// One warp's mma. a_type and b_type must be equal and f16 or bf16 (Fault otherwise). `d` may be
// the same array as `c` (accumulating in place).
void mma_m16n8k16(WarpMatrixType a_type, WarpMatrixType b_type,
                  const std::uint32_t a[warp_matrix_lanes][mma_m16n8k16_a_registers],
                  const std::uint32_t b[warp_matrix_lanes][mma_m16n8k16_b_registers],
                  const std::uint32_t c[warp_matrix_lanes][mma_m16n8k16_c_registers],
                  std::uint32_t d[warp_matrix_lanes][mma_m16n8k16_c_registers]);

// ---- ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 -----------------------------------
// Each of the `num` 8x8 matrices of 16-bit elements is given by eight row addresses, each the
// start of a 16-byte row: lane l (l < 8*num) supplies row l%8 of matrix l/8. Lane l then receives,
// in register m, two consecutive elements of row l/4 of matrix m (columns 2*(l%4) and +1, low
// half first); with .trans, of row l/4 of the transposed matrix (PTX ISA, "ldmatrix").

inline constexpr int ldmatrix_row_bytes = 16;  // also the alignment each row address needs

// The lanes whose addresses are read, 0 .. result-1: 8, 16 or 32. Fault unless num is 1, 2 or 4.
int ldmatrix_address_lanes(int num);
// The (row, col) of the matrix as stored in memory (row = the addressing lane's row) whose value
// `lane` receives in the low (half 0) or high (half 1) 16 bits of its register.
WarpMatrixCoord ldmatrix_element(bool trans, int lane, int half);
// rows[m][r][c] is element c of the row that lane 8*m + r points to (only m < num are read).
// Writes out[lane][m] for m < num; registers num..3 are left as they are.
void ldmatrix_distribute(int num, bool trans, const std::uint16_t rows[4][8][8],
                         std::uint32_t out[warp_matrix_lanes][4]);

// ---- wmma m16n16k16, f16/bf16 multiplicands, f32 accumulator --------------------------------------
// Register counts per lane are the ISA's ("Matrix Fragments for WMMA"): .f16 A or B: eight
// .f16x2 registers; .bf16 A or B: four .b32 registers of two elements; .f32 C or D: eight .f32
// registers. Which lane holds which element is unspecified by the ISA; this simulator uses:
//
//   A and B (16-bit): slot s of lane l, where slot s is the low (even s) or high (odd s) half of
//   register s/2, holds the element at position 8*l + s%8 of the tile in its stored order: row by
//   row for .row, column by column for .col. So lane l holds eight elements that are consecutive
//   in memory (16 bytes): row l/2 (.row) or column l/2 (.col), columns or rows 8*(l%2) .. +7.
//   .bf16 has exactly these 8 slots (each element once). .f16 has 16 slots, twice what a 256-
//   element tile needs: registers 4..7 repeat registers 0..3, so each element is held twice.
//   wmma.mma reads the first copy and faults if the copies disagree (a non-uniform change).
//
//   Accumulator (C, D; f32): register s of lane l holds element (l/2, 8*(l%2) + s) whatever the
//   layout, since wmma.mma takes C without a layout and a C loaded .row may be stored .col.
//
// A fragment loaded with one layout must be used by wmma.mma with the same layout (ISA); a
// mismatch here multiplies by the transposed tile, as it may on hardware.

enum class WmmaMatrix { a, b, accumulator };  // accumulator: C and D
enum class WmmaLayout { row, col };

inline constexpr int wmma_tile = 16;            // M = N = K = 16
inline constexpr int wmma_max_registers = 8;    // the most registers any fragment has
inline constexpr std::int64_t wmma_default_stride = 16;  // every matrix of m16n16k16, both layouts

// Registers per lane: 8 (.f16 A/B), 4 (.bf16 A/B), 8 (.f32 accumulator); Fault for other pairs
// (f32 A/B, f16 or bf16 accumulators: not simulated).
int wmma_register_count(WmmaMatrix matrix, WarpMatrixType type);
// Elements per register: 2 for f16 and bf16, 1 for f32.
int wmma_elements_per_register(WarpMatrixType type);
// Slots per lane: registers times elements per register (16, 8 and 8).
int wmma_slot_count(WmmaMatrix matrix, WarpMatrixType type);
// Bytes of a fragment per lane (registers * 4): the alignment the ISA requires of the start of
// each row (.row) or column (.col) in memory ("Matrix Storage for WMMA").
int wmma_fragment_bytes(WmmaMatrix matrix, WarpMatrixType type);

// The (row, col) of the 16x16 tile held by `lane` in `slot` (register slot / elements per
// register, low half first). `layout` is ignored for the accumulator.
WarpMatrixCoord wmma_element(WmmaMatrix matrix, WarpMatrixType type, WmmaLayout layout, int lane,
                             int slot);
// Elements from the tile's base address to element (row, col), `stride` elements between the
// starts of consecutive rows (.row) or columns (.col). Fault if stride < wmma_default_stride
// (undefined behaviour in the ISA).
std::int64_t wmma_element_offset(WmmaLayout layout, int row, int col, std::int64_t stride);

// Whole-tile conveniences built on wmma_element. tile16 holds 16-bit bit patterns, tile32 f32
// bit patterns, both indexed [row][col].
void wmma_pack_multiplicand(WmmaMatrix matrix, WarpMatrixType type, WmmaLayout layout,
                            const std::uint16_t tile16[wmma_tile][wmma_tile],
                            std::uint32_t fragment[warp_matrix_lanes][wmma_max_registers]);
// Reads the tile back; Fault if two copies of an element (f16) differ.
void wmma_unpack_multiplicand(WmmaMatrix matrix, WarpMatrixType type, WmmaLayout layout,
                              const std::uint32_t fragment[warp_matrix_lanes][wmma_max_registers],
                              std::uint16_t tile16[wmma_tile][wmma_tile]);
void wmma_pack_accumulator(const std::uint32_t tile32[wmma_tile][wmma_tile],
                           std::uint32_t fragment[warp_matrix_lanes][wmma_max_registers]);
void wmma_unpack_accumulator(const std::uint32_t fragment[warp_matrix_lanes][wmma_max_registers],
                             std::uint32_t tile32[wmma_tile][wmma_tile]);

// wmma.mma.sync.aligned.{alayout}.{blayout}.m16n16k16.f32.{atype}.{btype}.f32 (for .f16 inputs
// written ...m16n16k16.f32.f32): D = A * B + C. a_type and b_type must be equal and f16 or bf16
// (Fault otherwise). Only the registers a fragment has are read or written (4 for .bf16 A/B).
// `d` may be the same array as `c`.
void wmma_mma(WarpMatrixType a_type, WarpMatrixType b_type, WmmaLayout a_layout,
              WmmaLayout b_layout,
              const std::uint32_t a[warp_matrix_lanes][wmma_max_registers],
              const std::uint32_t b[warp_matrix_lanes][wmma_max_registers],
              const std::uint32_t c[warp_matrix_lanes][wmma_max_registers],
              std::uint32_t d[warp_matrix_lanes][wmma_max_registers]);

}  // namespace gemmlab::ptx::sim
