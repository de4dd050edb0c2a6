// 06_small_m's AVX2 tiles (06_tiles.hpp), for CPUs without AVX-512: 16 ymm registers of 8
// floats. Compiled with -mavx2 -mfma (kernels/CMakeLists.txt); run only where cpuid reports AVX2
// and FMA.
#include "06_tiles.hpp"

namespace gemmlab::cpu::small_m {

template <class T>
Tiles<T> avx2_tiles(int nv, Form form) {
  return tiles<simd::Avx2<T>>(nv, form);
}
template Tiles<float> avx2_tiles(int, Form);
template Tiles<double> avx2_tiles(int, Form);

}  // namespace gemmlab::cpu::small_m
