#include "module_cache.hpp"

#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gemmlab {
namespace {

std::filesystem::path disk_cache_dir(const std::string& folder) {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return std::filesystem::path(xdg) / "gemmlab" / folder;
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0')
    return std::filesystem::path(home) / ".cache" / "gemmlab" / folder;
  return {};
}

// Written to a temporary name and renamed: a concurrent reader sees the whole file or none.
void write_atomically(const std::filesystem::path& path, const std::string& bytes) {
  const std::filesystem::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return;  // a cache that cannot be written is only slower
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) std::filesystem::remove(tmp, error);
}

}  // namespace

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string content_hash(const std::string& text) {
  std::uint64_t a = 14695981039346656037ull, b = 0x6c62272e07bb0142ull;
  for (unsigned char ch : text) {
    a = (a ^ ch) * 1099511628211ull;
    b = (b ^ ch) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
  }
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return hex;
}

CachedBuild cached_build(const std::string& folder, const std::string& key_text,
                         const std::vector<std::string>& part_names,
                         const std::function<std::map<std::string, std::string>()>& build) {
  static std::mutex in_flight_mutex;
  static std::condition_variable finished;
  static std::set<std::string> in_flight;
  static std::mutex memory_mutex;
  static std::map<std::string, CachedBuild> in_memory;
  const std::string key = content_hash(key_text);
  const std::string memory_key = folder + '/' + key;
  {
    std::unique_lock lock(in_flight_mutex);
    finished.wait(lock, [&] { return in_flight.count(memory_key) == 0; });
    std::lock_guard memory_lock(memory_mutex);
    if (auto found = in_memory.find(memory_key); found != in_memory.end()) return found->second;
    in_flight.insert(memory_key);
  }
  struct Done {  // however this ends, the key is no longer in flight
    const std::string& key;
    ~Done() {
      {
        std::lock_guard lock(in_flight_mutex);
        in_flight.erase(key);
      }
      finished.notify_all();
    }
  } done{memory_key};

  const std::filesystem::path dir = disk_cache_dir(folder);
  if (!dir.empty() && !part_names.empty()) {
    std::error_code error;
    if (std::filesystem::exists(dir / (key + '.' + part_names.back()), error)) {
      CachedBuild cached{.parts = {}, .from_disk_cache = true};
      bool complete = true;
      for (const std::string& part : part_names) {
        const auto path = dir / (key + '.' + part);
        complete = complete && std::filesystem::exists(path, error);
        if (complete) cached.parts[part] = read_file(path);
      }
      if (complete && !cached.parts[part_names.back()].empty()) {
        std::lock_guard lock(memory_mutex);
        return in_memory.emplace(memory_key, std::move(cached)).first->second;
      }
    }
  }
  CachedBuild built{.parts = build(), .from_disk_cache = false};  // outside the locks: builds run in parallel
  if (!dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (!error)
      for (const std::string& part : part_names) write_atomically(dir / (key + '.' + part), built.parts[part]);
  }
  std::lock_guard lock(memory_mutex);
  return in_memory.emplace(memory_key, std::move(built)).first->second;
}

}  // namespace gemmlab
