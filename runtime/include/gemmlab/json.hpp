// JSON forms of the runtime's records, shared by every program that prints or stores them.
#pragma once

#include <nlohmann/json.hpp>

#include "gemmlab/device.hpp"
#include "gemmlab/evaluate.hpp"
#include "gemmlab/measure.hpp"
#include "gemmlab/space.hpp"
#include "gemmlab/systolic.hpp"
#include "gemmlab/traffic.hpp"
#include "gemmlab/validate.hpp"

namespace gemmlab {

void to_json(nlohmann::json& j, const CacheLevel& c);
void to_json(nlohmann::json& j, const MeasuredCeilings& c);
void to_json(nlohmann::json& j, const DeviceInfo& d);
// Times are in milliseconds, the unit in the name: {"median_ms", "spread", "min_ms", "max_ms",
// "repetitions"} (without the raw samples).
void to_json(nlohmann::json& j, const Measurement& m);
void to_json(nlohmann::json& j, const Parameter& p);
void to_json(nlohmann::json& j, const NamedValue& v);  // name, definition, value (null unless constant), help
void to_json(nlohmann::json& j, const Constraint& c);  // expression, why
void to_json(nlohmann::json& j, const SearchSpace& s);  // parameters, named_values, constraints, sizes
void to_json(nlohmann::json& j, const ValidationResult& v);
// One evaluation, as `run` prints it and each row of `sweep` holds it: {"valid", "max_rel_error",
// "tolerance", "reason", "time_ms", "gflops", "timing", "reference": {"name", "gflops", "time_ms",
// "timing"}, "ratio_to_reference", "power": {"kernel", "reference"}: {"watts", "gflops_per_watt",
// "temperature_c"}}; time_ms, gflops and timing null when the kernel was not timed, reference
// null without one, power null where the device reports none.
void to_json(nlohmann::json& j, const Evaluation& e);
// What compiling one configuration gave, the same for every backend: {"target", "registers",
// "scalar_registers", "accumulation_registers", "shared_bytes", "shared_limit", "spill_bytes",
// "stack_bytes", "matrix_instructions", "instruction_classes", "ptx_forms"} (AMD: registers are VGPRs, scalar
// SGPRs, accumulation AGPRs, shared_bytes LDS, spill_bytes scratch per lane).
void to_json(nlohmann::json& j, const CompileReport& r);
// {"tile": {"m", "n"}, "bytes_moved", "arithmetic_intensity", "parallel_tiles"}
void to_json(nlohmann::json& j, const Traffic& t);
// {"parameter", "value", "next", "constraints"}, or {"parameter", "value", "limit": "largest allowed value"}
void to_json(nlohmann::json& j, const GrowthLimit& g);
namespace systolic {
void to_json(nlohmann::json& j, const ArraySpec& a);
void to_json(nlohmann::json& j, const Mapping& m);
void to_json(nlohmann::json& j, const Counts& c);
// The simulation's figures as `gemmlab simulate --json` prints them (utilisations in percent).
void to_json(nlohmann::json& j, const Report& r);
}  // namespace systolic

}  // namespace gemmlab
