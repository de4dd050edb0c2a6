// JSON forms of the runtime's records, shared by every program that prints or stores them.
#pragma once

#include <nlohmann/json.hpp>

#include "gemmlab/device.hpp"
#include "gemmlab/evaluate.hpp"
#include "gemmlab/measure.hpp"
#include "gemmlab/space.hpp"
#include "gemmlab/systolic.hpp"
#include "gemmlab/validate.hpp"

namespace gemmlab {

void to_json(nlohmann::json& j, const CacheLevel& c);
void to_json(nlohmann::json& j, const MeasuredCeilings& c);
void to_json(nlohmann::json& j, const DeviceInfo& d);
void to_json(nlohmann::json& j, const Measurement& m);  // without the raw samples
void to_json(nlohmann::json& j, const Parameter& p);
void to_json(nlohmann::json& j, const SearchSpace& s);
void to_json(nlohmann::json& j, const ValidationResult& v);
namespace systolic {
void to_json(nlohmann::json& j, const ArraySpec& a);
void to_json(nlohmann::json& j, const Mapping& m);
void to_json(nlohmann::json& j, const Counts& c);
// The simulation's figures as `gemmlab simulate --json` prints them (utilisations in percent).
void to_json(nlohmann::json& j, const Report& r);
}  // namespace systolic

}  // namespace gemmlab
