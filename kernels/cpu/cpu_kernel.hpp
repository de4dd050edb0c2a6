// What every CPU kernel shares, so that each kernel file holds only its loops and its space:
//  - CpuKernel: name, summary, required instruction sets (checked against cpuid), precisions,
//    and prepare(), which checks the problem and the configuration before building.
//  - RoutineExecutable: runs a kernel's routine on the operands. It handles the degenerate
//    cases once for all kernels (M or N zero: nothing; K zero or alpha zero: C = beta*C), so a
//    routine is only ever called with M, N, K >= 1 and alpha != 0.
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
    if (problem_.m == 0 || problem_.n == 0) return;
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
  CpuKernel(std::string name, std::string summary, std::vector<std::string> required_features)
      : name_(std::move(name)), summary_(std::move(summary)),
        required_features_(std::move(required_features)) {}

  std::string_view name() const override { return name_; }
  std::string_view backend() const override { return "cpu"; }
  std::string_view summary() const override { return summary_; }
  std::vector<Precision> precisions() const override { return {Precision::fp32, Precision::fp64}; }
  Support supported(const DeviceInfo& device) const override;
  std::unique_ptr<Executable> prepare(Device& device, const Problem& problem,
                                      const Config& config) const final;
  // Each kernel's file is named after it.
  std::string source_hash() const override;

 protected:
  // Called with a valid problem and a configuration that satisfies space().
  virtual std::unique_ptr<Executable> build(const DeviceInfo& device, const Problem& problem,
                                            const Config& config) const = 0;

 private:
  std::string name_, summary_;
  std::vector<std::string> required_features_;
};

template <class Routine>
std::unique_ptr<Executable> make_executable(const Problem& p, Routine routine) {
  return std::make_unique<RoutineExecutable<Routine>>(p, std::move(routine));
}

}  // namespace gemmlab::cpu
