// Whether this build runs under AddressSanitizer, for the few places that must do without what it
// refuses (RTLD_DEEPBIND) or breaks (an address-space limit on a worker).
#pragma once

namespace gemmlab {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool address_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool address_sanitizer = true;
#else
inline constexpr bool address_sanitizer = false;
#endif
#else
inline constexpr bool address_sanitizer = false;
#endif

}  // namespace gemmlab
