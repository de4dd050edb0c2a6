// The PTX simulator: executes a kernel of a PTX module (as NVRTC emits it) functionally on the
// CPU, as a simulated CUDA device does. A launch runs the grid's CTAs on host threads; within a CTA
// the warps are interleaved by a scheduler that switches at blocking points (bar.sync, a failed
// mbarrier wait, a spin loop); within a warp each lane has its own PC and the lanes at the lowest
// PC run together, so divergent lanes reconverge where their paths meet.
//
// The simulator checks what a GPU would not (a sanitizer): global accesses outside the buffers
// the launch was given, shared accesses out of range, misaligned addresses, collectives reached
// by the wrong lanes, deadlock. Any of them, or an instruction form it does not support, stops
// the launch with LaunchError naming the kernel, the CTA, the thread and the PTX line.
//
// A launch returns deterministic counts (instructions by class, FLOPs by unit, memory traffic):
// a simulated device has no time of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gemmlab::ptx::sim {

class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// A range of host memory the kernel may access as global memory.
struct Region {
  std::uint64_t begin = 0, end = 0;  // [begin, end)
  std::string name;                  // "A", "C", for messages
};

// Counts of one launch, summed over all its threads (warp instructions: one per warp and
// instruction executed, whatever the number of active lanes).
struct Metrics {
  // Warp instructions by class.
  std::int64_t fp32 = 0, fp64 = 0, integer = 0, memory = 0, control = 0, sync = 0, tensor = 0, other = 0;
  std::int64_t thread_instructions = 0;  // lanes that executed, summed
  // FLOPs (an FMA counts two) by unit.
  std::int64_t fma_flops = 0, tensor_flops = 0;
  // Global memory (ld/st, cp.async sources): requests (warp instructions), 32-byte sectors,
  // bytes the active lanes asked for, and distinct 32-byte sectors touched over the launch.
  std::int64_t global_load_requests = 0, global_store_requests = 0;
  std::int64_t global_load_sectors = 0, global_store_sectors = 0;
  std::int64_t global_bytes_requested = 0, global_unique_bytes = 0;
  // Shared memory (ld/st/ldmatrix/cp.async destinations): requests and wavefronts (a request
  // without bank conflicts takes the fewest its width allows), bytes.
  std::int64_t shared_requests = 0, shared_wavefronts = 0, shared_bytes = 0;
  std::int64_t barriers = 0;  // bar.sync executed (per warp)
  std::int64_t cp_async_bytes = 0, tma_bytes = 0;
  // What the compiler gave the kernel (ptxas's report) and the occupancy it allows on the
  // simulated chip: set by the caller that knows them (the simulated CUDA device), 0 otherwise.
  std::int64_t registers_per_thread = 0, shared_bytes_per_block = 0, blocks_per_sm = 0, warps_per_sm = 0;

  std::int64_t warp_instructions() const { return fp32 + fp64 + integer + memory + control + sync + tensor + other; }
  Metrics& operator+=(const Metrics& o);
};

// A kernel ready to launch: its PTX decoded once, launched any number of times (also
// concurrently).
class Program {
 public:
  // Parses `ptx` and decodes kernel `kernel`. Throws LaunchError for a malformed module, a
  // missing kernel or an unsupported instruction form (naming it, the kernel and the line).
  static std::shared_ptr<const Program> load(const std::string& ptx, const std::string& kernel);
  virtual ~Program() = default;

  // The kernel's parameters in order: their sizes and alignments in bytes, as a launch packs them.
  struct Param {
    std::size_t bytes = 0, align = 1;
  };
  virtual const std::vector<Param>& params() const = 0;
  virtual std::size_t static_shared_bytes() const = 0;
  virtual const std::string& name() const = 0;
  // The instruction forms of the kernel (the opcode with all its modifiers, "ld.global.nc.v4.f32"),
  // each with how many instructions of the code have it: what a compile check reports, so that
  // the forms a kernel's whole search space needs can be listed and counted.
  virtual std::map<std::string, int> forms() const = 0;
};

struct Launch {
  Dim3 grid, block;
  std::size_t dynamic_shared_bytes = 0;
  std::vector<const void*> args;  // one pointer per parameter, to its value (like cuLaunchKernel)
  std::vector<Region> regions;    // the global memory the kernel may touch
  std::string label;              // what the error messages call the launch: kernel and configuration
  int host_threads = 0;           // CTAs run on this many host threads (0: the hardware's)
};

// Runs the launch to completion. Throws LaunchError on a sanitizer finding or unsupported form.
Metrics launch(const Program& program, const Launch& launch);

// Where the simulator's generic address windows begin: shared memory, kernel parameters and
// local memory live at these generic addresses (host memory, the global space, is below them).
inline constexpr std::uint64_t shared_window = 0xfe00'0000'0000'0000ull;
inline constexpr std::uint64_t param_window = 0xfd00'0000'0000'0000ull;
inline constexpr std::uint64_t local_window = 0xfc00'0000'0000'0000ull;

}  // namespace gemmlab::ptx::sim
