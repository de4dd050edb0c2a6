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

namespace {
// Depth-first walk over the valid space; calls `visit` for each valid configuration until it
// returns false.
class Walker {
 public:
  Walker(const std::vector<Parameter>& parameters, const std::vector<Constraint>& constraints)
      : parameters_(parameters), checks_(parameters.size() + 1) {
    // A constraint is checked at the depth where the last parameter it uses is bound.
    for (const auto& c : constraints) {
      std::size_t depth = 0;
      for (const auto& name : c.uses)
        for (std::size_t i = 0; i < parameters.size(); ++i)
          if (parameters[i].name == name) depth = std::max(depth, i + 1);
      checks_[depth].push_back(&c);
    }
  }

  template <class Visit>
  void walk(Visit&& visit) {
    Config config;
    if (holds_all(0, config)) descend(0, config, visit);
  }

 private:
  bool holds_all(std::size_t depth, const Config& config) const {
    for (const Constraint* c : checks_[depth]) {
      try {
        if (!c->holds(config)) return false;
      } catch (const std::out_of_range&) {
        throw std::logic_error("constraint '" + c->text + "' reads a parameter missing from its list of uses");
      }
    }
    return true;
  }

  template <class Visit>
  bool descend(std::size_t depth, Config& config, Visit& visit) {
    if (depth == parameters_.size()) return visit(config);
    const Parameter& p = parameters_[depth];
    for (ParamValue v : p.values) {
      config[p.name] = v;
      if (holds_all(depth + 1, config) && !descend(depth + 1, config, visit)) return false;
    }
    config.erase(p.name);
    return true;
  }

  const std::vector<Parameter>& parameters_;
  std::vector<std::vector<const Constraint*>> checks_;  // by depth
};
}  // namespace

std::vector<Config> SearchSpace::enumerate(std::size_t limit) const {
  std::vector<Config> out;
  if (limit == 0) return out;
  Walker(parameters_, constraints_).walk([&](const Config& c) {
    out.push_back(c);
    return out.size() < limit;
  });
  return out;
}

std::size_t SearchSpace::valid_size() const {
  std::size_t count = 0;
  Walker(parameters_, constraints_).walk([&](const Config&) {
    ++count;
    return true;
  });
  return count;
}

std::vector<Config> SearchSpace::neighbours(const Config& config, Neighbourhood kind) const {
  std::vector<Config> out;
  for (const auto& p : parameters_) {
    auto it = config.find(p.name);
    if (it == config.end()) continue;
    const auto at = std::find(p.values.begin(), p.values.end(), it->second);
    if (at == p.values.end()) continue;
    const auto index = static_cast<std::size_t>(at - p.values.begin());
    std::vector<ParamValue> candidates;
    if (kind == Neighbourhood::adjacent) {
      if (index > 0) candidates.push_back(p.values[index - 1]);
      if (index + 1 < p.values.size()) candidates.push_back(p.values[index + 1]);
    } else {
      for (ParamValue v : p.values)
        if (v != it->second) candidates.push_back(v);
    }
    for (ParamValue v : candidates) {
      Config neighbour = config;
      neighbour[p.name] = v;
      if (is_valid(neighbour)) out.push_back(std::move(neighbour));
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
