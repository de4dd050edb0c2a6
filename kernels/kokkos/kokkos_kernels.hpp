// The Kokkos kernel curriculum: one factory per step, registered in register_kernels.
#pragma once

#include <memory>

#include "gemmlab/registry.hpp"

namespace gemmlab::kokkos {

std::unique_ptr<Kernel> make_mdrange();               // 01_mdrange.cpp
std::unique_ptr<Kernel> make_team_scratch();          // 02_team_scratch.cpp
std::unique_ptr<Kernel> make_team_register_blocked(); // 03_team_register_blocked.cpp

inline void register_kernels(Registry& r) {
  r.add_kernels({make_mdrange, make_team_scratch, make_team_register_blocked});
}

}  // namespace gemmlab::kokkos
