#include "gemmlab/builtin.hpp"

#include "gemmlab/cpu.hpp"
#include "cpu/cpu_kernels.hpp"
#include "systolic/systolic_kernel.hpp"
#if GEMMLAB_HAVE_OPENCL
#include "gemmlab/opencl.hpp"
#include "opencl/opencl_kernel.hpp"
#endif
#if GEMMLAB_HAVE_HIP
#include "gemmlab/hip.hpp"
#include "hip/hip_kernel.hpp"
#endif
#if GEMMLAB_HAVE_KOKKOS
#include "gemmlab/kokkos.hpp"
#include "kokkos/kokkos_kernels.hpp"
#endif
#if GEMMLAB_HAVE_CUDA
#include "cuda/cuda_kernels.hpp"
#include "gemmlab/cuda.hpp"
#endif

namespace gemmlab {

void register_builtin(Registry& r) {
  r.add_backend(cpu::make_backend());
  cpu::register_kernels(r);
  r.add_backend(systolic::make_backend());
  systolic::register_kernels(r);
#if GEMMLAB_HAVE_CUDA
  r.add_backend(cuda::make_backend());
  cuda::register_kernels(r);
#endif
#if GEMMLAB_HAVE_OPENCL
  r.add_backend(opencl::make_backend());
  opencl::register_kernels(r);
#endif
#if GEMMLAB_HAVE_HIP
  r.add_backend(hip::make_backend());
  hip::register_kernels(r);
#endif
#if GEMMLAB_HAVE_KOKKOS
  r.add_backend(kokkos::make_backend());
  kokkos::register_kernels(r);
#endif
  // A new backend adds one block here: its runtime backend and its kernel folder.
}

Registry& registry() {
  static Registry instance = [] {
    Registry r;
    register_builtin(r);
    return r;
  }();
  return instance;
}

}  // namespace gemmlab
