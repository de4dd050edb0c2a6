// Backends and kernels are registered once, at start-up, by register_builtin() (kernels/); every
// front end (CLI, tests, benchmarks, tuner) looks them up here by name.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "gemmlab/device.hpp"
#include "gemmlab/kernel.hpp"

namespace gemmlab {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Devices present now (cheap: no measurement). Empty when the runtime finds none.
  virtual std::vector<DeviceInfo> devices() = 0;
  virtual std::unique_ptr<Device> open(int index) = 0;
  virtual std::vector<std::string> reference_names() const = 0;
  // Throws std::invalid_argument naming the allowed references.
  virtual std::unique_ptr<Reference> make_reference(const std::string& name, Device& device) = 0;
};

// Thrown by lookups of unknown names; the message lists what exists.
class UnknownName : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Registry {
 public:
  void add_backend(std::unique_ptr<Backend> backend);
  void add_kernel(std::unique_ptr<Kernel> kernel);  // its backend must be registered
  // A curriculum's steps, in order: one factory per kernel file (make_naive in 01_naive.cpp).
  using KernelFactory = std::unique_ptr<Kernel> (*)();
  void add_kernels(std::initializer_list<KernelFactory> factories);

  Backend& backend(const std::string& name) const;
  const Kernel& kernel(const std::string& backend, const std::string& name) const;
  std::vector<const Kernel*> kernels(const std::string& backend = "") const;
  std::vector<std::string> backend_names() const;

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

}  // namespace gemmlab
