#include <algorithm>
#include <memory>
#include <stdexcept>

#include "gemmlab/problem.hpp"
#include "gemmlab/strategy.hpp"

namespace gemmlab {

namespace {
// Points hold value indices in 16 bits.
void check_value_counts(const std::vector<Parameter>& parameters) {
  for (const auto& p : parameters)
    if (p.values.size() > std::numeric_limits<std::uint16_t>::max())
      throw ConfigError("parameter " + p.name + " has " + std::to_string(p.values.size()) +
                        " values; at most 65535 are supported");
}

std::string key_of(const Point& p) {
  return std::string(reinterpret_cast<const char*>(p.data()), p.size() * sizeof(std::uint16_t));
}
}  // namespace

SearchDomain::SearchDomain(const SearchSpace& space) : parameters_(space.parameters()) {
  check_value_counts(parameters_);
  for (const Config& c : space.enumerate()) {
    Point p;
    for (const auto& param : parameters_) {
      const auto at = std::lower_bound(param.values.begin(), param.values.end(), c.at(param.name));
      p.push_back(static_cast<std::uint16_t>(at - param.values.begin()));
    }
    points_.push_back(std::move(p));
  }
  index_points();
}

SearchDomain::SearchDomain(std::vector<Parameter> parameters, const std::vector<Config>& configs)
    : parameters_(std::move(parameters)) {
  for (auto& param : parameters_) {
    std::sort(param.values.begin(), param.values.end());
    param.values.erase(std::unique(param.values.begin(), param.values.end()), param.values.end());
  }
  check_value_counts(parameters_);
  for (const Config& c : configs) {
    Point p;
    for (const auto& param : parameters_) {
      auto it = c.find(param.name);
      if (it == c.end()) throw ConfigError("configuration " + to_string(c) + " has no value for " + param.name);
      const auto at = std::lower_bound(param.values.begin(), param.values.end(), it->second);
      if (at == param.values.end() || *at != it->second)
        throw ConfigError(param.name + "=" + std::to_string(it->second) + " is not one of its values");
      p.push_back(static_cast<std::uint16_t>(at - param.values.begin()));
    }
    points_.push_back(std::move(p));
  }
  index_points();
}

void SearchDomain::index_points() {
  for (std::size_t i = 0; i < points_.size(); ++i)
    if (!lookup_.emplace(key_of(points_[i]), i).second)
      throw ConfigError("configuration " + to_string(config(i)) + " is listed twice");
}

Config SearchDomain::config(std::size_t candidate) const {
  Config c;
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    c[parameters_[i].name] = parameters_[i].values[points_[candidate][i]];
  return c;
}

std::optional<std::size_t> SearchDomain::find(const Point& point) const {
  auto it = lookup_.find(key_of(point));
  if (it == lookup_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::size_t> SearchDomain::find(const Config& config) const {
  Point p;
  for (const auto& param : parameters_) {
    auto it = config.find(param.name);
    if (it == config.end()) return std::nullopt;
    const auto at = std::lower_bound(param.values.begin(), param.values.end(), it->second);
    if (at == param.values.end() || *at != it->second) return std::nullopt;
    p.push_back(static_cast<std::uint16_t>(at - param.values.begin()));
  }
  return find(p);
}

std::vector<std::size_t> SearchDomain::neighbours(std::size_t candidate, SearchSpace::Neighbourhood kind) const {
  std::vector<std::size_t> out;
  Point p = points_[candidate];
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const std::uint16_t original = p[i];
    const auto count = static_cast<std::uint16_t>(parameters_[i].values.size());
    for (std::uint16_t v = 0; v < count; ++v) {
      if (v == original) continue;
      if (kind == SearchSpace::Neighbourhood::adjacent && v + 1 != original && v != original + 1) continue;
      p[i] = v;
      if (auto found = find(p)) out.push_back(*found);
    }
    p[i] = original;
  }
  return out;
}

std::size_t SearchDomain::nearest(const Point& point) const {
  if (auto exact = find(point)) return *exact;
  std::size_t best = 0;
  std::pair<int, int> best_distance{std::numeric_limits<int>::max(), 0};
  for (std::size_t c = 0; c < points_.size(); ++c) {
    std::pair<int, int> d{0, 0};
    for (std::size_t i = 0; i < point.size(); ++i) {
      const int delta = std::abs(int(points_[c][i]) - int(point[i]));
      d.first += delta != 0;
      d.second += delta;
    }
    if (d < best_distance) best_distance = d, best = c;
  }
  return best;
}

std::string_view to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::invalid: return "invalid";
    case Status::failed: return "failed";
    case Status::aborted: return "aborted";
  }
  return "?";
}

Status parse_status(std::string_view text) {
  return parse_name(text, {Status::ok, Status::invalid, Status::failed, Status::aborted}, "status");
}

SearchContext::SearchContext(const SearchDomain& domain, Objective objective, Budget budget, std::uint64_t seed)
    : SearchContext(domain, AsyncObjective{}, budget, seed) {
  // One slot: each candidate is evaluated at its collect, right after its submit.
  auto submitted = std::make_shared<std::size_t>(0);
  async_.submit = [submitted](std::size_t candidate) { *submitted = candidate; };
  async_.collect = [submitted, objective = std::move(objective)] {
    Observation o = objective(*submitted);
    o.candidate = *submitted;
    return o;
  };
}

SearchContext::SearchContext(const SearchDomain& domain, AsyncObjective objective, Budget budget, std::uint64_t seed)
    : domain_(domain), budget_(budget), rng_(seed), async_(std::move(objective)),
      start_(std::chrono::steady_clock::now()), seen_(domain.size(), unseen) {
  if (async_.slots == 0) throw std::invalid_argument("an asynchronous objective needs at least one slot");
}

std::size_t SearchContext::remaining() const {
  const std::size_t by_budget = budget_.evaluations > history_.size() ? budget_.evaluations - history_.size() : 0;
  return std::min(by_budget, domain_.size() - history_.size());
}

bool SearchContext::done() const {
  if (remaining() == 0) return true;
  if (budget_.seconds > 0 &&
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >= budget_.seconds)
    return true;
  return false;
}

std::optional<Observation> SearchContext::evaluate(std::size_t candidate) {
  return evaluate(candidate, true);
}

std::optional<Observation> SearchContext::evaluate_start(std::size_t candidate) {
  return evaluate(candidate, false);
}

std::optional<Observation> SearchContext::evaluate(std::size_t candidate, bool time_limited) {
  if (seen_[candidate] != unseen) return history_[seen_[candidate]];
  if (time_limited ? done() : remaining() == 0) return std::nullopt;
  seen_[candidate] = history_.size();
  history_.push_back(stand_in(candidate));
  ++in_flight_;
  async_.submit(candidate);
  while (in_flight_ >= async_.slots) absorb(async_.collect());
  return history_[seen_[candidate]];
}

void SearchContext::finish() {
  while (in_flight_ > 0) absorb(async_.collect());
}

Observation SearchContext::stand_in(std::size_t candidate) const {
  Observation o;
  o.candidate = candidate;
  o.pending = true;
  if (worst_ok_s_ >= 0) {
    o.status = Status::ok;
    o.time_s = worst_ok_s_;
  } else {
    o.reason = "being evaluated";
  }
  return o;
}

void SearchContext::absorb(Observation o) {
  if (o.candidate >= seen_.size() || seen_[o.candidate] == unseen || !history_[seen_[o.candidate]].pending)
    throw std::logic_error("an evaluation was collected that was not in flight");
  if (o.status == Status::invalid || o.status == Status::failed) o.time_s = std::numeric_limits<double>::infinity();
  o.pending = false;
  const std::size_t at = seen_[o.candidate];
  history_[at] = o;
  --in_flight_;
  if (o.status == Status::ok) {
    worst_ok_s_ = std::max(worst_ok_s_, o.time_s);
    if (best_ == unseen || o.time_s < history_[best_].time_s || (o.time_s == history_[best_].time_s && at < best_))
      best_ = at;
  }
}

std::optional<std::size_t> SearchContext::random_unevaluated() {
  const std::size_t left = domain_.size() - history_.size();
  if (left == 0) return std::nullopt;
  // Rejection sampling while the space is mostly unexplored; a scan for the k-th unseen otherwise.
  if (history_.size() * 2 < domain_.size()) {
    std::uniform_int_distribution<std::size_t> pick(0, domain_.size() - 1);
    for (;;) {
      const std::size_t c = pick(rng_);
      if (seen_[c] == unseen) return c;
    }
  }
  std::size_t k = std::uniform_int_distribution<std::size_t>(0, left - 1)(rng_);
  for (std::size_t c = 0; c < domain_.size(); ++c)
    if (seen_[c] == unseen && k-- == 0) return c;
  return std::nullopt;
}

}  // namespace gemmlab
