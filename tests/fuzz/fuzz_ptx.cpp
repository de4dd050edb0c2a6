// libFuzzer target for the PTX parser (built with clang only; see tests/CMakeLists.txt). Any
// input may be rejected with a ParseError; anything else is a finding: a crash, a sanitizer
// report, another exception, a hang, or a broken invariant below (__builtin_trap).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gemmlab/ptx.hpp"
#include "fuzz_support.hpp"

using gemmlab::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const gemmlab::ptx::Module module = gemmlab::ptx::parse(text);
    for (const auto& kernel : module.kernels) {
      for (const auto& [label, index] : kernel.labels) check(!label.empty() && index <= kernel.body.size());
      for (const auto& in : kernel.body) {
        check(!in.opcode.empty() && in.line >= 1);
        check(in.form().starts_with(in.opcode));
        check(text.find(in.opcode) != std::string_view::npos);
      }
    }
  } catch (const gemmlab::ptx::ParseError&) {
  }
  return 0;
}
