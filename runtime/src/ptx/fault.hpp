// What stops a simulated launch: a sanitizer finding (an access outside every buffer or outside
// shared memory, a misaligned address, a collective reached by the wrong lanes, a deadlock) or a
// construct the simulator does not support. The parts of the simulator throw it with what they
// know; the interpreter adds the kernel, the configuration, the CTA, the thread and the PTX line.
#pragma once

#include <stdexcept>

namespace gemmlab::ptx::sim {

class Fault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gemmlab::ptx::sim
