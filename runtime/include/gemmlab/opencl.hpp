// The OpenCL backend: every platform's devices (pocl on a CPU, a GPU vendor's driver where one is
// installed), programs built at run time from source with the tunable parameters as -D options
// and cached per device, event-profiling timers, and CLBlast (loaded with dlopen) as the reference.
// A device's buffers are cl_mem objects: DeviceBuffer::data() and Operands carry the cl_mem.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "gemmlab/registry.hpp"

namespace gemmlab::opencl {

std::unique_ptr<Backend> make_backend();

// Thrown when a program does not build; what() holds the compiler's log.
class BuildError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws std::runtime_error naming the call and the OpenCL error when status is not CL_SUCCESS.
void check(cl_int status, const char* what);
std::string error_name(cl_int status);

// The OpenCL objects of device `index` of this backend (shared by every Device opened on it).
struct Handles {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;  // in order, with profiling
};
const Handles& handles(int device_index);

// Builds `source` with `options` for device `device_index`, once: later calls with the same source
// and options return the same program (thread-safe; the tuner builds upcoming configurations on
// other threads). Throws BuildError with the build log.
cl_program build_program(int device_index, const std::string& source, const std::string& options);

// The cl_mem behind an operand pointer of this backend.
inline cl_mem as_mem(const void* p) { return static_cast<cl_mem>(const_cast<void*>(p)); }

// Work a kernel or reference enqueued: its event, kept until the device synchronises (the device
// times launches with markers around them). Takes ownership of the event.
void record_event(Device& device, cl_event event);

}  // namespace gemmlab::opencl
