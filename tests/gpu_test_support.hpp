// Helpers shared by the tests of the device backends (CUDA, HIP, OpenCL, Kokkos).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gemmlab/builtin.hpp"
#include "gemmlab/registry.hpp"
#include "gemmlab/validate.hpp"
#include "gemmlab/verify.hpp"
#include <gtest/gtest.h>

namespace gemmlab::testing {

// The names of the backend's kernels, in the registry's order.
inline std::vector<std::string> kernel_names(const std::string& backend) {
  std::vector<std::string> names;
  for (const Kernel* k : registry().kernels(backend)) names.emplace_back(k->name());
  return names;
}

// Runs the verification plan (`options`) for every kernel of the backend that `device` supports:
// no case may fail.
inline void expect_every_supported_kernel_verifies(const std::string& backend, Device& device, Reference* truth,
                                                   const VerifyOptions& options) {
  for (const Kernel* kernel : registry().kernels(backend)) {
    if (!kernel->supported(device.info()).ok) continue;
    for (const VerifyCase& c : verify_kernel(device, *kernel, truth, options))
      EXPECT_NE(c.status, "failed") << c.kernel << " " << c.problem.shape() << " [" << to_string(c.config)
                                    << "]: " << c.validation.reason;
  }
}

// Copies the host case's A and B, and C starting as `c_start` (the layout of c_initial, guard zone
// included), to `device`; runs `gemm(operands)` there and returns C as the device left it.
template <class Gemm>
std::vector<std::byte> run_on_device(Device& device, const HostCase& host, const std::byte* c_start, Gemm&& gemm) {
  auto a = device.allocate(host.a().size()), b = device.allocate(host.b().size());
  auto c = device.allocate(host.c_initial().size());
  device.upload(*a, host.a().data(), host.a().size());
  device.upload(*b, host.b().data(), host.b().size());
  device.upload(*c, c_start, host.c_initial().size());
  gemm(Operands{a->data(), b->data(), c->data()});
  device.synchronize();
  std::vector<std::byte> out(host.c_initial().size());
  device.download(out.data(), *c, out.size());
  return out;
}

}  // namespace gemmlab::testing
