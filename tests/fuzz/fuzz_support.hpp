// What the libFuzzer targets share: an invariant that does not hold is a finding (__builtin_trap,
// which libFuzzer reports as a crash with the input that broke it).
#pragma once

namespace gemmlab::fuzz {

inline void check(bool invariant) {
  if (!invariant) __builtin_trap();
}

}  // namespace gemmlab::fuzz
