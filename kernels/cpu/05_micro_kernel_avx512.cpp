// 05_packed_avx512's AVX-512 variants (05_micro_kernel.hpp). Compiled with -mavx512f
// (kernels/CMakeLists.txt); run only where cpuid reports AVX-512F.
#include "05_micro_kernel.hpp"

namespace gemmlab::cpu::packed {

template <class T>
Variant<T> avx512_variant(int mr, int nv) {
  return select_variant<simd::Avx512<T>, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16>(mr, nv);
}
template Variant<float> avx512_variant(int, int);
template Variant<double> avx512_variant(int, int);

}  // namespace gemmlab::cpu::packed
