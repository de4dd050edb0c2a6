// What every CPU kernel shares, so that each kernel file holds only its loops and its space:
//  - CpuKernel: the kernel base (gemmlab::Kernel) for fp32 and fp64 with the required instruction
//    sets (checked against cpuid) and the hash of the kernel's file.
//  - RoutineExecutable: runs a kernel's routine on the operands. It handles K zero or alpha zero
//    (C = beta*C) once for all kernels (the base already answers M or N zero), so a routine is
//    only ever called with M, N, K >= 1 and alpha != 0.
//  - let_cache: a cache size as a named value of a kernel's space, for its constraints.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "embedded_source.hpp"
#include "gemmlab/kernel.hpp"

namespace gemmlab::cpu {

// C = beta * C over the M x N part of C; beta == 0 writes zeros without reading C.
template <class T>
void scale_c(const Problem& p, T* c) {
  const T beta = static_cast<T>(p.beta);
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      T& x = c[i * p.ldc + j];
      x = beta == T(0) ? T(0) : beta * x;
    }
}

// `Routine` has `template <class T> void operator()(const Problem&, const T* a, const T* b, T* c)`
// for T = float and double; it carries the kernel's parameters and any workspace.
template <class Routine>
class RoutineExecutable final : public Executable {
 public:
  RoutineExecutable(const Problem& p, Routine routine) : problem_(p), routine_(std::move(routine)) {}
  void run(const Operands& ops) override {
    if (problem_.precision == Precision::fp32)
      run_typed(static_cast<const float*>(ops.a), static_cast<const float*>(ops.b),
                static_cast<float*>(ops.c));
    else
      run_typed(static_cast<const double*>(ops.a), static_cast<const double*>(ops.b),
                static_cast<double*>(ops.c));
  }

 private:
  template <class T>
  void run_typed(const T* a, const T* b, T* c) {
    if (problem_.k == 0 || problem_.alpha == 0) return scale_c(problem_, c);
    routine_(problem_, a, b, c);
  }
  Problem problem_;
  Routine routine_;
};

// The CPU kernel files by file name ("05_packed_avx512.cpp"); their hash covers the file, the
// shared CPU kernel code and the compiler with its flags (cmake/embed_kernel_sources.cmake).
const std::map<std::string_view, EmbeddedSource>& embedded_files();

class CpuKernel : public Kernel {
 public:
  // The kernel's file is kernels/cpu/<name>.cpp.
  CpuKernel(std::string name, std::string summary, std::vector<std::string> required_features);
  Support supported(const DeviceInfo& device) const override;

 private:
  std::vector<std::string> required_features_;
};

// Declares the size in bytes of the device's level-`level` data cache as the named value `name`
// of `s` ("L2"), for the constraints that keep blocks in it. Where the OS reports no such cache,
// `assumed` stands in, and the help says so: `gemmlab kernels` then shows what the space was
// computed with. Returns the size declared.
std::int64_t let_cache(SearchSpace& s, const DeviceInfo& device, const std::string& name, int level,
                       std::int64_t assumed);

// 05 and 06 run with AVX-512, else with AVX2 and FMA (their micro-kernels and tiles compiled for
// each): which one this device takes, whether it has either, and the vector registers their
// register constraint counts, declared in `s` as "zmm_registers" (32) or "ymm_registers" (16).
// Returns the name declared.
bool uses_avx512(const DeviceInfo& device);
Support avx512_or_avx2(const DeviceInfo& device);
std::string let_vector_registers(SearchSpace& s, const DeviceInfo& device);

template <class Routine>
std::unique_ptr<Executable> make_executable(const Problem& p, Routine routine) {
  return std::make_unique<RoutineExecutable<Routine>>(p, std::move(routine));
}

}  // namespace gemmlab::cpu
