// The cache of compiled modules shared by the backends that compile kernels at run time (NVRTC,
// hipcc): each build is done once per key, in memory for the process and on disk across
// processes ($XDG_CACHE_HOME/gemmlab/<folder>, else ~/.cache/gemmlab/<folder>).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gemmlab {

// 128-bit FNV-1a (two 64-bit lanes with different offsets) in hex: a cache key, not a security
// measure.
std::string content_hash(const std::string& text);

// A whole file's bytes ("" when it cannot be read).
std::string read_file(const std::filesystem::path& path);
// Writes `text` as the whole file; std::runtime_error naming the path when it cannot.
void write_file(const std::filesystem::path& path, const std::string& text);

// A build's named parts ("log", "cubin", ...).
struct CachedBuild {
  std::map<std::string, std::string> parts;
  bool from_disk_cache = false;
};

// The build for key_text (everything that decides it: source, options, target, compiler version):
// from memory, else from disk, else build() — whose exceptions propagate and nothing is cached.
// A key being built on another thread (the tuner's look-ahead) is waited for, not built twice.
// On disk every part is a file <hash>.<part>, written in the order of part_names: the last one
// marks a complete entry, so put the product (the image) last.
CachedBuild cached_build(const std::string& folder, const std::string& key_text,
                         const std::vector<std::string>& part_names,
                         const std::function<std::map<std::string, std::string>()>& build);

}  // namespace gemmlab
