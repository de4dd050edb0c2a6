// The matrix-core kernels' lane-to-matrix arithmetic (kernels/hip/matrix_core_layout.hpp) against
// a model of the instructions written from AMD's documentation of their operand layouts (the CDNA2
// ISA guide's MFMA section and AMD's matrix instruction calculator; the RDNA3 ISA guide's WMMA
// section): each model says which lane and register slot the hardware reads an element of A or B
// from and writes an element of D to, and computes D = A * B + C from the registers that way.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "hip/matrix_core_layout.hpp"

namespace gemmlab::hip {
namespace {

struct Slot {
  int lane, slot;
  bool operator<(const Slot& o) const { return lane != o.lane ? lane < o.lane : slot < o.slot; }
  bool operator==(const Slot&) const = default;
};

// --- The model: where the hardware keeps each element ------------------------------------------

// Every (lane, slot) that holds A[i][k] (WMMA keeps A and B in both halves of the wave).
std::vector<Slot> model_a(MatrixInstruction m, int i, int k) {
  switch (m) {
    case MatrixInstruction::mfma_f32_32x32x8f16: return {{i + 32 * (k / 4), k % 4}};
    case MatrixInstruction::mfma_f32_16x16x16f16: return {{i + 16 * (k / 4), k % 4}};
    case MatrixInstruction::wmma_f32_16x16x16_f16: return {{i, k}, {i + 16, k}};
  }
  return {};
}
// B[k][j] sits where A[j][k] would: the documented layouts give B's columns the lanes A's rows get.
std::vector<Slot> model_b(MatrixInstruction m, int k, int j) { return model_a(m, j, k); }
Slot model_d(MatrixInstruction m, int i, int j) {
  switch (m) {
    case MatrixInstruction::mfma_f32_32x32x8f16: return {j + 32 * ((i / 4) % 2), 4 * (i / 8) + i % 4};
    case MatrixInstruction::mfma_f32_16x16x16f16: return {j + 16 * (i / 4), i % 4};
    case MatrixInstruction::wmma_f32_16x16x16_f16: return {j + 16 * (i % 2), i / 2};
  }
  return {0, 0};
}

// One instruction on a wave's registers: D += A * B, reading and writing where the model says.
// Registers: [lane][slot].
using Registers = std::vector<std::vector<long>>;
void model_execute(MatrixInstruction m, const Registers& a, const Registers& b, Registers& d) {
  const InstructionShape s = shape_of(m);
  for (int i = 0; i < s.rows; ++i)
    for (int j = 0; j < s.cols; ++j) {
      long sum = 0;
      for (int k = 0; k < s.depth; ++k) {
        const Slot as = model_a(m, i, k).front(), bs = model_b(m, k, j).front();
        sum += a[static_cast<std::size_t>(as.lane)][static_cast<std::size_t>(as.slot)] *
               b[static_cast<std::size_t>(bs.lane)][static_cast<std::size_t>(bs.slot)];
      }
      const Slot ds = model_d(m, i, j);
      d[static_cast<std::size_t>(ds.lane)][static_cast<std::size_t>(ds.slot)] += sum;
    }
}

const MatrixInstruction all[] = {MatrixInstruction::mfma_f32_32x32x8f16, MatrixInstruction::mfma_f32_16x16x16f16,
                                 MatrixInstruction::wmma_f32_16x16x16_f16};
const char* name(MatrixInstruction m) {
  switch (m) {
    case MatrixInstruction::mfma_f32_32x32x8f16: return "v_mfma_f32_32x32x8f16";
    case MatrixInstruction::mfma_f32_16x16x16f16: return "v_mfma_f32_16x16x16f16";
    case MatrixInstruction::wmma_f32_16x16x16_f16: return "v_wmma_f32_16x16x16_f16";
  }
  return "?";
}

// --- The kernels' arithmetic against the model ---------------------------------------------------

// Every (lane, slot) the kernel fills gets the element the hardware reads from there, and every
// element of the block is somewhere; every element of D is written by exactly one (lane, slot).
TEST(MatrixCoreLayout, OperandAndResultMappingsAreTheInstructionsLayouts) {
  for (MatrixInstruction m : all) {
    SCOPED_TRACE(name(m));
    const InstructionShape s = shape_of(m);
    std::map<std::pair<int, int>, int> a_seen, b_seen, d_seen;
    for (int lane = 0; lane < s.wave; ++lane) {
      for (int slot = 0; slot < s.a_slots; ++slot) {
        const Element e = a_element(m, lane, slot);
        ASSERT_TRUE(e.row >= 0 && e.row < s.rows && e.col >= 0 && e.col < s.depth);
        const auto holders = model_a(m, e.row, e.col);
        EXPECT_NE(std::find(holders.begin(), holders.end(), Slot{lane, slot}), holders.end())
            << "lane " << lane << " slot " << slot << " loads A[" << e.row << "][" << e.col << "]";
        ++a_seen[{e.row, e.col}];
      }
      for (int slot = 0; slot < s.b_slots; ++slot) {
        const Element e = b_element(m, lane, slot);
        ASSERT_TRUE(e.row >= 0 && e.row < s.depth && e.col >= 0 && e.col < s.cols);
        const auto holders = model_b(m, e.row, e.col);
        EXPECT_NE(std::find(holders.begin(), holders.end(), Slot{lane, slot}), holders.end());
        ++b_seen[{e.row, e.col}];
      }
      for (int slot = 0; slot < s.d_slots; ++slot) {
        const Element e = d_element(m, lane, slot);
        EXPECT_EQ(model_d(m, e.row, e.col), (Slot{lane, slot}));
        ++d_seen[{e.row, e.col}];
      }
    }
    const int copies = m == MatrixInstruction::wmma_f32_16x16x16_f16 ? 2 : 1;
    EXPECT_EQ(a_seen.size(), static_cast<std::size_t>(s.rows * s.depth));
    EXPECT_EQ(b_seen.size(), static_cast<std::size_t>(s.depth * s.cols));
    EXPECT_EQ(d_seen.size(), static_cast<std::size_t>(s.rows * s.cols));
    for (const auto& [e, n] : a_seen) EXPECT_EQ(n, copies);
    for (const auto& [e, n] : b_seen) EXPECT_EQ(n, copies);
    for (const auto& [e, n] : d_seen) EXPECT_EQ(n, 1);
  }
}

// A wave tile of blocks_m x blocks_n instruction blocks over several K steps, as the kernels run
// it: operands loaded into registers with a_element/b_element, the instructions executed by the
// model, the accumulators stored with wave_tile_element. C must be A * B, each element written once.
TEST(MatrixCoreLayout, EveryWaveTileConfigurationComputesEachElementOfCOnceFromTheRightRowsAndColumns) {
  for (MatrixInstruction m : all)
    for (int blocks_m : {1, 2, 4})
      for (int blocks_n : {1, 2, 4})
        for (int k_steps : {1, 3}) {
          SCOPED_TRACE(std::string(name(m)) + " " + std::to_string(blocks_m) + "x" + std::to_string(blocks_n) +
                       " blocks, " + std::to_string(k_steps) + " K steps");
          const InstructionShape s = shape_of(m);
          const int M = blocks_m * s.rows, N = blocks_n * s.cols, K = k_steps * s.depth;
          auto a = [&](int i, int k) { return static_cast<long>((i * 7 + k * 3) % 11 - 5); };
          auto b = [&](int k, int j) { return static_cast<long>((k * 5 + j * 2) % 13 - 6); };
          const auto lanes = static_cast<std::size_t>(s.wave);
          std::vector<Registers> acc(static_cast<std::size_t>(blocks_m * blocks_n),
                                     Registers(lanes, std::vector<long>(static_cast<std::size_t>(s.d_slots), 0)));
          for (int step = 0; step < k_steps; ++step)
            for (int bm = 0; bm < blocks_m; ++bm)
              for (int bn = 0; bn < blocks_n; ++bn) {
                Registers ra(lanes, std::vector<long>(static_cast<std::size_t>(s.a_slots)));
                Registers rb(lanes, std::vector<long>(static_cast<std::size_t>(s.b_slots)));
                for (int lane = 0; lane < s.wave; ++lane) {
                  for (int slot = 0; slot < s.a_slots; ++slot) {
                    const Element e = a_element(m, lane, slot);
                    ra[static_cast<std::size_t>(lane)][static_cast<std::size_t>(slot)] = a(bm * s.rows + e.row, step * s.depth + e.col);
                  }
                  for (int slot = 0; slot < s.b_slots; ++slot) {
                    const Element e = b_element(m, lane, slot);
                    rb[static_cast<std::size_t>(lane)][static_cast<std::size_t>(slot)] = b(step * s.depth + e.row, bn * s.cols + e.col);
                  }
                }
                model_execute(m, ra, rb, acc[static_cast<std::size_t>(bm * blocks_n + bn)]);
              }
          std::vector<long> c(static_cast<std::size_t>(M * N), 0);
          std::vector<int> writes(static_cast<std::size_t>(M * N), 0);
          for (int bm = 0; bm < blocks_m; ++bm)
            for (int bn = 0; bn < blocks_n; ++bn)
              for (int lane = 0; lane < s.wave; ++lane)
                for (int slot = 0; slot < s.d_slots; ++slot) {
                  const Element e = wave_tile_element(m, bm, bn, lane, slot);
                  ASSERT_TRUE(e.row >= 0 && e.row < M && e.col >= 0 && e.col < N);
                  const auto at = static_cast<std::size_t>(e.row * N + e.col);
                  c[at] = acc[static_cast<std::size_t>(bm * blocks_n + bn)][static_cast<std::size_t>(lane)][static_cast<std::size_t>(slot)];
                  ++writes[at];
                }
          for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) {
              long want = 0;
              for (int k = 0; k < K; ++k) want += a(i, k) * b(k, j);
              const auto at = static_cast<std::size_t>(i * N + j);
              EXPECT_EQ(writes[at], 1) << "C[" << i << "][" << j << "]";
              EXPECT_EQ(c[at], want) << "C[" << i << "][" << j << "]";
            }
        }
}

// A wrong mapping is caught: swapping the two halves of the 32x32 block's rows.
TEST(MatrixCoreLayout, AWrongResultMappingDisagreesWithTheModel) {
  const MatrixInstruction m = MatrixInstruction::mfma_f32_32x32x8f16;
  int mismatches = 0;
  for (int lane = 0; lane < 64; ++lane)
    for (int slot = 0; slot < 16; ++slot) {
      const Element right = d_element(m, lane, slot);
      const Element wrong{4 * (slot / 4) + 8 * (lane / 32) + slot % 4, lane % 32};  // a plausible slip
      mismatches += !(model_d(m, wrong.row, wrong.col) == Slot{lane, slot});
      EXPECT_EQ(model_d(m, right.row, right.col), (Slot{lane, slot}));
    }
  EXPECT_GT(mismatches, 0);
}

}  // namespace
}  // namespace gemmlab::hip
