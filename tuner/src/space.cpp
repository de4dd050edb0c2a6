#include "gemmlab/space.hpp"

#include <algorithm>
#include <charconv>

namespace gemmlab {

std::string to_string(const Config& config) {
  std::string out;
  for (const auto& [name, value] : config) {
    if (!out.empty()) out += ' ';
    out += name + '=' + std::to_string(value);
  }
  return out;
}

std::vector<ParamValue> pow2_range(ParamValue lo, ParamValue hi) {
  if (lo <= 0) throw std::invalid_argument("pow2_range: lower bound " + std::to_string(lo) + " is not positive");
  std::vector<ParamValue> values;
  for (ParamValue v = lo; v <= hi; v *= 2) values.push_back(v);
  return values;
}

std::vector<ParamValue> int_range(ParamValue lo, ParamValue hi, ParamValue step) {
  if (step <= 0) throw std::invalid_argument("int_range: step " + std::to_string(step) + " is not positive");
  std::vector<ParamValue> values;
  for (ParamValue v = lo; v <= hi; v += step) values.push_back(v);
  return values;
}

SearchSpace& SearchSpace::add(std::string name, std::vector<ParamValue> values, std::string help) {
  if (values.empty()) throw std::logic_error("parameter " + name + " has no allowed values");
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  parameters_.push_back({std::move(name), std::move(values), std::move(help)});
  return *this;
}

SearchSpace& SearchSpace::constrain(std::string text, std::vector<std::string> uses,
                                    std::function<bool(const Config&)> holds) {
  for (const auto& name : uses)
    if (!find(name)) throw std::logic_error("constraint '" + text + "' uses unknown parameter " + name);
  constraints_.push_back({std::move(text), std::move(uses), std::move(holds)});
  return *this;
}

const Parameter* SearchSpace::find(const std::string& name) const {
  auto it = std::find_if(parameters_.begin(), parameters_.end(),
                         [&](const Parameter& p) { return p.name == name; });
  return it == parameters_.end() ? nullptr : &*it;
}

namespace {
std::string join_values(const std::vector<ParamValue>& values) {
  std::string out;
  for (auto v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}
std::string join_names(const std::vector<Parameter>& params) {
  std::string out;
  for (const auto& p : params) out += (out.empty() ? "" : ", ") + p.name;
  return out.empty() ? "(none)" : out;
}
}  // namespace

Config SearchSpace::complete(const Config& partial, const Config& defaults) const {
  Config config = defaults;
  for (const auto& [name, value] : partial) config[name] = value;
  check(config);
  return config;
}

void SearchSpace::check(const Config& config) const {
  for (const auto& [name, value] : config)
    if (!find(name))
      throw ConfigError("unknown parameter '" + name + "'; parameters: " + join_names(parameters_));
  for (const auto& p : parameters_) {
    auto it = config.find(p.name);
    if (it == config.end()) throw ConfigError("parameter " + p.name + " has no value");
    if (!std::binary_search(p.values.begin(), p.values.end(), it->second))
      throw ConfigError(p.name + "=" + std::to_string(it->second) +
                        " is not allowed; allowed values: " + join_values(p.values));
  }
  for (const auto& c : constraints_)
    if (!c.holds(config))
      throw ConfigError("configuration " + to_string(config) + " violates constraint " + c.text);
}

bool SearchSpace::is_valid(const Config& config) const {
  try {
    check(config);
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

double SearchSpace::raw_size() const {
  double size = 1;
  for (const auto& p : parameters_) size *= static_cast<double>(p.values.size());
  return size;
}

namespace {
// Values of p ordered by distance from `from` (ties: smaller first).
std::vector<ParamValue> by_distance(const Parameter& p, ParamValue from) {
  std::vector<ParamValue> values = p.values;
  std::stable_sort(values.begin(), values.end(), [from](ParamValue x, ParamValue y) {
    auto dx = x > from ? x - from : from - x, dy = y > from ? y - from : from - y;
    return dx < dy;
  });
  return values;
}
}  // namespace

std::vector<Config> SearchSpace::extremes(const Config& defaults) const {
  std::vector<Config> out;
  auto add_unique = [&](const Config& c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  if (is_valid(defaults)) add_unique(defaults);
  for (const auto& p : parameters_) {
    for (ParamValue extreme : {p.values.front(), p.values.back()}) {
      Config c = defaults;
      c[p.name] = extreme;
      if (is_valid(c)) {
        add_unique(c);
        continue;
      }
      bool repaired = false;
      for (const auto& q : parameters_) {
        if (q.name == p.name || repaired) continue;
        for (ParamValue v : by_distance(q, defaults.count(q.name) ? defaults.at(q.name) : q.values.front())) {
          Config fixed = c;
          fixed[q.name] = v;
          if (is_valid(fixed)) {
            add_unique(fixed);
            repaired = true;
            break;
          }
        }
      }
    }
  }
  return out;
}

std::pair<std::string, ParamValue> parse_assignment(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("parameter assignment '" + text + "' is not of the form NAME=VALUE");
  std::string name = text.substr(0, eq);
  std::string digits = text.substr(eq + 1);
  ParamValue value = 0;
  auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (err != std::errc() || end != digits.data() + digits.size() || digits.empty())
    throw ConfigError("parameter " + name + ": '" + digits + "' is not an integer");
  return {name, value};
}

}  // namespace gemmlab
