// The backends and kernels compiled into this build.
#pragma once

#include "gemmlab/registry.hpp"

namespace gemmlab {

// Adds every backend of this build and its kernels to `registry`.
void register_builtin(Registry& registry);

// A process-wide registry filled by register_builtin on first use.
Registry& registry();

}  // namespace gemmlab
