#include "gemmlab/registry.hpp"
#include "gemmlab/setup.hpp"

#include <algorithm>

namespace gemmlab {

namespace {
// What a problem with M or N zero runs: there is no element of C to compute.
class NothingToCompute final : public Executable {
 public:
  void run(const Operands&) override {}
};

}  // namespace

Kernel::Kernel(KernelDescription description) : d_(std::move(description)) {}

bool Kernel::has_precision(Precision p) const {
  return std::find(d_.precisions.begin(), d_.precisions.end(), p) != d_.precisions.end();
}

Support Kernel::supported(const DeviceInfo& device) const {
  if (device.backend != d_.backend) return {false, "runs on " + d_.backend + " devices, not " + device.backend};
  return {};
}

Config Kernel::default_config(const DeviceInfo& device, Precision precision) const {
  const SearchSpace s = space(device, precision);
  try {
    return s.nearest_valid(preferred_config(device, precision));
  } catch (const ConfigError&) {
    throw Unsupported(no_valid_configuration_message(*this, device, precision));
  }
}

std::vector<Config> Kernel::starting_configs(const DeviceInfo& device, Precision precision) const {
  std::vector<Config> configs = {default_config(device, precision)};
  const SearchSpace s = space(device, precision);
  for (const Config& variant : preferred_variants(device, precision))
    if (Config c = s.nearest_valid(variant); std::find(configs.begin(), configs.end(), c) == configs.end())
      configs.push_back(std::move(c));
  return configs;
}

std::unique_ptr<Executable> Kernel::prepare(Device& device, const Problem& problem, const Config& config) const {
  const DeviceInfo& info = device.info();
  require_runs(*this, info, problem.precision);
  validate(problem);
  if (problem.transposed() && !reads_transposed())
    throw Unsupported(d_.name + " reads A and B untransposed only (this problem is " + problem.transposes() + ")");
  const SearchSpace s = space(info, problem.precision);
  if (!s.is_valid(config) && s.enumerate(1).empty()) throw Unsupported(no_valid_configuration_message(*this, info, problem.precision));
  s.check(config);
  if (problem.m == 0 || problem.n == 0) return std::make_unique<NothingToCompute>();
  return build(device, problem, config);
}

CompileReport Kernel::compile_only(const CompileTarget& target, Precision, const Config&) const {
  throw Unsupported(d_.name + " is compiled with the program; it has no target " + target.name +
                    " to compile for at run time");
}

void Registry::add_backend(std::unique_ptr<Backend> backend) {
  backends_.push_back(std::move(backend));
}

void Registry::add_kernel(std::unique_ptr<Kernel> kernel) {
  backend(std::string(kernel->backend()));  // must exist
  kernels_.push_back(std::move(kernel));
}

void Registry::add_kernels(std::initializer_list<KernelFactory> factories) {
  for (KernelFactory make : factories) add_kernel(make());
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
