#include "gemmlab/registry.hpp"

#include <algorithm>

namespace gemmlab {

CompileReport Kernel::compile_only(const CompileTarget& target, Precision, const Config&) const {
  throw Unsupported(std::string(name()) + " is compiled ahead of time; it has no target " + target.name +
                    " to compile for at run time");
}

void Kernel::check_device_and_problem(const DeviceInfo& device, const Problem& problem) const {
  if (auto s = supported(device); !s.ok) throw Unsupported(std::string(name()) + ": " + s.reason);
  validate(problem);
  if (!supports(problem.precision)) {
    std::string list;
    for (const Precision p : precisions()) list += (list.empty() ? "" : ", ") + std::string(to_string(p));
    throw std::invalid_argument(std::string(name()) + " has no " + std::string(to_string(problem.precision)) +
                                " variant; precisions: " + list);
  }
}

bool Kernel::supports(Precision p) const {
  auto list = precisions();
  return std::find(list.begin(), list.end(), p) != list.end();
}

void Registry::add_backend(std::unique_ptr<Backend> backend) {
  backends_.push_back(std::move(backend));
}

void Registry::add_kernel(std::unique_ptr<Kernel> kernel) {
  backend(std::string(kernel->backend()));  // must exist
  kernels_.push_back(std::move(kernel));
}

std::vector<std::string> Registry::backend_names() const {
  std::vector<std::string> names;
  for (const auto& b : backends_) names.push_back(b->name());
  return names;
}

namespace {
std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}
}  // namespace

Backend& Registry::backend(const std::string& name) const {
  for (const auto& b : backends_)
    if (b->name() == name) return *b;
  throw UnknownName("unknown backend '" + name + "'; backends in this build: " +
                    join(backend_names()));
}

const Kernel& Registry::kernel(const std::string& backend_name, const std::string& name) const {
  backend(backend_name);
  std::vector<std::string> names;
  for (const auto& k : kernels_) {
    if (k->backend() != backend_name) continue;
    if (k->name() == name) return *k;
    names.emplace_back(k->name());
  }
  throw UnknownName("unknown kernel '" + name + "' for backend " + backend_name +
                    "; kernels: " + join(names));
}

std::vector<const Kernel*> Registry::kernels(const std::string& backend_name) const {
  if (!backend_name.empty()) backend(backend_name);
  std::vector<const Kernel*> list;
  for (const auto& k : kernels_)
    if (backend_name.empty() || k->backend() == backend_name) list.push_back(k.get());
  return list;
}

}  // namespace gemmlab
