// 09_mfma — AMD matrix cores (CDNA: gfx90a, gfx94x): each wave multiplies 32x32 blocks with
// v_mfma_f32_32x32x8f16 (fp16 in) or v_mfma_f32_32x32x8bf16_1k (bf16 in), fp32 accumulated.
//
// Idea over the SIMT steps: one instruction makes a whole wave compute a 32x32x8 block product,
// 16 fp32 results per lane, instead of one fused multiply-add per lane. The wave must hold the
// operands the way the instruction reads them (matrix_core_layout.hpp): lane l holds A's row
// l % 32 at k = 4 (l / 32) .. +3 and B's column l % 32 at the same k; its 16 results are C's
// column l % 32, rows 8 (r / 4) + 4 (l / 32) + r % 4. Each wave owns BLOCKS_M x BLOCKS_N blocks,
// so an A fragment is used BLOCKS_N times and a B fragment BLOCKS_M times; a work-group is
// WAVES_M x WAVES_N waves. Operands come straight from global memory (zeros outside the
// matrices), the accumulators stay in registers (AGPRs on gfx90a) for the whole K loop.
// The bf16 instruction (gfx90a and later) reads and writes its operands in the same layout; -DBF16=1
// selects it, and A and B then hold bf16 bit patterns.
// Hardware: matrix cores (MFMA), 64-lane waves.
// Parameters: WAVES_M, WAVES_N (waves per work-group), BLOCKS_M, BLOCKS_N (32x32 blocks per wave);
//   default 2 each (a 128x128 tile of C per work-group of 256 work-items).
// Constraints: the work-items of a work-group within the device's limit and whole waves; the
//   VGPRs a lane needs (estimated from hipcc's listings: accumulators, operands, their offsets)
//   within what the compiler gives a lane and within a SIMD's registers, which the work-group's
//   waves on that SIMD share. The exact expressions are in the specification
//   (kernels/hip/hip_kernels.cpp; `gemmlab kernels --backend hip`).
// Launch: grid (ceil(N / (32 WAVES_N BLOCKS_N)), ceil(M / (32 WAVES_M BLOCKS_M))), block 64 WAVES_M WAVES_N.
#include <hip/hip_runtime.h>

#include "matrix_core_layout.hpp"

typedef float float16 __attribute__((ext_vector_type(16)));
#if BF16
typedef unsigned short ab_t;  // a bf16 bit pattern
typedef short ab4 __attribute__((ext_vector_type(4)));
__device__ inline float16 mfma_32x32x8(ab4 a, ab4 b, float16 c) {
  return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, c, 0, 0, 0);
}
#else
typedef _Float16 ab_t;
typedef _Float16 ab4 __attribute__((ext_vector_type(4)));
__device__ inline float16 mfma_32x32x8(ab4 a, ab4 b, float16 c) {
  return __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0);
}
#endif

constexpr gemmlab::hip::MatrixInstruction mfma = gemmlab::hip::MatrixInstruction::mfma_f32_32x32x8f16;

extern "C" __global__ void __launch_bounds__(64 * WAVES_M * WAVES_N)
    gemm(int M, int N, int K, float alpha, const ab_t* A, int lda, const ab_t* B, int ldb, float beta,
         float* C, int ldc) {
  const int lane = threadIdx.x % 64, wave = threadIdx.x / 64;
  const int m0 = (blockIdx.y * WAVES_M + wave % WAVES_M) * BLOCKS_M * 32;  // this wave's tile of C
  const int n0 = (blockIdx.x * WAVES_N + wave / WAVES_M) * BLOCKS_N * 32;

  float16 acc[BLOCKS_M][BLOCKS_N];
#pragma unroll
  for (int i = 0; i < BLOCKS_M; ++i)
#pragma unroll
    for (int j = 0; j < BLOCKS_N; ++j) acc[i][j] = 0;

  for (int k0 = 0; k0 < K; k0 += 8) {
    ab4 a[BLOCKS_M], b[BLOCKS_N];
#pragma unroll
    for (int i = 0; i < BLOCKS_M; ++i)
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const gemmlab::hip::Element e = gemmlab::hip::a_element(mfma, lane, s);
        const int m = m0 + i * 32 + e.row, k = k0 + e.col;
        a[i][s] = m < M && k < K ? A[m * lda + k] : (ab_t)0;
      }
#pragma unroll
    for (int j = 0; j < BLOCKS_N; ++j)
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const gemmlab::hip::Element e = gemmlab::hip::b_element(mfma, lane, s);
        const int k = k0 + e.row, n = n0 + j * 32 + e.col;
        b[j][s] = k < K && n < N ? B[k * ldb + n] : (ab_t)0;
      }
#pragma unroll
    for (int i = 0; i < BLOCKS_M; ++i)
#pragma unroll
      for (int j = 0; j < BLOCKS_N; ++j) acc[i][j] = mfma_32x32x8(a[i], b[j], acc[i][j]);
  }

  // C = alpha * acc + beta * C; beta == 0: C is not read.
#pragma unroll
  for (int i = 0; i < BLOCKS_M; ++i)
#pragma unroll
    for (int j = 0; j < BLOCKS_N; ++j)
#pragma unroll
      for (int s = 0; s < 16; ++s) {
        const gemmlab::hip::Element e = gemmlab::hip::wave_tile_element(mfma, i, j, lane, s);
        const int m = m0 + e.row, n = n0 + e.col;
        if (m < M && n < N) {
          float* c = C + (long long)m * ldc + n;
          *c = beta == 0 ? alpha * acc[i][j][s] : alpha * acc[i][j][s] + beta * *c;
        }
      }
}
