// Kernel files embedded in the program at build time by cmake/embed_kernel_sources.cmake: their
// text and the SHA-256 under which the results cache files the kernel's results. Each backend's
// generated file defines <backend>::embedded_files().
#pragma once

#include <map>
#include <string_view>

namespace gemmlab {

struct EmbeddedSource {
  std::string_view text;
  // Of the file, the shared code it is built or launched with, and (CPU) the compiler and flags.
  std::string_view sha256;
};

}  // namespace gemmlab
