// 10_wmma — AMD's RDNA3 matrix instructions (gfx11): each 32-lane wave multiplies 16x16 blocks with
// v_wmma_f32_16x16x16_f16 (fp16 in) or v_wmma_f32_16x16x16_bf16 (bf16 in), fp32 accumulated.
//
// Idea over the SIMT steps, as 09_mfma on CDNA: one instruction makes a whole wave compute a
// 16x16x16 block product. The layout differs from MFMA's (matrix_core_layout.hpp): lane l holds
// all 16 k of A's row l % 16 and of B's column l % 16 — lanes 16-31 hold copies of lanes 0-15 —
// and its 8 results are C's column l % 16, rows 2 r + l / 16 (r = 0..7). Each wave owns
// BLOCKS_M x BLOCKS_N blocks (an A fragment is used BLOCKS_N times, a B fragment BLOCKS_M times);
// a work-group is WAVES_M x WAVES_N waves. Operands come straight from global memory (zeros outside
// the matrices); the accumulators stay in registers for the whole K loop. -DBF16=1 selects the
// bf16 instruction (same layout); A and B then hold bf16 bit patterns.
// Hardware: WMMA (RDNA3 AI accelerators), 32-lane waves (the _w32 builtins).
// Parameters: WAVES_M, WAVES_N (waves per work-group), BLOCKS_M, BLOCKS_N (16x16 blocks per wave);
//   default 2, 2, 2, 2 (a 64x64 tile of C per work-group of 128 work-items).
// Constraints: the work-items of a work-group within the device's limit; the VGPRs a lane needs
//   (estimated from hipcc's listings: accumulators and operands) within what the compiler gives a
//   lane. The exact expressions are in the specification (kernels/hip/hip_kernels.cpp;
//   `gemmlab kernels --backend hip`).
// Launch: grid (ceil(N / (16 WAVES_N BLOCKS_N)), ceil(M / (16 WAVES_M BLOCKS_M))), block 32 WAVES_M WAVES_N.
#include <hip/hip_runtime.h>

#include "matrix_core_layout.hpp"

typedef float float8 __attribute__((ext_vector_type(8)));
#if BF16
typedef unsigned short ab_t;  // a bf16 bit pattern
typedef short ab16 __attribute__((ext_vector_type(16)));
__device__ inline float8 wmma_16x16x16(ab16 a, ab16 b, float8 c) {
  return __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(a, b, c);
}
#else
typedef _Float16 ab_t;
typedef _Float16 ab16 __attribute__((ext_vector_type(16)));
__device__ inline float8 wmma_16x16x16(ab16 a, ab16 b, float8 c) {
  return __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a, b, c);
}
#endif

constexpr gemmlab::hip::MatrixInstruction wmma = gemmlab::hip::MatrixInstruction::wmma_f32_16x16x16_f16;

extern "C" __global__ void __launch_bounds__(32 * WAVES_M * WAVES_N)
    gemm(int M, int N, int K, float alpha, const ab_t* A, int lda, const ab_t* B, int ldb, float beta,
         float* C, int ldc) {
  const int lane = threadIdx.x % 32, wave = threadIdx.x / 32;
  const int m0 = (blockIdx.y * WAVES_M + wave % WAVES_M) * BLOCKS_M * 16;  // this wave's tile of C
  const int n0 = (blockIdx.x * WAVES_N + wave / WAVES_M) * BLOCKS_N * 16;

  float8 acc[BLOCKS_M][BLOCKS_N];
#pragma unroll
  for (int i = 0; i < BLOCKS_M; ++i)
#pragma unroll
    for (int j = 0; j < BLOCKS_N; ++j) acc[i][j] = 0;

  for (int k0 = 0; k0 < K; k0 += 16) {
    ab16 a[BLOCKS_M], b[BLOCKS_N];
#pragma unroll
    for (int i = 0; i < BLOCKS_M; ++i)
#pragma unroll
      for (int s = 0; s < 16; ++s) {
        const gemmlab::hip::Element e = gemmlab::hip::a_element(wmma, lane, s);
        const int m = m0 + i * 16 + e.row, k = k0 + e.col;
        a[i][s] = m < M && k < K ? A[m * lda + k] : (ab_t)0;
      }
#pragma unroll
    for (int j = 0; j < BLOCKS_N; ++j)
#pragma unroll
      for (int s = 0; s < 16; ++s) {
        const gemmlab::hip::Element e = gemmlab::hip::b_element(wmma, lane, s);
        const int k = k0 + e.row, n = n0 + j * 16 + e.col;
        b[j][s] = k < K && n < N ? B[k * ldb + n] : (ab_t)0;
      }
#pragma unroll
    for (int i = 0; i < BLOCKS_M; ++i)
#pragma unroll
      for (int j = 0; j < BLOCKS_N; ++j) acc[i][j] = wmma_16x16x16(a[i], b[j], acc[i][j]);
  }

  // C = alpha * acc + beta * C; beta == 0: C is not read.
#pragma unroll
  for (int i = 0; i < BLOCKS_M; ++i)
#pragma unroll
    for (int j = 0; j < BLOCKS_N; ++j)
#pragma unroll
      for (int s = 0; s < 8; ++s) {
        const gemmlab::hip::Element e = gemmlab::hip::wave_tile_element(wmma, i, j, lane, s);
        const int m = m0 + e.row, n = n0 + e.col;
        if (m < M && n < N) {
          float* c = C + (long long)m * ldc + n;
          *c = beta == 0 ? alpha * acc[i][j][s] : alpha * acc[i][j][s] + beta * *c;
        }
      }
}
