// hopper_primitives.cuh — the Hopper instructions 11_wgmma_tma and 12_warp_specialized share, as
// small inline functions over inline PTX: shared-memory addresses, mbarriers (init, arrive,
// arrive with expected bytes, wait on a phase's parity), TMA tile loads, wgmma descriptors and
// the wgmma m64nNk16 instructions, and the epilogue's paired stores. Embedded with the kernels and
// handed to NVRTC as a header; a kernel includes it after defining TA and TC.
#pragma once

// The tensor map type. NVRTC cannot include <cuda.h> (it needs the C library headers), so there the
// kernel declares the same opaque 128-byte, 64-byte aligned structure itself.
#if defined(__CUDACC_RTC__)
struct alignas(64) CUtensorMap_st {
  unsigned long long opaque[16];
};
typedef CUtensorMap_st CUtensorMap;
#else
#include <cuda.h>
#endif

// The wgmma type suffix of TA: "f16" for __half, "bf16" for __nv_bfloat16.
#define GL_CAT2(a, b) a##b
#define GL_CAT(a, b) GL_CAT2(a, b)
#define GL_TYPE_ID___half 1
#define GL_TYPE_ID___nv_bfloat16 2
#if GL_CAT(GL_TYPE_ID_, TA) == 1
#define GL_AB ".f16.f16"
#elif GL_CAT(GL_TYPE_ID_, TA) == 2
#define GL_AB ".bf16.bf16"
#else
#error "TA must be __half or __nv_bfloat16"
#endif

typedef unsigned int u32;
typedef unsigned long long u64;

// ---- shared-memory addresses, mbarriers, TMA ----------------------------------------------------

__device__ __forceinline__ u32 shared_address(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void barrier_init(u32 bar, u32 arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}

// One arrival that also announces `bytes` more bytes of copies to wait for.
__device__ __forceinline__ void barrier_expect_bytes(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

// A plain arrival (a consumer warp releasing a stage).
__device__ __forceinline__ void barrier_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Waits until the barrier's phase with this parity (0 or 1) has completed.
__device__ __forceinline__ void barrier_wait(u32 bar, u32 parity) {
  u32 done = 0;
  while (!done) {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  }
}

// TMA: the box of `map` whose first element is (column c0, row c1) to shared memory at dst; its bytes
// are counted on the mbarrier bar.
__device__ __forceinline__ void tma_load(u32 dst, const CUtensorMap* map, int c0, int c1, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// ---- wgmma ------------------------------------------------------------------------------------------

// A shared-memory matrix descriptor for a 128-byte swizzled layout (addresses and offsets in 16-byte
// units): start address in bits 0-13, leading byte offset 16-29, stride byte offset 32-45, base
// offset 49-51 (0: stages are 1 KiB aligned), swizzle mode 62-63 (1 = 128 bytes).
__device__ __forceinline__ u64 swizzle128_descriptor(u32 address, u32 leading_bytes, u32 stride_bytes) {
  return static_cast<u64>((address & 0x3FFFF) >> 4) | static_cast<u64>(leading_bytes >> 4) << 16 |
         static_cast<u64>(stride_bytes >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(PENDING) : "memory");
}

// Keeps the compiler from moving reads or writes of the accumulators across wgmma's asynchronous
// window: after this, the values are those the tensor cores left (the registers pass through an
// empty asm statement, ordered after the preceding wait_group).
template <int COUNT>
__device__ __forceinline__ void fence_accumulators(float (&d)[COUNT]) {
#pragma unroll
  for (int i = 0; i < COUNT; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Operand lists of the accumulators: "%0, ..., %31" and so on, and the matching "+f" constraints.
#define GL_D0                                                              \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define GL_D32                                                                       \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define GL_D64                                                                       \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define GL_D96                                                                                   \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define GL_F8(i)                                                                              \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define GL_F32(i) GL_F8(i), GL_F8(i + 8), GL_F8(i + 16), GL_F8(i + 24)

// d (64 x N, fp32) += A (64 x 16, K-major) * B (16 x N, N-major), both from shared memory.
// Operands after d: a-desc, b-desc, scale-d = 1 (accumulate), scale-a = scale-b = 1 (no negation),
// trans-a = 0 (A is K-major), trans-b = 1 (B is N-major).
template <int N>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], u64 a_desc, u64 b_desc);

template <>
__device__ __forceinline__ void wgmma<64>(float (&d)[32], u64 a_desc, u64 b_desc) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32" GL_AB " {" GL_D0 "}, %32, %33, 1, 1, 1, 0, 1;"
               : GL_F32(0)
               : "l"(a_desc), "l"(b_desc)
               : "memory");
}
template <>
__device__ __forceinline__ void wgmma<128>(float (&d)[64], u64 a_desc, u64 b_desc) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32" GL_AB " {" GL_D0 ", " GL_D32
               "}, %64, %65, 1, 1, 1, 0, 1;"
               : GL_F32(0), GL_F32(32)
               : "l"(a_desc), "l"(b_desc)
               : "memory");
}
template <>
__device__ __forceinline__ void wgmma<192>(float (&d)[96], u64 a_desc, u64 b_desc) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n192k16.f32" GL_AB " {" GL_D0 ", " GL_D32 ", " GL_D64
               "}, %96, %97, 1, 1, 1, 0, 1;"
               : GL_F32(0), GL_F32(32), GL_F32(64)
               : "l"(a_desc), "l"(b_desc)
               : "memory");
}
template <>
__device__ __forceinline__ void wgmma<256>(float (&d)[128], u64 a_desc, u64 b_desc) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32" GL_AB " {" GL_D0 ", " GL_D32 ", " GL_D64
               ", " GL_D96 "}, %128, %129, 1, 1, 1, 0, 1;"
               : GL_F32(0), GL_F32(32), GL_F32(64), GL_F32(96)
               : "l"(a_desc), "l"(b_desc)
               : "memory");
}

// ---- epilogue -------------------------------------------------------------------------------------

// C(row, col..col+1) = alpha * (v0, v1) + beta * C, for the columns below N; beta == 0 reads nothing.
__device__ __forceinline__ void store_pair(TC* c, int col, int N, float v0, float v1, TC alpha, TC beta,
                                           bool pairs_aligned) {
  if (pairs_aligned && col + 1 < N) {
    float2 out = make_float2(alpha * v0, alpha * v1);
    if (beta != TC(0)) {
      const float2 old = *reinterpret_cast<const float2*>(c);
      out.x += beta * old.x;
      out.y += beta * old.y;
    }
    *reinterpret_cast<float2*>(c) = out;
    return;
  }
  if (col < N) c[0] = beta != TC(0) ? alpha * v0 + beta * c[0] : alpha * v0;
  if (col + 1 < N) c[1] = beta != TC(0) ? alpha * v1 + beta * c[1] : alpha * v1;
}

