// The CPU kernel curriculum: one factory per step, registered in register_kernels.
#pragma once

#include <memory>

#include "gemmlab/registry.hpp"

namespace gemmlab::cpu {

std::unique_ptr<Kernel> make_naive();                    // 01_naive.cpp
std::unique_ptr<Kernel> make_loop_order();               // 02_loop_order.cpp
std::unique_ptr<Kernel> make_cache_blocked();            // 03_cache_blocked.cpp
std::unique_ptr<Kernel> make_register_blocked_avx2();    // 04_register_blocked_avx2.cpp
std::unique_ptr<Kernel> make_packed_avx512();            // 05_packed_avx512.cpp
std::unique_ptr<Kernel> make_small_m();                  // 06_small_m.cpp

inline void register_kernels(Registry& r) {
  r.add_kernels({make_naive, make_loop_order, make_cache_blocked, make_register_blocked_avx2, make_packed_avx512,
                  make_small_m});
}

}  // namespace gemmlab::cpu
