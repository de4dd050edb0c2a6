// 05_packed_avx512's AVX2 variants (05_micro_kernel.hpp), for CPUs without AVX-512: 16 ymm
// registers of 8 floats. Compiled with -mavx2 -mfma (kernels/CMakeLists.txt); run only where
// cpuid reports AVX2 and FMA.
#include "05_micro_kernel.hpp"

namespace gemmlab::cpu::packed {

template <class T>
Variant<T> avx2_variant(int mr, int nv) {
  return select_variant<simd::Avx2<T>, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16>(mr, nv);
}
template Variant<float> avx2_variant(int, int);
template Variant<double> avx2_variant(int, int);

}  // namespace gemmlab::cpu::packed
