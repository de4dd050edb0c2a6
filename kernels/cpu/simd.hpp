// Thin, typed wrappers over the x86 vector intrinsics used by the SIMD kernels, so that one
// kernel template serves fp32 and fp64. Each function carries the target attribute of its
// instruction set: the rest of the program stays portable, and the kernels that call these run
// only after cpuid says the instructions exist.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace gemmlab::cpu::simd {

// AVX2 has no mask registers: a partial vector at the right edge of C is loaded and stored with
// vmaskmov, whose mask is a vector with the sign bit set in the lanes to touch (a masked-off lane is
// neither read nor written, so it cannot fault past the end of a row).
template <class T> struct Avx2;

template <> struct Avx2<float> {
  using Reg = __m256;
  using Mask = __m256i;
  using Elem = float;
  static constexpr int lanes = 8;
  static constexpr int registers = 16;  // vector registers
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Mask first(int count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg load(Mask m, const float* p) {
    return _mm256_maskload_ps(p, m);
  }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline void store(Mask m, float* p, Reg v) {
    _mm256_maskstore_ps(p, m, v);
  }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg zero() { return _mm256_setzero_ps(); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg load(const float* p) { return _mm256_loadu_ps(p); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg broadcast(float x) { return _mm256_set1_ps(x); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline float sum(Reg v) {
    alignas(32) float x[lanes];
    _mm256_store_ps(x, v);
    float total = 0;
    for (float e : x) total += e;
    return total;
  }
};

template <> struct Avx2<double> {
  using Reg = __m256d;
  using Mask = __m256i;
  using Elem = double;
  static constexpr int lanes = 4;
  static constexpr int registers = 16;  // vector registers
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Mask first(int count) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(count), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg load(Mask m, const double* p) {
    return _mm256_maskload_pd(p, m);
  }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline void store(Mask m, double* p, Reg v) {
    _mm256_maskstore_pd(p, m, v);
  }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg zero() { return _mm256_setzero_pd(); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg load(const double* p) { return _mm256_loadu_pd(p); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline void store(double* p, Reg v) { _mm256_storeu_pd(p, v); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg broadcast(double x) { return _mm256_set1_pd(x); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_pd(a, b, c); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline Reg mul(Reg a, Reg b) { return _mm256_mul_pd(a, b); }
  [[gnu::target("avx2,fma"), gnu::always_inline]] static inline double sum(Reg v) {
    alignas(32) double x[lanes];
    _mm256_store_pd(x, v);
    double total = 0;
    for (double e : x) total += e;
    return total;
  }
};

// AVX-512 adds per-lane masks: a partial vector at the right edge of C is loaded and stored with
// a mask instead of a scalar loop. sum() adds a register's lanes (a dot product's last step; GCC 12's reduce intrinsics trip
// -Wmaybe-uninitialized).
template <class T> struct Avx512;

template <> struct Avx512<float> {
  using Reg = __m512;
  using Mask = __mmask16;
  using Elem = float;
  static constexpr int lanes = 16;
  static constexpr int registers = 32;  // vector registers
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg zero() { return _mm512_setzero_ps(); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg load(const float* p) { return _mm512_loadu_ps(p); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline void store(float* p, Reg v) {
    _mm512_storeu_ps(p, v);
  }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg broadcast(float x) { return _mm512_set1_ps(x); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Mask first(int count) {
    return count >= lanes ? Mask(0xffff) : Mask((1u << count) - 1);
  }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg load(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline void store(Mask m, float* p, Reg v) { _mm512_mask_storeu_ps(p, m, v); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline float sum(Reg v) {
    alignas(64) float x[lanes];
    _mm512_store_ps(x, v);
    float total = 0;
    for (float e : x) total += e;
    return total;
  }
};

template <> struct Avx512<double> {
  using Reg = __m512d;
  using Mask = __mmask8;
  using Elem = double;
  static constexpr int lanes = 8;
  static constexpr int registers = 32;  // vector registers
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg zero() { return _mm512_setzero_pd(); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg load(const double* p) { return _mm512_loadu_pd(p); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline void store(double* p, Reg v) {
    _mm512_storeu_pd(p, v);
  }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg broadcast(double x) { return _mm512_set1_pd(x); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_pd(a, b, c); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg mul(Reg a, Reg b) { return _mm512_mul_pd(a, b); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Mask first(int count) {
    return count >= lanes ? Mask(0xff) : Mask((1u << count) - 1);
  }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline Reg load(Mask m, const double* p) { return _mm512_maskz_loadu_pd(m, p); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline void store(Mask m, double* p, Reg v) { _mm512_mask_storeu_pd(p, m, v); }
  [[gnu::target("avx512f"), gnu::always_inline]] static inline double sum(Reg v) {
    alignas(64) double x[lanes];
    _mm512_store_pd(x, v);
    double total = 0;
    for (double e : x) total += e;
    return total;
  }
};

// A kernel's loads and stores at the right edge of C, for either instruction set. AVX2's masked
// store (vmaskmov) is microcoded on AMD's Zen cores: about 11 times a plain store (AMD EPYC, AVX2
// only: 3.8 ns against 0.35 for a ymm store to L1, in a loop of stores), so a vector that lies
// wholly inside C is stored plainly and only the partial one at the edge under its mask.
// MASKED: the vector may reach past the edge (known when the kernel is compiled).
template <class V, bool MASKED, class T = typename V::Elem>
[[gnu::always_inline]] inline typename V::Reg load(typename V::Mask m, const T* p) {
  if constexpr (MASKED)
    return V::load(m, p);
  else
    return V::load(p);
}
template <class V, bool MASKED, class T = typename V::Elem>
[[gnu::always_inline]] inline void store(typename V::Mask m, T* p, typename V::Reg v) {
  if constexpr (MASKED)
    V::store(m, p, v);
  else
    V::store(p, v);
}
// The same, decided when the kernel runs: `count` lanes from p lie inside C (`m` selects them).
template <class V, class T = typename V::Elem>
[[gnu::always_inline]] inline void store_edge(std::int64_t count, typename V::Mask m, T* p,
                                              typename V::Reg v) {
  if (count >= V::lanes)
    V::store(p, v);
  else
    V::store(m, p, v);
}

}  // namespace gemmlab::cpu::simd
