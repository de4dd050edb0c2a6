// What every Kokkos kernel shares, so that each kernel file holds only its functor and its space:
//  - right_view: a row-major operand as a LayoutRight view of the space's memory (a subview of the
//    rows x ld allocation, so padded leading dimensions keep their stride).
//  - KokkosExecutable: runs a kernel's launcher on the operands for the device's execution space.
//    It handles the degenerate cases once for all kernels (M or N zero: nothing; K zero or alpha
//    zero: C = beta * C), so a launcher only sees M, N, K >= 1 and alpha != 0.
//  - KokkosKernel: name, summary, precisions (fp32, fp64), and prepare(), which checks the problem
//    and the configuration before building.
// A launcher is a struct with the kernel's parameters and
//   template <class Space, class T, class A, class B, class C>
//   void launch(const Problem&, A a, B b, C c) const;
// which runs the kernel on Space (a, b: const T views; c: T view).
#pragma once

#include <functional>

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

template <class T, class MemorySpace>
auto right_view(T* data, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  // The view spans rows x ld elements; nothing past (rows - 1) * ld + cols is read or written.
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> full(
      data, static_cast<std::size_t>(rows), static_cast<std::size_t>(std::max(ld, cols)));
  return Kokkos::subview(full, Kokkos::ALL(), std::make_pair(std::size_t{0}, static_cast<std::size_t>(cols)));
}

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
    if (p.m == 0 || p.n == 0) return;
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
std::unique_ptr<Executable> make_executable(const DeviceInfo& device, const Problem& p, Launcher launcher) {
  std::unique_ptr<Executable> executable;
  with_space(device.index, [&](auto space) {
    executable = std::make_unique<KokkosExecutable<decltype(space), Launcher>>(p, launcher);
  });
  if (!executable) throw std::invalid_argument("kokkos device " + std::to_string(device.index) + " does not exist");
  return executable;
}

class KokkosKernel : public Kernel {
 public:
  KokkosKernel(std::string name, std::string summary) : name_(std::move(name)), summary_(std::move(summary)) {}

  std::string_view name() const override { return name_; }
  std::string_view backend() const override { return "kokkos"; }
  std::string_view summary() const override { return summary_; }
  std::vector<Precision> precisions() const override { return {Precision::fp32, Precision::fp64}; }
  Support supported(const DeviceInfo& device) const override;
  std::unique_ptr<Executable> prepare(Device& device, const Problem& problem, const Config& config) const final;
  std::string source_hash() const override;

 protected:
  // Called with a valid problem and a configuration that satisfies space().
  virtual std::unique_ptr<Executable> build(const DeviceInfo& device, const Problem& problem,
                                            const Config& config) const = 0;

 private:
  std::string name_, summary_;
};

// Team-size, vector-length and scratch limits of the device's space, for the kernels' spaces.
SpaceLimits limits_of(const DeviceInfo& device);

// Bytes of accumulators a thread may hold in registers: on the host 3/4 of its vector registers
// (24 of 32 zmm with AVX-512, 12 of 16 ymm with AVX2, 12 of 16 xmm otherwise), the rest for the
// operands; on a GPU 64 32-bit registers.
std::int64_t register_budget_bytes(const DeviceInfo& device, const SpaceLimits& limits);

// The constraints the team kernels (02, 03) share: the tiles a team stages fit the scratch level
// it chooses (`staged_text` * element size + `overhead` bytes, from the parameters MT, NT, KT and
// `also_uses`), and on a GPU its TEAM x VEC threads fit a team.
void constrain_team(SearchSpace& s, const SpaceLimits& limits, std::int64_t element_bytes, const std::string& staged_text,
                    std::int64_t overhead, std::function<std::int64_t(const Config&)> staged_elements,
                    const std::vector<std::string>& also_uses = {});

}  // namespace gemmlab::kokkos
