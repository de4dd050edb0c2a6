#include "gemmlab/machine_load.hpp"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace gemmlab {

namespace {
double ticks_per_second() {
  static const double hz = [] {
    const long v = ::sysconf(_SC_CLK_TCK);
    return v > 0 ? static_cast<double>(v) : 100.0;
  }();
  return hz;
}

// "VmHWM:    123456 kB" and "VmRSS: ..." of /proc/self/status, in bytes.
std::optional<std::int64_t> status_bytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    std::int64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return std::nullopt;
}
}  // namespace

LoadMeter::LoadMeter() : start_(read()) {}

LoadMeter::Sample LoadMeter::read() {
  Sample s;
  s.wall = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  // /proc/stat: "cpu  user nice system idle iowait irq softirq steal guest guest_nice" in ticks,
  // summed over every core; guest time is already part of user.
  std::ifstream stat("/proc/stat");
  std::string label;
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || label != "cpu")
    return s;
  // /proc/self/stat: utime and stime (fields 14 and 15, every thread of this process) follow the
  // command name, which is in parentheses and may hold spaces.
  std::ifstream self_stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(self_stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return s;
  std::istringstream fields(text.substr(close + 2));
  std::string skip;
  for (int field = 3; field <= 13; ++field) fields >> skip;
  long long utime = 0, stime = 0;
  if (!(fields >> utime >> stime)) return s;
  const double hz = ticks_per_second();
  s.busy = static_cast<double>(user + nice + system + irq + softirq) / hz;
  s.steal = static_cast<double>(steal) / hz;
  s.self = static_cast<double>(utime + stime) / hz;
  s.ok = true;
  return s;
}

std::optional<MachineLoad> LoadMeter::stop() const {
  const Sample end = read();
  if (!start_.ok || !end.ok || end.wall <= start_.wall) return std::nullopt;
  MachineLoad load;
  load.seconds = end.wall - start_.wall;
  // Tick rounding can make a short window's difference slightly negative.
  load.others_cores = std::max(0.0, (end.busy - start_.busy) - (end.self - start_.self)) / load.seconds;
  load.steal_cores = std::max(0.0, end.steal - start_.steal) / load.seconds;
  return load;
}

ResidentPeakMeter::ResidentPeakMeter() {
  // Writing 5 resets the peak resident size (VmHWM) to the current one (Linux 4.0 and later).
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.close();
  if (clear) start_ = status_bytes("VmRSS");
}

std::optional<std::int64_t> ResidentPeakMeter::stop() const {
  if (!start_) return std::nullopt;
  const auto peak = status_bytes("VmHWM");
  if (!peak) return std::nullopt;
  return std::max<std::int64_t>(0, *peak - *start_);
}

void release_freed_memory() { ::malloc_trim(0); }

}  // namespace gemmlab
