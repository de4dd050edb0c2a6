// The Kokkos backend: one device per execution space the installed Kokkos enabled (Debian's
// Kokkos 3.4: Serial; a user's own build: OpenMP, Threads, CUDA, HIP as well), buffers in the
// space's memory space, fence + steady-clock timing, and KokkosBlas::gemm from Kokkos Kernels as
// the reference. Kokkos is initialised on first use and finalised at exit (ensure_initialized);
// a process that never touches this backend never initialises it.
// Only the portable API is used: the execution and memory spaces are template parameters.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "gemmlab/registry.hpp"

namespace gemmlab::kokkos {

std::unique_ptr<Backend> make_backend();

// Initialises Kokkos once per process (unless the program already did) and finalises it at exit.
void ensure_initialized();

// The execution spaces of this Kokkos build, in device-index order (device i runs on the i-th).
template <class... Spaces>
struct SpaceList {};
using ExecutionSpaces = SpaceList<
#if defined(KOKKOS_ENABLE_CUDA)
    Kokkos::Cuda,
#endif
#if defined(KOKKOS_ENABLE_HIP)
#if KOKKOS_VERSION >= 40000
    Kokkos::HIP,
#else
    Kokkos::Experimental::HIP,
#endif
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
    Kokkos::OpenMP,
#endif
#if defined(KOKKOS_ENABLE_THREADS)
    Kokkos::Threads,
#endif
#if defined(KOKKOS_ENABLE_SERIAL)
    Kokkos::Serial,
#endif
    void>;  // the end of the list

template <class Space, class... Rest, class F>
bool visit_space(int index, F&& f, SpaceList<Space, Rest...>) {
  if constexpr (std::is_void_v<Space>) {
    return false;
  } else {
    if (index == 0) {
      f(Space{});
      return true;
    }
    return visit_space(index - 1, f, SpaceList<Rest...>{});
  }
}

// Calls f(ExecutionSpace{}) for the space of device `index`; false when there is no such device.
template <class F>
bool with_space(int index, F&& f) {
  return visit_space(index, f, ExecutionSpaces{});
}

int space_count();

// A row-major operand as a LayoutRight view of `MemorySpace`: the rows x ld allocation viewed
// through its first `cols` columns (a LayoutRight subview keeps the leading dimension as its
// stride, so padded leading dimensions work). Nothing past (rows - 1) * ld + cols is read or
// written. For kernels and the reference alike.
template <class T, class MemorySpace>
auto right_view(T* data, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> full(
      data, static_cast<std::size_t>(rows), static_cast<std::size_t>(std::max(ld, cols)));
  return Kokkos::subview(full, Kokkos::ALL(), std::make_pair(std::size_t{0}, static_cast<std::size_t>(cols)));
}

// Whether the space runs on the host's cores (Serial, OpenMP, Threads): there a team's vector
// lanes are iterations of one thread's loop, which the compiler may vectorise.
template <class Space>
constexpr bool runs_on_host() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible;
}

// A space's limits that kernels' search spaces are built from (Kokkos initialised on first call).
struct SpaceLimits {
  std::string space;           // "Serial"
  bool host = false;           // runs_on_host
  int concurrency = 0;         // ExecutionSpace::concurrency()
  int team_size_max = 0;       // threads of a team of a plain TeamPolicy functor, vector length 1
  int vector_length_max = 0;   // TeamPolicy::vector_length_max()
  std::int64_t scratch_bytes_max = 0;  // TeamPolicy::scratch_size_max(0): team scratch level 0
  std::int64_t scratch1_bytes_max = 0; // TeamPolicy::scratch_size_max(1): level 1 (larger, slower)
};
// Throws std::invalid_argument for an index without a space.
SpaceLimits space_limits(int device_index);

}  // namespace gemmlab::kokkos
