#include "gemmlab/space.hpp"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <span>

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

bool Constraint::holds(const Config& config) const { return expression.holds(config); }

std::string Constraint::describe() const { return why.empty() ? text : text + " (" + why + ")"; }

namespace {
std::string join_values(const std::vector<ParamValue>& values) {
  std::string out;
  for (auto v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}
template <class Named>
std::string join_names(const std::vector<Named>& list) {
  std::string out;
  for (const auto& p : list) out += (out.empty() ? "" : ", ") + p.name;
  return out.empty() ? "(none)" : out;
}
}  // namespace

void SearchSpace::check_new_name(const std::string& name) const {
  if (find(name) != nullptr || find_named_value(name) != nullptr)
    throw std::logic_error("the space already has a parameter or named value called " + name);
}

SearchSpace& SearchSpace::add(std::string name, std::vector<ParamValue> values, std::string help) {
  if (values.empty()) throw std::logic_error("parameter " + name + " has no allowed values");
  check_new_name(name);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  parameters_.push_back({std::move(name), std::move(values), std::move(help)});
  return *this;
}

SearchSpace& SearchSpace::added_later(const std::string& name, ParamValue ran_as) {
  const Parameter* p = find(name);
  if (p == nullptr) throw std::logic_error("added_later: " + name + " is not a parameter");
  if (!std::binary_search(p->values.begin(), p->values.end(), ran_as))
    throw std::logic_error("added_later: " + std::to_string(ran_as) + " is not a value of " + name);
  ran_as_before_[name] = ran_as;
  return *this;
}

Config SearchSpace::upgraded(Config config) const {
  for (const auto& [name, value] : ran_as_before_) config.try_emplace(name, value);
  return config;
}

// `text` parsed with the named values declared so far; a malformed expression or a name that is
// neither a parameter nor a named value is a bug in the declaring code, named by `what`.
Expression SearchSpace::parse_declared(const std::string& text, const std::string& what) const {
  const Expression e = [&] {
    try {
      return parse(text);
    } catch (const ExpressionError& error) {
      throw std::logic_error(what + ": " + error.what());
    }
  }();
  for (const auto& name : e.names())
    if (find(name) == nullptr)
      throw std::logic_error(what + " uses " + name +
                             ", which is neither a parameter nor a named value (parameters: " +
                             join_names(parameters_) + "; named values: " + join_names(named_values_) + ")");
  return e;
}

namespace {
// A named value must be a name an expression can use.
void check_usable_name(const std::string& name) {
  const auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (name.empty() || !letter(name[0]) ||
      !std::all_of(name.begin(), name.end(), [&](char c) { return letter(c) || digit(c); }))
    throw std::logic_error("'" + name + "' cannot name a value: expressions read names of letters, digits and _");
}
}  // namespace

SearchSpace& SearchSpace::let(std::string name, ParamValue value, std::string help) {
  check_usable_name(name);
  check_new_name(name);
  const Expression e = Expression::constant(value);
  named_values_.push_back({name, e.text(), value, std::move(help)});
  definitions_.emplace(std::move(name), e);
  return *this;
}

SearchSpace& SearchSpace::derive(std::string name, std::string expression, std::string help) {
  check_usable_name(name);
  check_new_name(name);
  const Expression e = parse_declared(expression, "named value " + name + " = " + expression);
  named_values_.push_back({name, std::move(expression), e.constant_value(), std::move(help)});
  definitions_.emplace(std::move(name), e);
  return *this;
}

SearchSpace& SearchSpace::require(std::string expression, std::string why) {
  const Expression e = parse_declared(expression, "constraint '" + expression + "'");
  constraints_.push_back({std::move(expression), std::move(why), e.names(), e});
  return *this;
}

const Parameter* SearchSpace::find(const std::string& name) const {
  auto it = std::find_if(parameters_.begin(), parameters_.end(),
                         [&](const Parameter& p) { return p.name == name; });
  return it == parameters_.end() ? nullptr : &*it;
}

const NamedValue* SearchSpace::find_named_value(const std::string& name) const {
  auto it = std::find_if(named_values_.begin(), named_values_.end(),
                         [&](const NamedValue& v) { return v.name == name; });
  return it == named_values_.end() ? nullptr : &*it;
}

Expression SearchSpace::parse(const std::string& text) const { return Expression::parse(text, definitions_); }

std::optional<ParamValue> SearchSpace::value_of(const std::string& name, const Config& config) const {
  if (const auto it = definitions_.find(name); it != definitions_.end()) return it->second.evaluate(config);
  if (find(name) == nullptr) return std::nullopt;
  const auto it = config.find(name);
  if (it == config.end()) throw ConfigError("parameter " + name + " has no value");
  return it->second;
}

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
      throw ConfigError("configuration " + to_string(config) + " violates constraint " + c.describe() +
                        values_compared(c, config));
}

// ", with threads = 2048, max_threads_per_block = 1024": the named values a violated constraint
// uses, so that its message shows what was compared.
std::string SearchSpace::values_compared(const Constraint& c, const Config& config) const {
  std::string with;
  for (const auto& name : c.expression.defined_names()) {
    std::optional<ParamValue> value;
    try {
      value = value_of(name, config);
    } catch (const ConfigError&) {  // not computable here: the constraint decided without it
    }
    if (value) with += (with.empty() ? ", with " : ", ") + name + " = " + std::to_string(*value);
  }
  return with;
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
// The state of a depth-first walk over the parameters in declaration order: the values bound so
// far, and each constraint filed under the depth at which the last parameter it reads is bound,
// to be checked there. Expressions read the bound values by position. With `cost`, it counts
// bindings and each constraint's evaluations.
class Walk {
 public:
  Walk(const std::vector<Parameter>& parameters, const std::vector<Constraint>& constraints,
       SearchSpace::EnumerationCost* cost = nullptr)
      : parameters_(parameters), values_(parameters.size()), checks_(parameters.size() + 1), cost_(cost) {
    if (cost_) cost_->checks.assign(constraints.size(), 0);
    for (std::size_t index = 0; index < constraints.size(); ++index) {
      const Constraint& c = constraints[index];
      Check check{&c, index, {}};
      std::size_t depth = 0;
      for (const auto& name : c.uses) {
        std::size_t i = 0;
        while (parameters[i].name != name) ++i;  // declaration checked that it is there
        check.slots.push_back(i);
        depth = std::max(depth, i + 1);
      }
      arguments_.resize(std::max(arguments_.size(), check.slots.size()));
      checks_[depth].push_back(std::move(check));
    }
  }

  std::size_t size() const { return parameters_.size(); }
  const Parameter& parameter(std::size_t i) const { return parameters_[i]; }

  void bind(std::size_t i, ParamValue value) {
    values_[i] = value;
    if (cost_) ++cost_->bindings;
  }

  // Whether the constraints that become checkable once parameters 0..depth-1 are bound hold.
  bool holds(std::size_t depth) {
    for (const Check& check : checks_[depth])
      if (!holds(check)) return false;
    return true;
  }

  // The first `depth` parameters' values as a configuration.
  Config config(std::size_t depth) const {
    Config c;
    for (std::size_t i = 0; i < depth; ++i) c.emplace(parameters_[i].name, values_[i]);
    return c;
  }

 private:
  struct Check {
    const Constraint* constraint;
    std::size_t index;               // in declaration order
    std::vector<std::size_t> slots;  // the index of each parameter it reads
  };

  bool holds(const Check& check) {
    const Constraint& c = *check.constraint;
    if (cost_) ++cost_->checks[check.index];
    for (std::size_t k = 0; k < check.slots.size(); ++k) arguments_[k] = values_[check.slots[k]];
    try {
      return c.expression.evaluate(std::span<const ParamValue>(arguments_.data(), check.slots.size())) != 0;
    } catch (const ConfigError&) {
      return false;  // division by zero or overflow: not a valid configuration, as in is_valid()
    }
  }

  const std::vector<Parameter>& parameters_;
  std::vector<ParamValue> values_;          // by parameter index; those beyond the depth are stale
  std::vector<std::vector<Check>> checks_;  // by depth
  std::vector<ParamValue> arguments_;       // one expression's parameter values, in its order
  SearchSpace::EnumerationCost* cost_;
};

// Calls visit(walk) for each valid configuration, in lexicographic order, until it returns false.
template <class Visit>
bool descend(Walk& walk, std::size_t depth, Visit& visit) {
  if (depth == walk.size()) return visit(walk);
  const Parameter& p = walk.parameter(depth);
  bool go_on = true;
  for (std::size_t i = 0; go_on && i < p.values.size(); ++i) {
    walk.bind(depth, p.values[i]);
    if (walk.holds(depth + 1)) go_on = descend(walk, depth + 1, visit);
  }
  return go_on;
}

template <class Visit>
void walk_valid(const std::vector<Parameter>& parameters, const std::vector<Constraint>& constraints,
                Visit visit, SearchSpace::EnumerationCost* cost = nullptr) {
  Walk walk(parameters, constraints, cost);
  if (walk.holds(0)) descend(walk, 0, visit);
}
}  // namespace

std::vector<Config> SearchSpace::enumerate(std::size_t limit) const {
  std::vector<Config> out;
  if (limit == 0) return out;
  walk_valid(parameters_, constraints_, [&](const Walk& w) {
    out.push_back(w.config(w.size()));
    return out.size() < limit;
  });
  return out;
}

std::size_t SearchSpace::valid_size() const {
  std::size_t count = 0;
  walk_valid(parameters_, constraints_, [&](const Walk&) {
    ++count;
    return true;
  });
  return count;
}

SearchSpace::EnumerationCost SearchSpace::enumeration_cost() const {
  EnumerationCost cost;
  walk_valid(
      parameters_, constraints_,
      [&](const Walk&) {
        ++cost.valid;
        return true;
      },
      &cost);
  return cost;
}

namespace {
// nearest_valid's search: depth-first over the parameters like enumerate(), each parameter's
// values tried nearest first, a branch abandoned once it cannot beat the best found.
class NearestSearch {
 public:
  NearestSearch(const std::vector<Parameter>& parameters, const std::vector<Constraint>& constraints,
                const Config& preferred)
      : walk_(parameters, constraints),
        order_(parameters.size()),
        least_after_(parameters.size() + 1, 0),
        chosen_(parameters.size()) {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const auto& values = parameters[i].values;
      // Where the preferred value sits in the list (or would be inserted); missing: the smallest.
      const auto it = preferred.find(parameters[i].name);
      std::size_t at = 0;
      bool listed = true;
      if (it != preferred.end()) {
        at = static_cast<std::size_t>(std::lower_bound(values.begin(), values.end(), it->second) - values.begin());
        listed = at < values.size() && values[at] == it->second;
      }
      for (std::size_t j = 0; j < values.size(); ++j) {
        // Inserted at `at`, the preferred value would push the values from `at` on one place up.
        const std::size_t distance = j < at ? at - j : j - at + (listed ? 0 : 1);
        order_[i].push_back({j, distance});
      }
      std::stable_sort(order_[i].begin(), order_[i].end(),
                       [](const Choice& a, const Choice& b) { return a.distance < b.distance; });
    }
    // A lower bound on the distance still to come below each depth.
    for (std::size_t i = parameters.size(); i-- > 0;)
      least_after_[i] = least_after_[i + 1] + order_[i].front().distance;
  }

  // The nearest valid configuration, or nullopt when there is none.
  std::optional<Config> run() {
    if (walk_.holds(0)) search(0, 0);
    if (!best_) return std::nullopt;
    for (std::size_t i = 0; i < best_->size(); ++i) walk_.bind(i, walk_.parameter(i).values[(*best_)[i]]);
    return walk_.config(walk_.size());
  }

 private:
  struct Choice {
    std::size_t index;     // in the parameter's list of values
    std::size_t distance;  // from the preferred value
  };

  void search(std::size_t depth, std::size_t distance) {
    if (depth == walk_.size()) {
      // Nearer, or as near and earlier in enumeration order (chosen_ < best_, lexicographically).
      if (!best_ || distance < best_distance_ || (distance == best_distance_ && chosen_ < *best_)) {
        best_ = chosen_;
        best_distance_ = distance;
      }
      return;
    }
    for (const Choice& choice : order_[depth]) {
      const std::size_t reachable = distance + choice.distance + least_after_[depth + 1];
      if (best_ && reachable > best_distance_) break;  // the choices after this are farther still
      chosen_[depth] = choice.index;
      // As near as the best at most: worth going on only if it could come earlier in the order.
      if (best_ && reachable == best_distance_ && !before_best(depth + 1)) continue;
      walk_.bind(depth, walk_.parameter(depth).values[choice.index]);
      if (walk_.holds(depth + 1)) search(depth + 1, distance + choice.distance);
    }
  }

  // Whether the first `depth` choices could start a configuration earlier than the best one.
  bool before_best(std::size_t depth) const {
    return !std::lexicographical_compare(best_->begin(), best_->begin() + static_cast<std::ptrdiff_t>(depth),
                                         chosen_.begin(),
                                         chosen_.begin() + static_cast<std::ptrdiff_t>(depth));
  }

  Walk walk_;
  std::vector<std::vector<Choice>> order_;  // per parameter, its values nearest first (ties: smaller first)
  std::vector<std::size_t> least_after_;    // the smallest distance parameters depth.. can add
  std::vector<std::size_t> chosen_;         // value indices of the configuration being built
  std::optional<std::vector<std::size_t>> best_;
  std::size_t best_distance_ = 0;
};
}  // namespace

Config SearchSpace::nearest_valid(const Config& preferred) const {
  if (is_valid(preferred)) return preferred;
  for (const auto& [name, value] : preferred)
    if (!find(name))
      throw ConfigError("unknown parameter '" + name + "'; parameters: " + join_names(parameters_));
  if (auto nearest = NearestSearch(parameters_, constraints_, preferred).run()) return *nearest;
  std::string all;
  for (const auto& c : constraints_) all += (all.empty() ? "" : "; ") + c.describe();
  throw ConfigError("no configuration satisfies every constraint: " + all);
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
