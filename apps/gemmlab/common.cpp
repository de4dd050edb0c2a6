#include <iostream>

#include "cli.hpp"

namespace gemmlab::cli {

std::vector<const Kernel*> select_kernels(const std::string& backend, const std::string& kernel) {
  if (!kernel.empty()) {
    if (backend.empty()) {
      for (const Kernel* k : registry().kernels())
        if (k->name() == kernel) return {k};
      registry().kernel("cpu", kernel);  // throws UnknownName listing the kernels
    }
    return {&registry().kernel(backend, kernel)};
  }
  return registry().kernels(backend);
}

void print_json(const nlohmann::json& document) { std::cout << document.dump(2) << std::endl; }

}  // namespace gemmlab::cli
