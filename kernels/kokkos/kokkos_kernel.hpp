// What every Kokkos kernel shares, so that each kernel file holds only its functor and its space:
//  - right_view (gemmlab/kokkos.hpp): a row-major operand as a LayoutRight view of the space's
//    memory, as the reference sees it too.
//  - KokkosExecutable: runs a kernel's launcher on the operands for the device's execution space.
//    It handles K zero or alpha zero (C = beta * C) once for all kernels (the kernel base already
//    answers M or N zero), so a launcher only sees M, N, K >= 1 and alpha != 0.
//  - KokkosKernel: the kernel base (gemmlab::Kernel) for fp32 and fp64 on kokkos devices, with the
//    hash of the kernel's file.
//  - let_register_budget, constrain_team: the named values and constraints of the team kernels'
//    spaces that come from the device (registers, scratch, team size).
// A launcher is a struct with the kernel's parameters and
//   template <class Space, class T, class A, class B, class C>
//   void launch(const Problem&, A a, B b, C c) const;
// which runs the kernel on Space (a, b: const T views; c: T view).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "embedded_source.hpp"
#include "gemmlab/kernel.hpp"
#include "gemmlab/kokkos.hpp"

namespace gemmlab::kokkos {

// The Kokkos kernel files by file name ("03_team_register_blocked.cpp"); their hash covers the file,
// the shared Kokkos kernel code, the compiler with its flags and the Kokkos version.
const std::map<std::string_view, EmbeddedSource>& embedded_files();

// C = beta * C over M x N; beta == 0 writes zeros without reading C.
template <class T, class CView>
struct ScaleC {
  CView c;
  T beta = {};
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, const std::int64_t j) const {
    c(i, j) = beta == T(0) ? T(0) : beta * c(i, j);
  }
};

template <class Space, class Launcher>
class KokkosExecutable final : public Executable {
 public:
  KokkosExecutable(const Problem& p, Launcher launcher) : problem_(p), launcher_(std::move(launcher)) {}
  void run(const Operands& ops) override {
    if (problem_.precision == Precision::fp32) run_typed<float>(ops);
    else run_typed<double>(ops);
  }

 private:
  template <class T>
  void run_typed(const Operands& ops) {
    using Memory = typename Space::memory_space;
    const Problem& p = problem_;
    auto c = right_view<T, Memory>(static_cast<T*>(ops.c), p.m, p.n, p.ldc);
    if (p.k == 0 || p.alpha == 0) {
      using Policy = Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>, Kokkos::IndexType<std::int64_t>>;
      Kokkos::parallel_for("gemmlab_scale_c", Policy({0, 0}, {p.m, p.n}),
                           ScaleC<T, decltype(c)>{c, static_cast<T>(p.beta)});
      return;
    }
    auto a = right_view<const T, Memory>(static_cast<const T*>(ops.a), p.m, p.k, p.lda);
    auto b = right_view<const T, Memory>(static_cast<const T*>(ops.b), p.k, p.n, p.ldb);
    launcher_.template launch<Space, T>(p, a, b, c);
  }
  Problem problem_;
  Launcher launcher_;
};

// The executable of `launcher` on the execution space of `device`.
template <class Launcher>
std::unique_ptr<Executable> make_executable(Device& device, const Problem& p, Launcher launcher) {
  std::unique_ptr<Executable> executable;
  with_space(device.info().index, [&](auto space) {
    executable = std::make_unique<KokkosExecutable<decltype(space), Launcher>>(p, launcher);
  });
  if (!executable) throw std::invalid_argument("kokkos device " + std::to_string(device.info().index) + " does not exist");
  return executable;
}

class KokkosKernel : public Kernel {
 public:
  // The kernel's file is kernels/kokkos/<name>.cpp.
  KokkosKernel(std::string name, std::string summary);
};

// Team-size, vector-length and scratch limits of the device's space, for the kernels' spaces.
SpaceLimits limits_of(const DeviceInfo& device);

// Declares `register_budget`, the bytes of accumulators a thread may hold in registers: on the
// host 3/4 of its vector registers (24 of 32 zmm with AVX-512, 12 of 16 ymm with AVX2, 12 of 16
// xmm otherwise), the rest for the operands; on a GPU 64 32-bit registers.
void let_register_budget(SearchSpace& s, const DeviceInfo& device, const SpaceLimits& limits);

// What the team kernels (02, 03) share: a team computes an MT x NT tile of C (the named values
// tile_m and tile_n); what it stages per step, `staged_elements` (an expression over the
// parameters) elements of the space's `elem` bytes in `views` scratch views, fits the scratch
// level LEVEL chooses; on a GPU its TEAM x VEC threads fit a team. Declares the device limits as
// named values and one constraint for each.
void constrain_team(SearchSpace& s, const SpaceLimits& limits, const std::string& staged_elements, int views);

}  // namespace gemmlab::kokkos
