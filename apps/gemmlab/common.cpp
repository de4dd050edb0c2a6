#include <fstream>
#include <iostream>

#include "cli.hpp"
#include "gemmlab/evaluate.hpp"
#include "gemmlab/expression.hpp"

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

void add_user_constraints(SearchSpace& space, const std::vector<std::string>& expressions, const std::string& file) {
  std::vector<std::pair<std::string, std::string>> sources;  // (expression, where it came from)
  for (const auto& e : expressions) sources.emplace_back(e, "--constraint");
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) throw UsageError("cannot read the constraints file " + file);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      const auto first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;  // blank lines and comments
      sources.emplace_back(line, file + ":" + std::to_string(number));
    }
  }
  for (const auto& source : sources) {
    const std::string& text = source.first;
    const std::string& where = source.second;
    const Expression e = [&] {
      try {
        return Expression::parse(text);
      } catch (const ExpressionError& error) {
        throw UsageError(where + ": " + error.what());
      }
    }();
    for (const auto& name : e.names())
      if (space.find(name) == nullptr) {
        std::string known;
        for (const auto& p : space.parameters()) known += (known.empty() ? "" : ", ") + p.name;
        throw UsageError(where + ": '" + name + "' in \"" + text + "\" is not a parameter of this kernel (parameters: " +
                         known + ")");
      }
    space.constrain(e.text(), e.names(), [e](const Config& c) { return e.holds(c); });
  }
}

void print_json(const nlohmann::json& document) { std::cout << document.dump(2) << std::endl; }

nlohmann::json power_json(const Evaluation& e) {
  auto side = [](const std::optional<Timing>& t) -> nlohmann::json {
    if (!t || !t->watts) return nullptr;
    const auto per_watt = t->gflops_per_watt();  // none for a reading of 0 W
    return {{"watts", *t->watts}, {"gflops_per_watt", per_watt ? nlohmann::json(*per_watt) : nlohmann::json()},
            {"temperature_c", t->temperature_c ? nlohmann::json(*t->temperature_c) : nlohmann::json()}};
  };
  if (!(e.kernel && e.kernel->watts)) return nullptr;
  return {{"kernel", side(e.kernel)}, {"reference", side(e.reference)}};
}

}  // namespace gemmlab::cli
