#include "gemmlab/builtin.hpp"

#include "gemmlab/cpu.hpp"
#include "cpu/cpu_kernels.hpp"

namespace gemmlab {

void register_builtin(Registry& r) {
  r.add_backend(cpu::make_backend());
  cpu::register_kernels(r);
  // A new backend adds one block here: its runtime backend and its kernel folder, e.g.
  //   #if GEMMLAB_HAVE_CUDA  r.add_backend(cuda::make_backend()); cuda::register_kernels(r);
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
