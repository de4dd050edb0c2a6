// The CPU backend of the runtime: the host as a device, its specification read from the OS and
// cpuid, its measured ceilings, and OpenBLAS / BLIS as references.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gemmlab/registry.hpp"

namespace gemmlab::cpu {

// Specification of this machine's CPU (no measurement). Features come from cpuid; the variable
// GEMMLAB_CPU_DISABLE="avx512f,avx2" hides features, to exercise the unsupported-kernel path.
DeviceInfo detect();

// Cache descriptions decoded from cpuid registers, for machines whose sysfs lists no caches
// (containers, some virtual machines). One cache from a deterministic-cache-parameters subleaf:
// Intel's leaf 4 and AMD's leaf 0x8000001D share this layout (EAX type/level/sharing, EBX ways,
// partitions and line size, ECX sets). nullopt for the null type that ends the list.
std::optional<CacheLevel> cache_from_cpuid_subleaf(unsigned eax, unsigned ebx, unsigned ecx);
// AMD's older leaves 0x80000005 (L1: ECX data, EDX instruction, size in KiB in bits 31:24) and
// 0x80000006 (ECX bits 31:16 L2 KiB, EDX bits 31:18 L3 in 512 KiB units). They give no sharing:
// L1 and L2 are taken as private, L3 as shared by all `cores`.
std::vector<CacheLevel> caches_from_amd_legacy_leaves(unsigned ecx5, unsigned edx5, unsigned ecx6,
                                                      unsigned edx6, int cores);

// The FMA-throughput and triad micro-benchmarks (see ceilings.cpp).
MeasuredCeilings measure_ceilings(const DeviceInfo& info);

// One run of the FMA loop behind measure_ceilings' FMA figures, on `threads` cores at once (thread t
// pinned to the t-th CPU this process may use): its wall-clock seconds and the floating-point
// operations it did. A benchmark alternates it with the GEMM it rates, so that the ceiling is taken
// at the same moments as the GEMM, on a machine whose speed moves with other guests' load. Zero
// seconds and flops where the CPU has no FMA loop (neither AVX-512F nor AVX2 with FMA), for a
// precision other than fp32 and fp64, and for threads or iterations below 1.
struct FmaRun {
  double seconds = 0;
  double flops = 0;
};
constexpr long fma_loop_iterations = 2'000'000;  // a few milliseconds per thread
FmaRun run_fma_loop(const DeviceInfo& info, int threads, Precision precision,
                    long iterations = fma_loop_iterations);

std::unique_ptr<Backend> make_backend();

// Package power from RAPL's energy counters under `root` (normally /sys/class/powercap; the
// variable GEMMLAB_POWERCAP_ROOT replaces it): every package domain intel-rapl:N's energy_uj, in
// microjoules, wrapping at max_energy_range_uj. watts() is the average power of all packages
// since the previous reading (the first: since open()). open() gives nullptr where the counters
// cannot be read (no RAPL, or a kernel that lets only root read them): power is then not measured.
class RaplMeter {
 public:
  static std::unique_ptr<RaplMeter> open(const std::string& root);
  std::optional<double> watts();

 private:
  struct Domain {
    std::string energy_file;
    double range_uj = 0;
    double last_uj = 0;
  };
  std::vector<Domain> domains_;
  std::chrono::steady_clock::time_point last_time_;
};

// A CBLAS library loaded at run time: "openblas" or "blis". Each is dlopen'ed privately
// (RTLD_LOCAL), so both can live in one process although they export the same cblas_* symbols.
std::unique_ptr<Reference> load_cblas(const std::string& name);
std::vector<std::string> cblas_names();

// libxsmm's tiled OpenMP GEMM (fp32, fp64), from gemmlab's module libgemmlab_libxsmm.so (built
// where Debian's static libxsmm archives are found), dlopen'ed the same way.
std::unique_ptr<Reference> load_libxsmm();

// Every CPU reference: the CBLAS libraries, then "onednn" (dnnl_sgemm, fp32 only) and "libxsmm"
// (dlopen'ed the same way). load_reference throws std::runtime_error when the library cannot be loaded, and
// std::invalid_argument naming the references for an unknown name.
std::vector<std::string> reference_names();
std::unique_ptr<Reference> load_reference(const std::string& name);

}  // namespace gemmlab::cpu
