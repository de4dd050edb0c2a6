// Kernel files embedded in the program at build time by cmake/embed_kernel_sources.cmake: their
// text and the SHA-256 under which the results cache files the kernel's results. Each backend's
// generated file defines <backend>::embedded_files().
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gemmlab {

struct EmbeddedSource {
  std::string_view text;
  // Of the file, the shared code it is built or launched with, and (CPU) the compiler and flags.
  std::string_view sha256;
};

// The SHA-256 of kernels/<backend>/<file> among a backend's embedded files (a kernel's source
// hash). A file missing there is a build mistake: std::logic_error.
inline std::string embedded_sha256(const std::map<std::string_view, EmbeddedSource>& files, std::string_view backend,
                                   const std::string& file) {
  const auto found = files.find(file);
  if (found == files.end())
    throw std::logic_error("no embedded source kernels/" + std::string(backend) + "/" + file);
  return std::string(found->second.sha256);
}

}  // namespace gemmlab
