// libFuzzer target for the record loader: arbitrary bytes as the text of a Kernel Tuner cache
// file. Either a Record comes back, and then turning it into a recorded space either works or
// throws ConfigError / std::runtime_error, or parse_record throws std::runtime_error naming the
// file. Any other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "gemmlab/record.hpp"
#include "gemmlab/replay.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  gemmlab::Record record;
  try {
    record = gemmlab::parse_record(text, "fuzz.json");
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind("fuzz.json", 0) != 0) __builtin_trap();  // must name the file
    return 0;
  }
  try {
    const gemmlab::RecordedSpace space(record);
    if (space.domain().size() != record.entries.size()) __builtin_trap();
    if (!(space.optimum_s() > 0) && space.optimum_s() != 0) __builtin_trap();
  } catch (const gemmlab::ConfigError&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
