// What else the machine did while something was measured, and how much memory a step took: the
// two facts a reader needs to trust a timing and to size a run. Linux only (/proc); elsewhere the
// meters report nothing.
#pragma once

#include <cstdint>
#include <optional>

namespace gemmlab {

// CPU time others took while a measurement ran, in cores (seconds of CPU per second of wall
// time): other processes on this machine, and time the hypervisor gave this machine's virtual
// cores to other guests (steal). A timing taken while either was sizeable is disturbed: a
// two-core machine with a build running gives each library only part of a core.
struct MachineLoad {
  double seconds = 0;       // wall time covered
  double others_cores = 0;  // CPU time of every other process / wall time
  double steal_cores = 0;   // stolen time / wall time
  // The threshold a sweep warns at and the report flags: a fifth of a core taken by others.
  static constexpr double disturbed_above_cores = 0.2;
  bool disturbed() const { return others_cores + steal_cores > disturbed_above_cores; }
};

// Reads the machine's and this process's CPU time at construction; `stop()` gives the load since.
// Resolution: the kernel's clock tick (10 ms), so a window of under a second reads coarsely.
class LoadMeter {
 public:
  LoadMeter();
  std::optional<MachineLoad> stop() const;

 private:
  struct Sample {
    double wall = 0, busy = 0, steal = 0, self = 0;  // seconds
    bool ok = false;
  };
  static Sample read();
  Sample start_;
};

// The growth of this process's peak resident memory from construction to `stop()`: the memory a
// step touched beyond what was resident before (buffers it allocated and wrote, freed or not).
// Resets the kernel's high-water mark (/proc/self/clear_refs) at construction. Pages freed by
// earlier steps and still held by the allocator can be reused without growth: the caller
// releases large buffers to the system (see release_freed_memory) for the figure to count them.
class ResidentPeakMeter {
 public:
  ResidentPeakMeter();
  std::optional<std::int64_t> stop() const;

 private:
  std::optional<std::int64_t> start_;
};

// Hands memory the allocator keeps after free() back to the system (malloc_trim), so that the
// next ResidentPeakMeter sees a step's buffers as growth even where they reuse freed addresses.
void release_freed_memory();

}  // namespace gemmlab
