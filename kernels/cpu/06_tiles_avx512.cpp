// 06_small_m's AVX-512 tiles (06_tiles.hpp). Compiled with -mavx512f (kernels/CMakeLists.txt);
// run only where cpuid reports AVX-512F.
#include "06_tiles.hpp"

namespace gemmlab::cpu::small_m {

template <class T>
Tiles<T> avx512_tiles(int nv, Form form) {
  return tiles<simd::Avx512<T>>(nv, form);
}
template Tiles<float> avx512_tiles(int, Form);
template Tiles<double> avx512_tiles(int, Form);

}  // namespace gemmlab::cpu::small_m
