// The CPU backend of the runtime: the host as a device, its specification read from the OS and
// cpuid, its measured ceilings, and OpenBLAS / BLIS as references.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gemmlab/registry.hpp"

namespace gemmlab::cpu {

// Specification of this machine's CPU (no measurement). Features come from cpuid; the variable
// GEMMLAB_CPU_DISABLE="avx512f,avx2" hides features, to exercise the unsupported-kernel path.
DeviceInfo detect();

// The FMA-throughput and triad micro-benchmarks (see ceilings.cpp).
MeasuredCeilings measure_ceilings(const DeviceInfo& info);

std::unique_ptr<Backend> make_backend();

// A CBLAS library loaded at run time: "openblas" or "blis". Each is dlopen'ed privately
// (RTLD_LOCAL), so both can live in one process although they export the same cblas_* symbols.
std::unique_ptr<Reference> load_cblas(const std::string& name);
std::vector<std::string> cblas_names();

}  // namespace gemmlab::cpu
