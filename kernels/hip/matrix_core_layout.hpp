// Which element of A, B and C each lane of a wave holds for AMD's matrix-core instructions: the
// index arithmetic of the MFMA (CDNA) and WMMA (RDNA3) kernels, as constexpr functions that the
// kernels call on the device and the tests check on the host against a model of the instructions.
//
// A lane holds `slots` operand values (packed into its registers in slot order); each function
// maps (lane, slot) to the element's row and column within one instruction's block:
//   A block: rows x K, B block: K x cols, C/D block: rows x cols.
//
// v_mfma_f32_32x32x8f16 (CDNA, wave64): 32x32 C, 8 deep. Lane l holds 4 halves of A: row l % 32,
//   k = 4 (l / 32) + slot; 4 halves of B: column l % 32, the same k; 16 floats of D: column l % 32,
//   row 8 (slot / 4) + 4 (l / 32) + slot % 4.
// v_mfma_f32_16x16x16f16 (CDNA, wave64): 16x16 C, 16 deep. A: row l % 16, k = 4 (l / 16) + slot;
//   B: column l % 16, the same k; 4 floats of D: column l % 16, row 4 (l / 16) + slot.
// v_wmma_f32_16x16x16_f16 (RDNA3, wave32): 16x16 C, 16 deep. A: row l % 16, k = slot (16 halves;
//   lanes 16-31 repeat lanes 0-15); B: column l % 16, k = slot (repeated likewise); 8 floats of
//   D: column l % 16, row 2 slot + l / 16.
#pragma once

#if defined(__HIPCC__)
#define GEMMLAB_HOST_DEVICE __host__ __device__
#else
#define GEMMLAB_HOST_DEVICE
#endif

namespace gemmlab::hip {

enum class MatrixInstruction { mfma_f32_32x32x8f16, mfma_f32_16x16x16f16, wmma_f32_16x16x16_f16 };

struct InstructionShape {
  int rows, cols, depth;        // C block rows x cols, K per instruction
  int wave;                     // lanes
  int a_slots, b_slots, d_slots;  // values per lane
};

GEMMLAB_HOST_DEVICE constexpr InstructionShape shape_of(MatrixInstruction i) {
  switch (i) {
    case MatrixInstruction::mfma_f32_32x32x8f16: return {32, 32, 8, 64, 4, 4, 16};
    case MatrixInstruction::mfma_f32_16x16x16f16: return {16, 16, 16, 64, 4, 4, 4};
    case MatrixInstruction::wmma_f32_16x16x16_f16: return {16, 16, 16, 32, 16, 16, 8};
  }
  return {0, 0, 0, 0, 0, 0, 0};
}

struct Element {
  int row, col;
};

// The A value in (lane, slot): row of the block and k.
GEMMLAB_HOST_DEVICE constexpr Element a_element(MatrixInstruction i, int lane, int slot) {
  switch (i) {
    case MatrixInstruction::mfma_f32_32x32x8f16: return {lane % 32, 4 * (lane / 32) + slot};
    case MatrixInstruction::mfma_f32_16x16x16f16: return {lane % 16, 4 * (lane / 16) + slot};
    case MatrixInstruction::wmma_f32_16x16x16_f16: return {lane % 16, slot};
  }
  return {0, 0};
}

// The B value in (lane, slot): k and column of the block.
GEMMLAB_HOST_DEVICE constexpr Element b_element(MatrixInstruction i, int lane, int slot) {
  switch (i) {
    case MatrixInstruction::mfma_f32_32x32x8f16: return {4 * (lane / 32) + slot, lane % 32};
    case MatrixInstruction::mfma_f32_16x16x16f16: return {4 * (lane / 16) + slot, lane % 16};
    case MatrixInstruction::wmma_f32_16x16x16_f16: return {slot, lane % 16};
  }
  return {0, 0};
}

// The C/D value in (lane, slot): row and column of the block.
GEMMLAB_HOST_DEVICE constexpr Element d_element(MatrixInstruction i, int lane, int slot) {
  switch (i) {
    case MatrixInstruction::mfma_f32_32x32x8f16: return {8 * (slot / 4) + 4 * (lane / 32) + slot % 4, lane % 32};
    case MatrixInstruction::mfma_f32_16x16x16f16: return {4 * (lane / 16) + slot, lane % 16};
    case MatrixInstruction::wmma_f32_16x16x16_f16: return {2 * slot + lane / 16, lane % 16};
  }
  return {0, 0};
}

// A wave's tile: blocks_m x blocks_n instruction blocks of C, accumulated over the K of a tile
// step. The element of C a wave's (lane, block, slot) accumulator holds within the wave tile.
GEMMLAB_HOST_DEVICE constexpr Element wave_tile_element(MatrixInstruction i, int block_m, int block_n, int lane,
                                                        int slot) {
  const InstructionShape s = shape_of(i);
  const Element e = d_element(i, lane, slot);
  return {block_m * s.rows + e.row, block_n * s.cols + e.col};
}

}  // namespace gemmlab::hip
