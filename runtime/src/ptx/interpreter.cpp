// The PTX interpreter (gemmlab/ptx_sim.hpp): CTAs on host threads, warps interleaved at blocking
// points, lanes with their own PCs, every instruction over a whole warp.
//
// Divergence: the lanes at the lowest PC run together. Structured code (what NVRTC emits) then
// runs each side of a branch in turn and the lanes meet again where the paths join: the else
// side (a higher PC) waits until the then side has reached it, and lanes that left a loop wait
// at its exit until the others have left it too.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fault.hpp"
#include "gemmlab/ptx.hpp"
#include "gemmlab/ptx_sim.hpp"
#include "gemmlab/validate.hpp"
#include "hopper.hpp"
#include "memory_metrics.hpp"
#include "program.hpp"
#include "warp_matrix.hpp"

namespace gemmlab::ptx::sim {

Metrics& Metrics::operator+=(const Metrics& o) {
  fp32 += o.fp32;
  fp64 += o.fp64;
  integer += o.integer;
  memory += o.memory;
  control += o.control;
  sync += o.sync;
  tensor += o.tensor;
  other += o.other;
  thread_instructions += o.thread_instructions;
  fma_flops += o.fma_flops;
  tensor_flops += o.tensor_flops;
  global_load_requests += o.global_load_requests;
  global_store_requests += o.global_store_requests;
  global_load_sectors += o.global_load_sectors;
  global_store_sectors += o.global_store_sectors;
  global_bytes_requested += o.global_bytes_requested;
  global_unique_bytes += o.global_unique_bytes;
  shared_requests += o.shared_requests;
  shared_wavefronts += o.shared_wavefronts;
  shared_bytes += o.shared_bytes;
  barriers += o.barriers;
  cp_async_bytes += o.cp_async_bytes;
  tma_bytes += o.tma_bytes;
  return *this;
}

std::shared_ptr<const Program> Program::load(const std::string& ptx, const std::string& kernel) {
  Module module;
  try {
    module = parse(ptx);
    return decode(module, module.kernel(kernel));
  } catch (const ParseError& e) {
    throw LaunchError(std::string("the PTX does not parse: ") + e.what());
  }
}

namespace {

constexpr int warp_size = 32;
__extension__ using int128 = __int128;  // mul.hi.s64 / u64: GCC and Clang have it
__extension__ using uint128 = unsigned __int128;
constexpr int quantum = 4096;  // instructions a warp runs before the scheduler moves on (spin loops)

template <class T>
T as(std::uint64_t v) {
  if constexpr (sizeof(T) == 8) return std::bit_cast<T>(v);
  else if constexpr (sizeof(T) == 4) return std::bit_cast<T>(static_cast<std::uint32_t>(v));
  else if constexpr (sizeof(T) == 2) return std::bit_cast<T>(static_cast<std::uint16_t>(v));
  else return std::bit_cast<T>(static_cast<std::uint8_t>(v));
}

template <class T>
std::uint64_t bits_of(T v) {
  if constexpr (sizeof(T) == 8) return std::bit_cast<std::uint64_t>(v);
  else if constexpr (sizeof(T) == 4) return std::bit_cast<std::uint32_t>(v);
  else if constexpr (sizeof(T) == 2) return std::bit_cast<std::uint16_t>(v);
  else return std::bit_cast<std::uint8_t>(v);
}

std::uint64_t width_mask(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

std::int64_t sign_extend(std::uint64_t v, int bits) {
  if (bits >= 64) return static_cast<std::int64_t>(v);
  const std::uint64_t sign = 1ull << (bits - 1);
  v &= width_mask(bits);
  return static_cast<std::int64_t>((v ^ sign) - sign);
}

// An integer operand as a 64-bit value: sign- or zero-extended from the type's width.
std::int64_t int_value(std::uint64_t v, Type t) {
  const int bits = type_bits(t);
  return is_signed(t) ? sign_extend(v, bits) : static_cast<std::int64_t>(v & width_mask(bits));
}

double float_value(std::uint64_t v, Type t) {
  switch (t) {
    case Type::f64: return as<double>(v);
    case Type::f32: return as<float>(v);
    case Type::f16: return from_fp16(static_cast<std::uint16_t>(v));
    case Type::bf16: return from_bf16(static_cast<std::uint16_t>(v));
    default: return 0;
  }
}

template <class F>
inline void for_lanes(std::uint32_t mask, F f) {
  while (mask != 0) {
    const int l = std::countr_zero(mask);
    mask &= mask - 1;
    f(l);
  }
}

// fma.rn over the lanes of `mask`. Built twice where the compiler can (GCC and Clang's function
// multiversioning): with the FMA instruction, chosen at run time on a CPU that has it, and
// without, where std::fma is a library call.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEMMLAB_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define GEMMLAB_FMA_CLONES
#endif
GEMMLAB_FMA_CLONES void fma_lanes_f32(std::uint64_t* d, const std::uint64_t* a, const std::uint64_t* b,
                                      const std::uint64_t* c, std::uint32_t mask) {
  for (int l = 0; l < 32; ++l)
    if (mask >> l & 1u) d[l] = bits_of(std::fma(as<float>(a[l]), as<float>(b[l]), as<float>(c[l])));
}
GEMMLAB_FMA_CLONES void fma_lanes_f64(std::uint64_t* d, const std::uint64_t* a, const std::uint64_t* b,
                                      const std::uint64_t* c, std::uint32_t mask) {
  for (int l = 0; l < 32; ++l)
    if (mask >> l & 1u) d[l] = bits_of(std::fma(as<double>(a[l]), as<double>(b[l]), as<double>(c[l])));
}

struct Fail {
  std::string what;
  int lane;
};

// An asynchronous copy issued by cp.async and not yet performed.
struct PendingCopy {
  int lane;
  std::int64_t group;  // the lane's group it belongs to once committed
  std::uint64_t shared_address;
  const std::byte* source;  // null when nothing is read (source size 0)
  int bytes, source_bytes;
};

// A TMA load whose data is in flight: written to shared memory, and its bytes completed on its
// mbarrier, when a thread waits on that barrier after every arrival (the phase's completion).
struct PendingTma {
  std::uint32_t barrier, dst;
  std::vector<std::byte> data;
};

struct Warp {
  int index = 0;
  std::uint32_t live = 0;  // lanes that exist and have not exited
  bool converged = true;
  std::uint32_t pc = 0;    // when converged
  std::uint32_t lane_pc[warp_size] = {};
  std::vector<std::uint64_t> regs;  // slot * 32 + lane
  enum class State { ready, at_barrier, done } state = State::ready;
  int barrier = 0;
  std::int64_t committed[warp_size] = {};  // cp.async groups committed per lane
  std::vector<PendingCopy> copies;
  // wgmma results not yet visible: written to their registers at the wait_group covering their
  // group. latest[slot] is the newest pending value of a register (an index into `accumulators`),
  // which a chained wgmma reads as its C.
  struct PendingAccumulator {
    std::int64_t group;
    int slot;
    std::uint64_t values[warp_size];
  };
  std::vector<PendingAccumulator> accumulators;
  std::vector<int> latest;
  std::int64_t wgmma_committed = 0;
  std::uint32_t sync_epoch = 0;  // warp-wide synchronisations so far (bar.warp.sync, collectives)
  std::vector<std::byte> local;  // local memory, lane after lane

  std::uint64_t* slot(int s) { return regs.data() + static_cast<std::size_t>(s) * warp_size; }
};

// The race checker's view of shared memory, per 4-byte word: who wrote it last and in which epoch
// (the CTA's barriers so far; the writer's warp's synchronisations so far), and how many
// asynchronous copies to it are in flight.
struct WordState {
  std::int32_t writer = -1;  // thread index; -1: nobody, or an asynchronous copy ordered by its wait
  std::uint32_t epoch = 0, warp_epoch = 0;
  std::uint16_t in_flight = 0;
};

// A CTA's storage: its warps' register files and local memory, its shared memory and the race
// checker's words. A launch's workers take it from a pool and give it back, so that the next
// launch reuses the pages: allocated afresh (megabytes per worker for the unrolled kernels' many
// registers), it went back to the system at each launch's end and was faulted in again, which was
// a fifth to two fifths of the verification plan's time on the simulator.
struct CtaStorage {
  std::vector<Warp> warps;
  std::vector<std::byte> shared;
  std::vector<WordState> words;
};

class CtaStoragePool {
 public:
  static std::unique_ptr<CtaStorage> take() {
    const std::lock_guard lock(mutex());
    auto& free = storages();
    if (free.empty()) return std::make_unique<CtaStorage>();
    auto storage = std::move(free.back());
    free.pop_back();
    return storage;
  }
  static void give_back(std::unique_ptr<CtaStorage> storage) {
    const std::lock_guard lock(mutex());
    auto& free = storages();
    // As many as the launches' workers at most (one per hardware thread); more are released.
    if (free.size() < std::max(1u, std::thread::hardware_concurrency())) free.push_back(std::move(storage));
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::vector<std::unique_ptr<CtaStorage>>& storages() {
    static std::vector<std::unique_ptr<CtaStorage>> free;
    return free;
  }
};

class Cta {
 public:
  Cta(const Decoded& program, const Launch& launch, const std::vector<std::byte>& params, Metrics& metrics,
      SectorSet& touched)
      : p_(program), launch_(launch), params_(params), metrics_(metrics), touched_(touched) {
    threads_ = static_cast<int>(launch.block.x * launch.block.y * launch.block.z);
    shared_.resize(program.dynamic_shared_offset + (program.uses_dynamic_shared ? launch.dynamic_shared_bytes : 0));
    const int warps = (threads_ + warp_size - 1) / warp_size;
    warps_.resize(static_cast<std::size_t>(warps));
    for (int w = 0; w < warps; ++w) {
      Warp& warp = warps_[static_cast<std::size_t>(w)];
      // A warp of an earlier launch: every field at its default again, its buffers' capacity kept.
      std::vector<std::uint64_t> regs = std::move(warp.regs);
      std::vector<std::byte> local = std::move(warp.local);
      std::vector<int> latest = std::move(warp.latest);
      warp = Warp{};
      warp.index = w;
      warp.regs = std::move(regs);
      warp.local = std::move(local);
      warp.latest = std::move(latest);
      warp.regs.assign(static_cast<std::size_t>(program.slots) * warp_size, 0);
      warp.local.assign(program.local_bytes * warp_size, std::byte{0});
      warp.latest.assign(static_cast<std::size_t>(program.slots), -1);
    }
  }
  ~Cta() { CtaStoragePool::give_back(std::move(storage_)); }
  Cta(const Cta&) = delete;
  Cta& operator=(const Cta&) = delete;

  void run(Dim3 ctaid) {
    ctaid_ = ctaid;
    std::fill(shared_.begin(), shared_.end(), std::byte{0});
    words_.assign((shared_.size() + 3) / 4, WordState{});
    epoch_ = 0;
    tmas_.clear();
    for (Warp& w : warps_) start(w);
    schedule();
  }

 private:
  void start(Warp& w) {
    const int first = w.index * warp_size;
    const int lanes = std::min(warp_size, threads_ - first);
    w.live = lanes == warp_size ? ~0u : (1u << lanes) - 1;
    w.converged = true;
    w.pc = 0;
    w.state = Warp::State::ready;
    std::fill(std::begin(w.committed), std::end(w.committed), 0);
    w.copies.clear();
    w.accumulators.clear();
    std::fill(w.latest.begin(), w.latest.end(), -1);
    w.wgmma_committed = 0;
    w.sync_epoch = 0;
    std::fill(w.regs.begin(), w.regs.end(), 0);
    std::fill(w.local.begin(), w.local.end(), std::byte{0});
    const Dim3 b = launch_.block, g = launch_.grid;
    for (const SlotInit& init : p_.inits) {
      std::uint64_t* r = w.slot(init.slot);
      for (int l = 0; l < warp_size; ++l) {
        const auto t = static_cast<unsigned>(first + l);
        std::uint64_t v = 0;
        switch (init.kind) {
          case SlotInit::Kind::constant: v = init.value; break;
          case SlotInit::Kind::tid_x: v = t % b.x; break;
          case SlotInit::Kind::tid_y: v = t / b.x % b.y; break;
          case SlotInit::Kind::tid_z: v = t / (b.x * b.y); break;
          case SlotInit::Kind::ntid_x: v = b.x; break;
          case SlotInit::Kind::ntid_y: v = b.y; break;
          case SlotInit::Kind::ntid_z: v = b.z; break;
          case SlotInit::Kind::ctaid_x: v = ctaid_.x; break;
          case SlotInit::Kind::ctaid_y: v = ctaid_.y; break;
          case SlotInit::Kind::ctaid_z: v = ctaid_.z; break;
          case SlotInit::Kind::nctaid_x: v = g.x; break;
          case SlotInit::Kind::nctaid_y: v = g.y; break;
          case SlotInit::Kind::nctaid_z: v = g.z; break;
          case SlotInit::Kind::laneid: v = static_cast<unsigned>(l); break;
          case SlotInit::Kind::warpid: v = static_cast<unsigned>(w.index); break;
          case SlotInit::Kind::nwarpid: v = warps_.size(); break;
          case SlotInit::Kind::dynamic_smem_size: v = launch_.dynamic_shared_bytes; break;
        }
        r[l] = v;
      }
    }
  }

  // Runs the warps until all have exited. A round in which no warp can move is a deadlock.
  void schedule() {
    for (;;) {
      bool all_done = true, progress = false;
      for (Warp& w : warps_) {
        if (w.state == Warp::State::done) continue;
        all_done = false;
        if (w.state == Warp::State::at_barrier) continue;
        if (run_warp(w)) progress = true;
      }
      if (all_done) return;
      if (release_barriers()) progress = true;
      if (!progress) deadlock();
    }
  }

  [[noreturn]] void deadlock() {
    std::string where;
    for (const Warp& w : warps_) {
      if (w.state == Warp::State::done) continue;
      const std::uint32_t pc = w.converged ? w.pc : min_pc(w);
      where += (where.empty() ? "" : "; ") + std::string("warp ") + std::to_string(w.index) +
               (w.state == Warp::State::at_barrier ? " waits at barrier " + std::to_string(w.barrier) : " spins") +
               " (PTX line " + std::to_string(pc < p_.code.size() ? p_.code[pc].line : 0) + ")";
    }
    throw LaunchError(prefix() + ": deadlock: every warp is blocked: " + where);
  }

  std::string prefix() const {
    return launch_.label + ", CTA (" + std::to_string(ctaid_.x) + "," + std::to_string(ctaid_.y) + "," +
           std::to_string(ctaid_.z) + ")";
  }

  [[noreturn]] void fail(const Warp& w, const Instr& in, int lane, const std::string& what) const {
    const Dim3 b = launch_.block;
    const auto t = static_cast<unsigned>(w.index * warp_size + std::max(lane, 0));
    throw LaunchError(prefix() + ", thread (" + std::to_string(t % b.x) + "," + std::to_string(t / b.x % b.y) + "," +
                      std::to_string(t / (b.x * b.y)) + "), PTX line " + std::to_string(in.line) + " `" + in.text +
                      "`: " + what);
  }

  static std::uint32_t min_pc(const Warp& w) {
    std::uint32_t pc = std::numeric_limits<std::uint32_t>::max();
    for_lanes(w.live, [&](int l) { pc = std::min(pc, w.lane_pc[l]); });
    return pc;
  }

  int live_threads() const {
    int n = 0;
    for (const Warp& w : warps_)
      if (w.state != Warp::State::done) n += std::popcount(w.live);
    return n;
  }

  // Barrier 0..15: completes when every live thread (or the count bar.sync names) has arrived.
  bool release_barriers() {
    bool released = false;
    for (int id = 0; id < 16; ++id) {
      int arrived = 0, expected_named = 0;
      bool any = false;
      for (const Warp& w : warps_)
        if (w.state == Warp::State::at_barrier && w.barrier == id) {
          arrived += std::popcount(w.live);
          any = true;
          expected_named = std::max(expected_named, barrier_count_[id]);
        }
      if (!any) continue;
      const int expected = expected_named > 0 ? expected_named : live_threads();
      if (arrived < expected) continue;
      for (Warp& w : warps_)
        if (w.state == Warp::State::at_barrier && w.barrier == id) w.state = Warp::State::ready;
      released = true;
      ++epoch_;
    }
    return released;
  }

  // Executes instructions of warp `w` until it blocks, exits or has run a quantum. Returns whether
  // it moved: false when it only spun on a wait that failed (loads, arithmetic and branches of a
  // spin loop change nothing another warp could see).
  bool run_warp(Warp& w) {
    bool effects = false;
    for (int executed = 0; executed < quantum; ++executed) {
      std::uint32_t active, pc;
      if (w.converged) {
        active = w.live;
        pc = w.pc;
      } else {
        pc = min_pc(w);
        active = 0;
        for_lanes(w.live, [&](int l) {
          if (w.lane_pc[l] == pc) active |= 1u << l;
        });
        if (active == w.live) {
          w.converged = true;
          w.pc = pc;
        }
      }
      if (pc >= p_.code.size()) {  // falling off the end is an exit
        exit_lanes(w, active);
        if (w.state == Warp::State::done) return true;
        continue;
      }
      const Instr& in = p_.code[pc];
      const Step step = execute(w, in, active);
      if (step == Step::waiting) return effects;
      effects = effects || has_effects(in.op);
      if (step == Step::blocked || w.state == Warp::State::done) return true;
    }
    return true;
  }

  // Whether an instruction can change what another warp sees or waits for.
  static bool has_effects(Op op) {
    switch (op) {
      case Op::st: case Op::cp_async: case Op::cp_async_commit: case Op::cp_async_wait: case Op::cp_async_wait_all:
      case Op::mbarrier_init: case Op::mbarrier_arrive: case Op::mbarrier_try_wait_parity: case Op::tma_load_2d:
      case Op::wgmma_mma: case Op::wgmma_commit: case Op::wgmma_wait: case Op::bar_sync: case Op::bar_warp_sync:
      case Op::exit: case Op::wmma_store:
        return true;
      default:
        return false;
    }
  }

  enum class Step { next, jumped, blocked, waiting };  // waiting: a wait failed, the warp yields

  void advance(Warp& w, std::uint32_t lanes) {
    if (w.converged) {
      ++w.pc;
    } else {
      for_lanes(lanes, [&](int l) { ++w.lane_pc[l]; });
    }
  }

  void diverge(Warp& w) {
    if (!w.converged) return;
    for (int l = 0; l < warp_size; ++l) w.lane_pc[l] = w.pc;
    w.converged = false;
  }

  void exit_lanes(Warp& w, std::uint32_t lanes) {
    w.live &= ~lanes;
    if (w.live == 0) w.state = Warp::State::done;
  }

  void count(const Instr& in, std::uint32_t lanes) {
    switch (in.cls) {
      case Class::fp32: ++metrics_.fp32; break;
      case Class::fp64: ++metrics_.fp64; break;
      case Class::integer: ++metrics_.integer; break;
      case Class::memory: ++metrics_.memory; break;
      case Class::control: ++metrics_.control; break;
      case Class::sync: ++metrics_.sync; break;
      case Class::tensor: ++metrics_.tensor; break;
      case Class::other: ++metrics_.other; break;
    }
    metrics_.thread_instructions += std::popcount(lanes);
  }

  // A collective (.aligned) instruction: every live lane of the warp must execute it together.
  void require_whole_warp(Warp& w, const Instr& in, std::uint32_t active) {
    ++w.sync_epoch;  // the warp's lanes meet here
    if (active != w.live) {
      const int missing = std::countr_zero(w.live & ~active);
      fail(w, in, missing,
           "a warp-collective instruction reached by only some of the warp's lanes (this lane is elsewhere)");
    }
  }

  Step execute(Warp& w, const Instr& in, std::uint32_t active) {
    std::uint32_t m = active;
    if (in.guard >= 0) {
      const std::uint64_t* g = w.slot(in.guard);
      std::uint32_t on = 0;
      for (int l = 0; l < warp_size; ++l) on |= static_cast<std::uint32_t>((g[l] & 1u) ^ (in.guard_negated ? 1u : 0u)) << l;
      m &= on;
    }
    count(in, m);
    switch (in.op) {
      case Op::bra: {
        if (m == 0) break;
        const auto target = static_cast<std::uint32_t>(in.imm);
        if (m == active && w.converged) {
          w.pc = target;
          return Step::jumped;
        }
        diverge(w);
        for_lanes(active, [&](int l) { w.lane_pc[l] = (m >> l & 1u) ? target : w.lane_pc[l] + 1; });
        return Step::jumped;
      }
      case Op::exit:
        if (m != 0) {
          if (m != active) diverge(w);
          exit_lanes(w, m);
          if (w.state == Warp::State::done) return Step::next;
          advance(w, active & ~m);
          return Step::jumped;
        }
        break;
      case Op::bar_sync: {
        if (m == 0) break;
        if (m != active) fail(w, in, std::countr_zero(active & ~m), "bar.sync reached by only some of the warp's lanes (its guard differs between them)");
        require_whole_warp(w, in, active);
        const int id = static_cast<int>(w.slot(in.src[0])[std::countr_zero(m)]);
        if (id < 0 || id >= 16) fail(w, in, std::countr_zero(m), "barrier " + std::to_string(id) + " (0..15 exist)");
        barrier_count_[id] = in.src.size() > 1 ? static_cast<int>(w.slot(in.src[1])[std::countr_zero(m)]) : 0;
        ++metrics_.barriers;
        advance(w, active);
        w.state = Warp::State::at_barrier;
        w.barrier = id;
        return Step::blocked;
      }
      case Op::mbarrier_try_wait_parity: {
        if (m == 0) break;
        bool all = true;
        try {
          all = try_wait(w, in, m);
        } catch (const Fault& f) {
          fail(w, in, std::countr_zero(m), f.what());
        }
        advance(w, active);
        if (!all) return Step::waiting;
        ++epoch_;  // the phase's arrivals happened before this wait returned
        return Step::next;
      }
      case Op::bar_warp_sync: {
        ++w.sync_epoch;
        const std::uint64_t* r = w.slot(in.src[0]);
        for_lanes(m, [&](int l) {
          const auto members = static_cast<std::uint32_t>(r[l]) & w.live;
          if ((members & ~active) != 0)
            fail(w, in, std::countr_zero(members & ~active),
                 "bar.warp.sync names a lane that is not at this instruction");
        });
        break;
      }
      default:
        if (m != 0) {
          try {
            compute(w, in, m);
          } catch (const Fault& f) {  // what a part of the simulator found, with where it happened
            fail(w, in, std::countr_zero(m), f.what());
          }
        }
        break;
    }
    advance(w, active);
    return Step::next;
  }

  // ---- memory -------------------------------------------------------------------------------

  std::byte* global_address(const Warp& w, const Instr& in, int lane, std::uint64_t address, std::size_t bytes) {
    for (const Region& r : launch_.regions)
      if (address >= r.begin && address + bytes <= r.end && address + bytes >= address)
        return reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(address));
    std::string near;
    for (const Region& r : launch_.regions)
      if (address + bytes > r.begin && address < r.end + 4096)
        near = " (" + std::to_string(static_cast<std::int64_t>(address - r.begin)) + " bytes from the start of " +
               r.name + ", which holds " + std::to_string(r.end - r.begin) + ")";
    fail(w, in, lane, "a global access of " + std::to_string(bytes) + " bytes outside every buffer of the launch" + near);
  }

  // The generic-address window of a state space; 0 for global memory, whose generic addresses are
  // the host's.
  static std::uint64_t window_of(Space space) {
    switch (space) {
      case Space::shared: return shared_window;
      case Space::param: return param_window;
      case Space::local: return local_window;
      default: return 0;
    }
  }
  static constexpr std::uint64_t window_bytes = 1ull << 32;

  struct Resolved {
    std::byte* host;
    Space space;  // generic resolved
  };

  // The host address of `bytes` at `address` in state space `space` (generic: by its window),
  // checked against that space's extent and for alignment (natural unless `align` is given).
  Resolved resolve(Warp& w, const Instr& in, int lane, Space space, std::uint64_t address, std::size_t bytes,
                   std::size_t align = 0) {
    if (align == 0) align = bytes;
    // Access sizes and alignments are powers of two: a mask, not a division, on every lane's access.
    if ((std::has_single_bit(align) ? address & (align - 1) : address % align) != 0)
      fail(w, in, lane, "a misaligned access: address " + hex(address) + " is not a multiple of " + std::to_string(align));
    if (space == Space::generic) {
      space = Space::global;
      for (const Space windowed : {Space::shared, Space::param, Space::local})
        if (address - window_of(windowed) < window_bytes) {
          space = windowed;
          address -= window_of(windowed);
        }
    }
    switch (space) {
      case Space::shared:
        if (address + bytes > shared_.size())
          fail(w, in, lane, "a shared-memory access at " + std::to_string(address) + " (+" + std::to_string(bytes) +
                                " bytes) beyond the CTA's " + std::to_string(shared_.size()) + " bytes");
        check_race(w, in, lane, address, bytes);
        return {shared_.data() + address, space};
      case Space::param:
        if (address + bytes > params_.size()) fail(w, in, lane, "a parameter access beyond the parameters");
        if (in.op == Op::st) fail(w, in, lane, "a store to kernel parameters");
        return {const_cast<std::byte*>(params_.data()) + address, space};
      case Space::local:
        if (address + bytes > p_.local_bytes) fail(w, in, lane, "a local-memory access beyond the thread's frame");
        return {w.local.data() + static_cast<std::size_t>(lane) * p_.local_bytes + address, space};
      case Space::global:
      case Space::generic: return {global_address(w, in, lane, address, bytes), Space::global};
      case Space::constant: break;
    }
    fail(w, in, lane, "constant memory is not simulated");
  }

  // The race checker. A thread's shared-memory read must not find a word that an asynchronous
  // copy has still in flight (a missing cp.async wait or mbarrier wait), nor one another thread
  // wrote since the last barrier (a missing __syncthreads; within a warp, since the last
  // __syncwarp or warp-collective instruction). A cp.async marks its destination in flight.
  void check_race(Warp& w, const Instr& in, int lane, std::uint64_t address, std::size_t bytes) {
    const bool read = in.op == Op::ld || in.op == Op::ldmatrix || in.op == Op::wmma_load;
    const bool write = in.op == Op::st || in.op == Op::wmma_store;
    const std::int32_t thread = w.index * warp_size + lane;
    for (std::uint64_t i = address / 4; i <= (address + bytes - 1) / 4; ++i) {
      WordState& word = words_[i];
      if (in.op == Op::cp_async) {
        ++word.in_flight;
        continue;
      }
      if ((read || write) && word.in_flight > 0)
        fail(w, in, lane, std::string(read ? "reads" : "writes") + " shared memory at " + std::to_string(i * 4) +
                              " while an asynchronous copy to it is in flight (a missing cp.async.wait_group or "
                              "mbarrier wait?)");
      if (read && word.writer >= 0 && word.writer != thread && word.epoch == epoch_ &&
          (word.writer / warp_size != w.index || word.warp_epoch == w.sync_epoch))
        fail(w, in, lane, "reads shared memory at " + std::to_string(i * 4) + " that thread " +
                              std::to_string(word.writer) + " wrote since the last barrier (a missing __syncthreads?)");
      if (write) word = {.writer = thread, .epoch = epoch_, .warp_epoch = w.sync_epoch, .in_flight = 0};
    }
  }

  // An asynchronous copy to [address, address + bytes) has landed: written by `thread` as far as
  // the checker is concerned (-1: ordered by its mbarrier, whose wait synchronises).
  void landed(std::uint64_t address, std::size_t bytes, std::int32_t thread, std::uint32_t warp_epoch) {
    for (std::uint64_t i = address / 4; i <= (address + bytes - 1) / 4; ++i)
      words_[i] = {.writer = thread, .epoch = epoch_, .warp_epoch = warp_epoch,
                   .in_flight = static_cast<std::uint16_t>(words_[i].in_flight > 0 ? words_[i].in_flight - 1 : 0)};
  }

  static std::string hex(std::uint64_t v) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
    return text;
  }

  void load_store(Warp& w, const Instr& in, std::uint32_t m) {
    const std::size_t element = static_cast<std::size_t>(std::max(1, type_bits(in.type) / 8));
    const std::size_t bytes = element * static_cast<std::size_t>(in.vec);
    const std::uint64_t* base = in.base >= 0 ? w.slot(in.base) : nullptr;
    const bool load = in.op == Op::ld;
    Space space_seen = in.space;
    std::uint64_t addresses[warp_size] = {};
    for_lanes(m, [&](int l) {
      const std::uint64_t address = (base != nullptr ? base[l] : 0) + static_cast<std::uint64_t>(in.offset);
      const Resolved r = resolve(w, in, l, in.space, address, bytes);
      std::byte* p = r.host;
      space_seen = r.space;
      addresses[l] = reinterpret_cast<std::uintptr_t>(p);
      for (int e = 0; e < in.vec; ++e) {
        std::byte* q = p + static_cast<std::size_t>(e) * element;
        if (load) {
          const int d = in.dst[static_cast<std::size_t>(e)];
          if (d < 0) continue;
          std::uint64_t v = 0;
          std::memcpy(&v, q, element);
          if (is_signed(in.type)) v = static_cast<std::uint64_t>(sign_extend(v, static_cast<int>(element * 8)));
          w.slot(d)[l] = v;
        } else {
          const std::uint64_t v = w.slot(in.src[static_cast<std::size_t>(e)])[l];
          std::memcpy(q, &v, element);
        }
      }
    });
    count_traffic(space_seen, load, addresses, m, bytes);
  }

  // The request's sectors (global) or wavefronts (shared); `addresses` are host addresses, of
  // which shared ones are turned back into offsets (banks follow the offset).
  void count_traffic(Space space, bool load, std::uint64_t (&addresses)[warp_size], std::uint32_t m, std::size_t bytes) {
    const int lanes = std::popcount(m);
    if (space == Space::global) {
      (load ? metrics_.global_load_requests : metrics_.global_store_requests) += 1;
      (load ? metrics_.global_load_sectors : metrics_.global_store_sectors) +=
          global_sectors(addresses, m, static_cast<unsigned>(bytes));
      metrics_.global_bytes_requested += static_cast<std::int64_t>(bytes) * lanes;
      touched_.record(addresses, m, static_cast<unsigned>(bytes));
    } else if (space == Space::shared) {
      const auto origin = reinterpret_cast<std::uintptr_t>(shared_.data());
      for_lanes(m, [&](int l) { addresses[l] -= origin; });
      ++metrics_.shared_requests;
      metrics_.shared_wavefronts += shared_wavefronts(addresses, m, static_cast<unsigned>(bytes));
      metrics_.shared_bytes += static_cast<std::int64_t>(bytes) * lanes;
    }
  }

  // ---- cp.async -----------------------------------------------------------------------------

  void cp_async(Warp& w, const Instr& in, std::uint32_t m) {
    const std::uint64_t* dst = in.base >= 0 ? w.slot(in.base) : nullptr;
    const std::uint64_t* src = in.src[0] >= 0 ? w.slot(in.src[0]) : nullptr;
    const std::uint64_t* size = in.src[1] >= 0 ? w.slot(in.src[1]) : nullptr;
    std::uint64_t sources[warp_size] = {}, destinations[warp_size] = {};
    std::uint32_t reading = 0;
    for_lanes(m, [&](int l) {
      const std::uint64_t d = (dst != nullptr ? dst[l] : 0) + static_cast<std::uint64_t>(in.offset);
      const std::uint64_t s = (src != nullptr ? src[l] : 0) + static_cast<std::uint64_t>(in.imm);
      const int source_bytes = size != nullptr ? static_cast<int>(static_cast<std::uint32_t>(size[l])) : in.vec;
      if (source_bytes < 0 || source_bytes > in.vec)
        fail(w, in, l, "a source size of " + std::to_string(source_bytes) + " bytes for a copy of " + std::to_string(in.vec));
      resolve(w, in, l, Space::shared, d, static_cast<std::size_t>(in.vec));  // checks range and alignment
      const std::byte* source = nullptr;
      if (source_bytes > 0) {
        if (s % static_cast<std::uint64_t>(in.vec) != 0)
          fail(w, in, l, "a misaligned cp.async source " + hex(s) + " (copies of " + std::to_string(in.vec) + " bytes)");
        source = global_address(w, in, l, s, static_cast<std::size_t>(source_bytes));
      }
      w.copies.push_back({.lane = l, .group = w.committed[l], .shared_address = d, .source = source,
                          .bytes = in.vec, .source_bytes = source_bytes});
      metrics_.cp_async_bytes += in.vec;
      sources[l] = s;
      if (source_bytes > 0) reading |= 1u << l;
      destinations[l] = d;
    });
    if (reading != 0) {
      ++metrics_.global_load_requests;
      metrics_.global_load_sectors += global_sectors(sources, reading, static_cast<unsigned>(in.vec));
      metrics_.global_bytes_requested += static_cast<std::int64_t>(in.vec) * std::popcount(reading);
      touched_.record(sources, reading, static_cast<unsigned>(in.vec));
    }
    ++metrics_.shared_requests;
    metrics_.shared_wavefronts += shared_wavefronts(destinations, m, static_cast<unsigned>(in.vec));
    metrics_.shared_bytes += static_cast<std::int64_t>(in.vec) * std::popcount(m);
  }

  // Performs the lanes' copies of groups older than the newest `keep` committed ones.
  void cp_async_wait(Warp& w, std::uint32_t m, std::int64_t keep) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < w.copies.size(); ++i) {
      const PendingCopy& c = w.copies[i];
      if ((m >> c.lane & 1u) && c.group < w.committed[c.lane] - keep) {
        std::byte* d = shared_.data() + c.shared_address;
        if (c.source_bytes > 0) std::memcpy(d, c.source, static_cast<std::size_t>(c.source_bytes));
        std::memset(d + c.source_bytes, 0, static_cast<std::size_t>(c.bytes - c.source_bytes));
        landed(c.shared_address, static_cast<std::size_t>(c.bytes), w.index * warp_size + c.lane, w.sync_epoch);
      } else {
        w.copies[kept++] = c;
      }
    }
    w.copies.resize(kept);
  }

  // ---- arithmetic ---------------------------------------------------------------------------

  void compute(Warp& w, const Instr& in, std::uint32_t m) {
    const Type t = in.type;
    const int bits = type_bits(t);
    const std::uint64_t mask = width_mask(bits);
    std::uint64_t* d = in.dst.empty() || in.dst[0] < 0 ? nullptr : w.slot(in.dst[0]);
    const std::uint64_t* a = in.src.size() > 0 && in.src[0] >= 0 ? w.slot(in.src[0]) : nullptr;
    const std::uint64_t* b = in.src.size() > 1 && in.src[1] >= 0 ? w.slot(in.src[1]) : nullptr;
    const std::uint64_t* c = in.src.size() > 2 && in.src[2] >= 0 ? w.slot(in.src[2]) : nullptr;
    const int lanes = std::popcount(m);

    switch (in.op) {
      case Op::mov:
        for_lanes(m, [&](int l) { d[l] = a[l] & (t == Type::pred ? 1u : mask); });
        return;
      case Op::pack: {  // {lo, ..., hi}: element i at bits [i*w, (i+1)*w)
        const int n = static_cast<int>(in.src.size());
        const int piece = bits / n;
        for_lanes(m, [&](int l) {
          std::uint64_t v = 0;
          for (int i = 0; i < n; ++i) v |= (w.slot(in.src[static_cast<std::size_t>(i)])[l] & width_mask(piece)) << (i * piece);
          d[l] = v;
        });
        return;
      }
      case Op::unpack: {
        const int n = static_cast<int>(in.dst.size());
        const int piece = bits / n;
        for_lanes(m, [&](int l) {
          const std::uint64_t v = a[l];
          for (int i = 0; i < n; ++i)
            if (in.dst[static_cast<std::size_t>(i)] >= 0)
              w.slot(in.dst[static_cast<std::size_t>(i)])[l] = (v >> (i * piece)) & width_mask(piece);
        });
        return;
      }
      case Op::add:
        for_lanes(m, [&](int l) { d[l] = (a[l] + b[l]) & mask; });
        return;
      case Op::sub:
        for_lanes(m, [&](int l) { d[l] = (a[l] - b[l]) & mask; });
        return;
      case Op::mul_lo:
        for_lanes(m, [&](int l) { d[l] = (a[l] * b[l]) & mask; });
        return;
      case Op::mul_hi:
      case Op::mad_hi:
        for_lanes(m, [&](int l) {
          std::uint64_t hi;
          if (bits == 64) {
            hi = is_signed(t) ? static_cast<std::uint64_t>((static_cast<int128>(static_cast<std::int64_t>(a[l])) *
                                                            static_cast<std::int64_t>(b[l])) >> 64)
                              : static_cast<std::uint64_t>((static_cast<uint128>(a[l]) * b[l]) >> 64);
          } else {
            const std::int64_t x = int_value(a[l], t), y = int_value(b[l], t);
            hi = static_cast<std::uint64_t>((x * y) >> bits);
          }
          d[l] = (hi + (in.op == Op::mad_hi ? c[l] : 0)) & mask;
        });
        return;
      case Op::mul_wide:
      case Op::mad_wide:
        for_lanes(m, [&](int l) {
          const std::int64_t x = int_value(a[l], t), y = int_value(b[l], t);
          const auto product = static_cast<std::uint64_t>(x * y);
          d[l] = (product + (in.op == Op::mad_wide ? c[l] : 0)) & width_mask(2 * bits);
        });
        return;
      case Op::mad_lo:
        for_lanes(m, [&](int l) { d[l] = (a[l] * b[l] + c[l]) & mask; });
        return;
      case Op::div:
      case Op::rem:
        for_lanes(m, [&](int l) {
          const std::int64_t x = int_value(a[l], t), y = int_value(b[l], t);
          std::uint64_t r;
          if (y == 0) {
            r = in.op == Op::div ? mask : static_cast<std::uint64_t>(x);  // what the hardware gives
          } else if (is_signed(t)) {
            if (bits == 64 && x == std::numeric_limits<std::int64_t>::min() && y == -1)
              r = in.op == Op::div ? static_cast<std::uint64_t>(x) : 0;
            else
              r = static_cast<std::uint64_t>(in.op == Op::div ? x / y : x % y);
          } else {
            const auto ux = static_cast<std::uint64_t>(x), uy = static_cast<std::uint64_t>(y);
            r = in.op == Op::div ? ux / uy : ux % uy;
          }
          d[l] = r & mask;
        });
        return;
      case Op::min:
      case Op::max:
        for_lanes(m, [&](int l) {
          const std::int64_t x = int_value(a[l], t), y = int_value(b[l], t);
          bool first;
          if (is_signed(t)) first = in.op == Op::min ? x <= y : x >= y;
          else
            first = in.op == Op::min ? static_cast<std::uint64_t>(x) <= static_cast<std::uint64_t>(y)
                                     : static_cast<std::uint64_t>(x) >= static_cast<std::uint64_t>(y);
          d[l] = (first ? a[l] : b[l]) & mask;
        });
        return;
      case Op::and_:
        for_lanes(m, [&](int l) { d[l] = a[l] & b[l] & (t == Type::pred ? 1u : mask); });
        return;
      case Op::or_:
        for_lanes(m, [&](int l) { d[l] = (a[l] | b[l]) & (t == Type::pred ? 1u : mask); });
        return;
      case Op::xor_:
        for_lanes(m, [&](int l) { d[l] = (a[l] ^ b[l]) & (t == Type::pred ? 1u : mask); });
        return;
      case Op::not_:
        for_lanes(m, [&](int l) { d[l] = ~a[l] & (t == Type::pred ? 1u : mask); });
        return;
      case Op::neg:
        if (t == Type::f32) for_lanes(m, [&](int l) { d[l] = (a[l] ^ 0x80000000u) & mask; });
        else if (t == Type::f64) for_lanes(m, [&](int l) { d[l] = a[l] ^ (1ull << 63); });
        else for_lanes(m, [&](int l) { d[l] = (0 - a[l]) & mask; });
        return;
      case Op::abs:
        for_lanes(m, [&](int l) {
          const std::int64_t x = int_value(a[l], t);
          d[l] = static_cast<std::uint64_t>(x < 0 ? -x : x) & mask;
        });
        return;
      case Op::shl:
        for_lanes(m, [&](int l) {
          const std::uint64_t s = b[l] & 0xffffffffu;
          d[l] = s >= static_cast<std::uint64_t>(bits) ? 0 : (a[l] << s) & mask;
        });
        return;
      case Op::shr:
        for_lanes(m, [&](int l) {
          const std::uint64_t s = std::min<std::uint64_t>(b[l] & 0xffffffffu, static_cast<std::uint64_t>(bits));
          if (is_signed(t)) {
            const std::int64_t x = int_value(a[l], t);
            d[l] = static_cast<std::uint64_t>(s >= 64 ? (x < 0 ? -1 : 0) : x >> s) & mask;
          } else {
            d[l] = s >= static_cast<std::uint64_t>(bits) ? 0 : ((a[l] & mask) >> s);
          }
        });
        return;
      case Op::bfe:  // bits [pos, pos+len) of a; beyond them the sign bit (signed types) or 0 ("bfe")
        for_lanes(m, [&](int l) {
          const int msb = bits - 1;
          const auto pos = static_cast<int>(b[l] & 0xff), len = static_cast<int>(c[l] & 0xff);
          const std::uint64_t sbit =
              is_signed(t) && len > 0 ? (a[l] >> std::min(pos + len - 1, msb)) & 1u : 0;
          std::uint64_t result = 0;
          for (int i = 0; i <= msb; ++i)
            result |= (i < len && pos + i <= msb ? (a[l] >> (pos + i)) & 1u : sbit) << i;
          d[l] = result;
        });
        return;
      case Op::bfi:  // d = b with bits [pos, pos+len) replaced by the low len bits of a ("bfi")
        for_lanes(m, [&](int l) {
          const std::uint64_t pos = c[l] & 0xff, len = w.slot(in.src[3])[l] & 0xff;
          std::uint64_t result = b[l] & mask;
          if (len > 0 && pos < static_cast<std::uint64_t>(bits)) {
            const std::uint64_t field = (len >= 64 ? ~0ull : width_mask(static_cast<int>(len))) << pos;
            result = (result & ~field) | ((a[l] << pos) & field);
          }
          d[l] = result & mask;
        });
        return;
      case Op::prmt:  // byte i of d: selector nibble i of c picks byte (sel & 7) of {b, a} (a: 0-3, b: 4-7);
                      // with the nibble's msb set, that byte's sign bit fills the whole byte ("prmt")
        for_lanes(m, [&](int l) {
          const std::uint64_t source = (b[l] & 0xffffffffu) << 32 | (a[l] & 0xffffffffu);
          std::uint64_t result = 0;
          for (int i = 0; i < 4; ++i) {
            const auto select = static_cast<unsigned>(c[l] >> (4 * i)) & 0xfu;
            std::uint64_t byte = source >> (8 * (select & 7u)) & 0xffu;
            if ((select & 8u) != 0) byte = (byte & 0x80u) != 0 ? 0xffu : 0;
            result |= byte << (8 * i);
          }
          d[l] = result;
        });
        return;
      case Op::setp:
        for_lanes(m, [&](int l) { d[l] = compare(in, a[l], b[l]) ? 1 : 0; });
        return;
      case Op::selp:
        for_lanes(m, [&](int l) { d[l] = ((c[l] & 1u) != 0 ? a[l] : b[l]) & mask; });
        return;
      case Op::fma:
        if (t == Type::f32)
          fma_lanes_f32(d, a, b, c, m);
        else
          fma_lanes_f64(d, a, b, c, m);
        metrics_.fma_flops += 2 * lanes;
        return;
      case Op::mul_f:
      case Op::add_f:
      case Op::sub_f:
        if (t == Type::f32)
          for_lanes(m, [&](int l) {
            const float x = as<float>(a[l]), y = as<float>(b[l]);
            d[l] = bits_of(in.op == Op::mul_f ? x * y : in.op == Op::add_f ? x + y : x - y);
          });
        else
          for_lanes(m, [&](int l) {
            const double x = as<double>(a[l]), y = as<double>(b[l]);
            d[l] = bits_of(in.op == Op::mul_f ? x * y : in.op == Op::add_f ? x + y : x - y);
          });
        metrics_.fma_flops += lanes;
        return;
      case Op::cvt:
        for_lanes(m, [&](int l) { d[l] = convert(w, in, l, a[l]); });
        return;
      case Op::cvta_to:
      case Op::cvta_from: {
        const std::uint64_t window = window_of(in.space);
        for_lanes(m, [&](int l) {
          if (in.op == Op::cvta_from) {
            d[l] = (a[l] + window) & mask;
          } else if (window != 0 && a[l] - window >= window_bytes) {
            fail(w, in, l, "cvta.to of " + hex(a[l]) + ", which is not a generic address of that state space");
          } else {
            d[l] = (a[l] - window) & mask;
          }
        });
        return;
      }
      case Op::ld:
      case Op::st: load_store(w, in, m); return;
      case Op::cp_async: cp_async(w, in, m); return;
      case Op::cp_async_commit:
        for_lanes(m, [&](int l) { ++w.committed[l]; });
        return;
      case Op::cp_async_wait: cp_async_wait(w, m, in.imm); return;
      case Op::cp_async_wait_all:
        for_lanes(m, [&](int l) { ++w.committed[l]; });
        cp_async_wait(w, m, 0);
        return;
      case Op::ldmatrix: ldmatrix(w, in, m); return;
      case Op::mma_sync: mma(w, in, m); return;
      case Op::wmma_load:
      case Op::wmma_store: wmma_memory(w, in, m); return;
      case Op::wmma_mma: wmma_multiply(w, in, m); return;
      case Op::mbarrier_init:
        for_lanes(m, [&](int l) { barrier(w, in, l).init(static_cast<std::uint32_t>(w.slot(in.src[0])[l])); });
        return;
      case Op::mbarrier_arrive:
        for_lanes(m, [&](int l) {
          Mbarrier bar = barrier(w, in, l);
          const std::uint64_t token =
              in.src.empty() ? bar.arrive() : bar.arrive_expect_tx(static_cast<std::uint32_t>(w.slot(in.src[0])[l]));
          if (in.dst[0] >= 0) w.slot(in.dst[0])[l] = token;
        });
        return;
      case Op::tma_load_2d: tma_load(w, in, m); return;
      case Op::wgmma_mma: wgmma(w, in, m); return;
      case Op::wgmma_commit:
        require_whole_warp(w, in, m);
        ++w.wgmma_committed;
        return;
      case Op::wgmma_wait:
        require_whole_warp(w, in, m);
        wgmma_wait(w, in.imm);
        return;
      case Op::no_effect: return;
      default: fail(w, in, std::countr_zero(m), "the PTX simulator cannot execute `" + in.modifiers + "` yet");
    }
  }

  // ---- warp-level matrix instructions (warp_matrix.hpp) ----------------------------------------

  static WarpMatrixType matrix_type(Type t) {
    return t == Type::bf16 ? WarpMatrixType::bf16 : t == Type::f32 ? WarpMatrixType::f32 : WarpMatrixType::f16;
  }

  void ldmatrix(Warp& w, const Instr& in, std::uint32_t m) {
    require_whole_warp(w, in, m);
    const int lanes = ldmatrix_address_lanes(in.vec);
    const std::uint64_t* base = in.base >= 0 ? w.slot(in.base) : nullptr;
    std::uint16_t rows[4][8][8] = {};
    std::uint64_t addresses[warp_size] = {};
    for (int l = 0; l < lanes; ++l) {
      const std::uint64_t address = (base != nullptr ? base[l] : 0) + static_cast<std::uint64_t>(in.offset);
      const std::byte* p = resolve(w, in, l, Space::shared, address, ldmatrix_row_bytes).host;
      std::memcpy(rows[l / 8][l % 8], p, ldmatrix_row_bytes);
      addresses[l] = address;
    }
    std::uint32_t out[warp_size][4] = {};
    ldmatrix_distribute(in.vec, in.trans, rows, out);
    for_lanes(m, [&](int l) {
      for (int r = 0; r < in.vec; ++r) w.slot(in.dst[static_cast<std::size_t>(r)])[l] = out[l][r];
    });
    ++metrics_.shared_requests;
    metrics_.shared_wavefronts += ldmatrix_wavefronts(addresses, in.vec);
    metrics_.shared_bytes += static_cast<std::int64_t>(ldmatrix_row_bytes) * lanes;
  }

  void mma(Warp& w, const Instr& in, std::uint32_t m) {
    require_whole_warp(w, in, m);
    if (m != ~0u) fail(w, in, std::countr_zero(~m), "mma.sync needs all 32 lanes of the warp");
    std::uint32_t a[warp_size][4], b[warp_size][2], c[warp_size][4], d[warp_size][4];
    for (int l = 0; l < warp_size; ++l) {
      for (int i = 0; i < 4; ++i) a[l][i] = static_cast<std::uint32_t>(w.slot(in.src[static_cast<std::size_t>(i)])[l]);
      for (int i = 0; i < 2; ++i) b[l][i] = static_cast<std::uint32_t>(w.slot(in.src[static_cast<std::size_t>(4 + i)])[l]);
      for (int i = 0; i < 4; ++i) c[l][i] = static_cast<std::uint32_t>(w.slot(in.src[static_cast<std::size_t>(6 + i)])[l]);
    }
    const WarpMatrixType t = matrix_type(in.type);
    mma_m16n8k16(t, t, a, b, c, d);
    for (int l = 0; l < warp_size; ++l)
      for (int i = 0; i < 4; ++i) w.slot(in.dst[static_cast<std::size_t>(i)])[l] = d[l][i];
    metrics_.tensor_flops += 2 * 16 * 8 * 16;
  }

  // wmma.load / wmma.store: each lane reads or writes the elements its fragment slots hold.
  void wmma_memory(Warp& w, const Instr& in, std::uint32_t m) {
    require_whole_warp(w, in, m);
    const bool load = in.op == Op::wmma_load;
    const WmmaMatrix matrix = in.matrix == 0 ? WmmaMatrix::a : in.matrix == 1 ? WmmaMatrix::b : WmmaMatrix::accumulator;
    const WarpMatrixType type = matrix_type(in.type);
    const WmmaLayout layout = in.a_col ? WmmaLayout::col : WmmaLayout::row;
    const std::vector<int>& registers = load ? in.dst : in.src;  // store: the stride follows them
    const int count = wmma_register_count(matrix, type);
    if (static_cast<int>(registers.size()) < count) fail(w, in, 0, "a fragment with too few registers");
    const int per_register = wmma_elements_per_register(type);
    const std::size_t element = type == WarpMatrixType::f32 ? 4 : 2;
    const std::uint64_t* base = in.base >= 0 ? w.slot(in.base) : nullptr;
    const std::uint64_t* stride = w.slot(in.src.back());
    Space space_seen = in.space;
    for_lanes(m, [&](int l) {
      const std::uint64_t start = (base != nullptr ? base[l] : 0) + static_cast<std::uint64_t>(in.offset);
      std::uint64_t values[wmma_max_registers] = {};
      if (!load)
        for (int r = 0; r < count; ++r) values[r] = w.slot(registers[static_cast<std::size_t>(r)])[l];
      for (int slot = 0; slot < count * per_register; ++slot) {
        const WarpMatrixCoord e = wmma_element(matrix, type, layout, l, slot);
        const std::int64_t offset =
            wmma_element_offset(layout, e.row, e.col, static_cast<std::int64_t>(static_cast<std::uint32_t>(stride[l])));
        const Resolved at = resolve(w, in, l, in.space, start + static_cast<std::uint64_t>(offset) * element, element);
        std::byte* p = at.host;
        space_seen = at.space;
        const int shift = (slot % per_register) * 16;
        const int r = slot / per_register;
        if (load) {
          std::uint64_t v = 0;
          std::memcpy(&v, p, element);
          values[r] |= v << shift;
        } else {
          const std::uint64_t v = values[r] >> shift;
          std::memcpy(p, &v, element);
        }
      }
      if (load)
        for (int r = 0; r < count; ++r) w.slot(registers[static_cast<std::size_t>(r)])[l] = values[r];
    });
    // One request of the whole tile: 16 rows of 16 elements.
    if (space_seen == Space::shared) {
      ++metrics_.shared_requests;
      metrics_.shared_bytes += static_cast<std::int64_t>(element) * 256;
    } else {
      (load ? metrics_.global_load_requests : metrics_.global_store_requests) += 1;
      metrics_.global_bytes_requested += static_cast<std::int64_t>(element) * 256;
    }
  }

  void wmma_multiply(Warp& w, const Instr& in, std::uint32_t m) {
    require_whole_warp(w, in, m);
    if (m != ~0u) fail(w, in, std::countr_zero(~m), "wmma.mma needs all 32 lanes of the warp");
    const auto n = static_cast<std::size_t>(in.imm);
    std::uint32_t a[warp_size][wmma_max_registers] = {}, b[warp_size][wmma_max_registers] = {},
                  c[warp_size][wmma_max_registers] = {}, d[warp_size][wmma_max_registers] = {};
    for (int l = 0; l < warp_size; ++l) {
      for (std::size_t i = 0; i < n; ++i) {
        a[l][i] = static_cast<std::uint32_t>(w.slot(in.src[i])[l]);
        b[l][i] = static_cast<std::uint32_t>(w.slot(in.src[n + i])[l]);
      }
      for (std::size_t i = 0; i < 8; ++i) c[l][i] = static_cast<std::uint32_t>(w.slot(in.src[2 * n + i])[l]);
    }
    const WarpMatrixType t = matrix_type(in.type);
    wmma_mma(t, t, in.a_col ? WmmaLayout::col : WmmaLayout::row, in.b_col ? WmmaLayout::col : WmmaLayout::row, a, b,
             c, d);
    for (int l = 0; l < warp_size; ++l)
      for (std::size_t i = 0; i < 8; ++i) w.slot(in.dst[i])[l] = d[l][i];
    metrics_.tensor_flops += 2 * 16 * 16 * 16;
  }

  // ---- Hopper: mbarriers, TMA, wgmma (hopper.hpp) -------------------------------------------

  std::uint64_t address_of(const Warp& w, std::pair<int, std::int64_t> operand, int lane) {
    const auto [base, offset] = operand;
    return (base >= 0 ? w.regs[static_cast<std::size_t>(base) * warp_size + static_cast<std::size_t>(lane)] : 0) +
           static_cast<std::uint64_t>(offset);
  }

  // The mbarrier an instruction's (first) address names, for lane `lane`.
  Mbarrier barrier(Warp& w, const Instr& in, int lane) {
    const std::uint64_t address = address_of(w, {in.base, in.offset}, lane);
    if (address >= shared_.size()) fail(w, in, lane, "an mbarrier at " + hex(address) + ", outside shared memory");
    return Mbarrier(shared_, static_cast<std::uint32_t>(address));
  }

  // try_wait.parity for each lane; true when every lane's phase has completed. A barrier whose
  // arrivals are all in completes its TMA loads first: their data lands now, not before.
  bool try_wait(Warp& w, const Instr& in, std::uint32_t m) {
    bool all = true;
    for_lanes(m, [&](int l) {
      Mbarrier b = barrier(w, in, l);
      const auto address = static_cast<std::uint32_t>(address_of(w, {in.base, in.offset}, l));
      if (b.state().pending == 0) complete_tmas(address, b);
      const bool done = b.try_wait_parity(static_cast<std::uint32_t>(w.slot(in.src[0])[l] & 1u));
      w.slot(in.dst[0])[l] = done ? 1 : 0;
      all = all && done;
    });
    return all;
  }

  void complete_tmas(std::uint32_t address, Mbarrier& b) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < tmas_.size(); ++i) {
      PendingTma& t = tmas_[i];
      if (t.barrier != address) {
        if (kept != i) tmas_[kept] = std::move(t);
        ++kept;
        continue;
      }
      std::memcpy(shared_.data() + t.dst, t.data.data(), t.data.size());
      landed(t.dst, t.data.size(), -1, 0);
      b.complete_tx(static_cast<std::uint32_t>(t.data.size()));
    }
    tmas_.resize(kept);
  }

  // cp.async.bulk.tensor.2d: the box is read now (the sanitizer checks it at this instruction)
  // and held until its barrier's phase completes.
  void tma_load(Warp& w, const Instr& in, std::uint32_t m) {
    for_lanes(m, [&](int l) {
      const std::uint64_t map_address = address_of(w, in.addresses[0], l);
      const std::byte* map_bytes = resolve(w, in, l, Space::generic, map_address, sizeof(TensorMap), 64).host;
      const TiledTensorMap map = decode_tensor_map(std::span<const std::byte, sizeof(TensorMap)>(map_bytes, sizeof(TensorMap)));
      const auto dst = static_cast<std::uint32_t>(address_of(w, {in.base, in.offset}, l));
      const auto c0 = static_cast<std::int32_t>(w.slot(in.src[0])[l]), c1 = static_cast<std::int32_t>(w.slot(in.src[1])[l]);
      const auto barrier_address = static_cast<std::uint32_t>(address_of(w, in.addresses[1], l));
      barrier(w, in, l);  // checks the barrier's address now
      // The copy's checks and swizzle are tma_load_2d's; what it writes is taken back out of
      // shared memory until the phase completes.
      const std::size_t bytes = map.box_bytes();
      if (dst + bytes > shared_.size() || dst + bytes < dst)
        fail(w, in, l, "a TMA box of " + std::to_string(bytes) + " bytes at " + std::to_string(dst) + " beyond the CTA's " +
                           std::to_string(shared_.size()) + " bytes of shared memory");
      std::vector<std::byte> before(shared_.begin() + dst, shared_.begin() + dst + static_cast<std::ptrdiff_t>(bytes));
      tma_load_2d(map, c0, c1, shared_, dst, [&](std::uint64_t address, void* out, std::size_t n) {
        std::memcpy(out, global_address(w, in, l, address, n), n);
        touched_.record(address, n);
      });
      PendingTma pending{.barrier = barrier_address, .dst = dst,
                         .data = std::vector<std::byte>(shared_.begin() + dst, shared_.begin() + dst + static_cast<std::ptrdiff_t>(bytes))};
      std::memcpy(shared_.data() + dst, before.data(), bytes);
      for (std::uint64_t i = dst / 4; i <= (dst + bytes - 1) / 4; ++i) ++words_[i].in_flight;
      tmas_.push_back(std::move(pending));
      metrics_.tma_bytes += static_cast<std::int64_t>(bytes);
    });
  }

  // The value of register `slot` as a wgmma sees it: its newest pending result, else the register.
  std::uint64_t accumulator(const Warp& w, int slot, int lane) const {
    const int pending = w.latest[static_cast<std::size_t>(slot)];
    return pending >= 0 ? w.accumulators[static_cast<std::size_t>(pending)].values[lane]
                        : w.regs[static_cast<std::size_t>(slot) * warp_size + static_cast<std::size_t>(lane)];
  }

  // wgmma.mma_async for this warp's quarter of the warpgroup (its 16 rows of D): the result stays
  // pending until the wait_group that covers it.
  void wgmma(Warp& w, const Instr& in, std::uint32_t m) {
    require_whole_warp(w, in, m);
    if (m != ~0u) fail(w, in, std::countr_zero(~m), "wgmma.mma_async needs all 32 lanes of the warp");
    auto uniform = [&](int slot) {
      const std::uint64_t* r = w.slot(slot);
      for (int l = 1; l < warp_size; ++l)
        if (r[l] != r[0]) fail(w, in, l, "a wgmma operand that differs between the lanes of the warp");
      return r[0];
    };
    Wgmma op;
    op.n = static_cast<std::uint32_t>(in.wgmma_n);
    op.a_type = op.b_type = in.type == Type::bf16 ? WgmmaType::bf16 : WgmmaType::f16;
    op.a_desc = uniform(in.src[0]);
    op.b_desc = uniform(in.src[1]);
    op.scale_d = uniform(in.src[2]) != 0;
    op.scale_a = in.scale_a;
    op.scale_b = in.scale_b;
    op.trans_a = in.trans_a;
    op.trans_b = in.trans_b;
    const std::size_t regs = in.dst.size();
    const std::size_t first = static_cast<std::size_t>(w.index % 4) * warp_size;  // this warp in its warpgroup
    std::vector<float> d(128 * regs, 0.0f);
    for (int l = 0; l < warp_size; ++l)
      for (std::size_t r = 0; r < regs; ++r)
        d[(first + static_cast<std::size_t>(l)) * regs + r] = as<float>(accumulator(w, in.dst[r], l));
    wgmma_mma_async(op, shared_, d, static_cast<std::uint32_t>(first), warp_size);
    for (std::size_t r = 0; r < regs; ++r) {
      Warp::PendingAccumulator pending{.group = w.wgmma_committed, .slot = in.dst[r], .values = {}};
      for (int l = 0; l < warp_size; ++l) pending.values[l] = bits_of(d[(first + static_cast<std::size_t>(l)) * regs + r]);
      w.latest[static_cast<std::size_t>(in.dst[r])] = static_cast<int>(w.accumulators.size());
      w.accumulators.push_back(pending);
    }
    metrics_.tensor_flops += 2 * 16 * static_cast<std::int64_t>(op.n) * 16;
  }

  // wgmma.wait_group N: the results of all but the newest N committed groups reach their registers.
  void wgmma_wait(Warp& w, std::int64_t keep) {
    std::vector<Warp::PendingAccumulator> kept;
    for (const auto& a : w.accumulators) {
      if (a.group < w.wgmma_committed - keep)
        std::copy(std::begin(a.values), std::end(a.values), w.slot(a.slot));
      else
        kept.push_back(a);
    }
    w.accumulators = std::move(kept);
    std::fill(w.latest.begin(), w.latest.end(), -1);
    for (std::size_t i = 0; i < w.accumulators.size(); ++i) w.latest[static_cast<std::size_t>(w.accumulators[i].slot)] = static_cast<int>(i);
  }

  bool compare(const Instr& in, std::uint64_t x, std::uint64_t y) const {
    const Type t = in.type;
    if (is_float(t)) {
      const double a = float_value(x, t), b = float_value(y, t);
      const bool unordered = std::isnan(a) || std::isnan(b);
      // eq..ge are false and their u-variants (equ..geu, 8 on) true when an operand is NaN.
      if (in.cmp < 8) return !unordered && ordered(in.cmp, a, b);
      if (in.cmp < 16) return unordered || ordered(static_cast<std::uint8_t>(in.cmp - 8), a, b);
      return in.cmp == 16 ? !unordered : unordered;  // num, nan
    }
    if (is_signed(t)) return ordered(in.cmp, int_value(x, t), int_value(y, t));
    const std::uint64_t mask = width_mask(type_bits(t));
    return ordered(in.cmp, x & mask, y & mask);
  }

  // setp's integer comparisons (eq ne lt le gt ge; lo ls hi hs decode to the same).
  template <class T>
  static bool ordered(std::uint8_t cmp, T a, T b) {
    switch (cmp) {
      case 0: return a == b;
      case 1: return a != b;
      case 2: return a < b;
      case 3: return a <= b;
      case 4: return a > b;
      case 5: return a >= b;
      default: return false;
    }
  }

  // cvt: integer widths (sign- or zero-extending by the source type), integer <-> float with
  // the instruction's rounding, and between float widths.
  std::uint64_t convert(const Warp& w, const Instr& in, int lane, std::uint64_t v) const {
    const Type to = in.type, from = in.type2;
    const int to_bits = type_bits(to);
    if (!is_float(to) && !is_float(from)) {
      std::int64_t x = int_value(v, from);
      if (in.saturate) {
        const std::int64_t lo = is_signed(to) ? -(1ll << (to_bits - 1)) : 0;
        const std::int64_t hi = to_bits >= 64 ? std::numeric_limits<std::int64_t>::max()
                                : is_signed(to) ? (1ll << (to_bits - 1)) - 1
                                                : static_cast<std::int64_t>(width_mask(to_bits));
        x = std::clamp(x, lo, hi);
      }
      return static_cast<std::uint64_t>(x) & width_mask(to_bits);
    }
    if (is_float(from) && is_float(to)) {
      const double x = float_value(v, from);
      switch (to) {
        case Type::f64: return bits_of(x);
        case Type::f32: return bits_of(static_cast<float>(x));
        case Type::f16: return to_fp16(x);
        case Type::bf16: return to_bf16(x);
        default: break;
      }
    } else if (is_float(to)) {  // integer -> float, round to nearest
      const std::int64_t x = int_value(v, from);
      const double value = is_signed(from) ? static_cast<double>(x) : static_cast<double>(static_cast<std::uint64_t>(x));
      switch (to) {
        case Type::f64: return bits_of(value);
        case Type::f32:
          return bits_of(is_signed(from) ? static_cast<float>(x) : static_cast<float>(static_cast<std::uint64_t>(x)));
        default: break;
      }
    } else {  // float -> integer: .rni/.rzi/.rmi/.rpi, saturating as PTX does; NaN gives 0
      double x = float_value(v, from);
      switch (in.rounding) {
        case 1: x = std::nearbyint(x); break;
        case 3: x = std::floor(x); break;
        case 4: x = std::ceil(x); break;
        default: x = std::trunc(x); break;
      }
      if (std::isnan(x)) return 0;
      const double lo = is_signed(to) ? -std::ldexp(1.0, to_bits - 1) : 0.0;
      const double hi = is_signed(to) ? std::ldexp(1.0, to_bits - 1) - 1 : std::ldexp(1.0, to_bits) - 1;
      x = std::clamp(x, lo, hi);
      const std::int64_t i = x >= 9.2e18 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(x);
      if (!is_signed(to) && x >= 9.2e18) return static_cast<std::uint64_t>(x);
      return static_cast<std::uint64_t>(i) & width_mask(to_bits);
    }
    fail(w, in, lane, "an unsupported conversion");
  }

  const Decoded& p_;
  const Launch& launch_;
  const std::vector<std::byte>& params_;
  Metrics& metrics_;
  SectorSet& touched_;
  int threads_ = 0;
  Dim3 ctaid_;
  std::unique_ptr<CtaStorage> storage_ = CtaStoragePool::take();  // before the references into it
  std::vector<std::byte>& shared_ = storage_->shared;
  std::vector<Warp>& warps_ = storage_->warps;
  std::vector<PendingTma> tmas_;
  int barrier_count_[16] = {};
  std::vector<WordState>& words_ = storage_->words;
  std::uint32_t epoch_ = 0;
};

std::vector<std::byte> pack_params(const Decoded& p, const Launch& launch) {
  if (launch.args.size() != p.param_list.size())
    throw LaunchError(launch.label + ": the kernel takes " + std::to_string(p.param_list.size()) + " parameters, " +
                      std::to_string(launch.args.size()) + " were given");
  std::vector<std::byte> buffer(p.param_bytes);
  for (std::size_t i = 0; i < p.param_list.size(); ++i)
    std::memcpy(buffer.data() + p.param_offsets[i], launch.args[i], p.param_list[i].bytes);
  return buffer;
}

}  // namespace

Metrics launch(const Program& program, const Launch& launch) {
  const auto& p = dynamic_cast<const Decoded&>(program);
  const Dim3 g = launch.grid, b = launch.block;
  const std::uint64_t threads = static_cast<std::uint64_t>(b.x) * b.y * b.z;
  if (threads == 0 || threads > 1024 || g.x == 0 || g.y == 0 || g.z == 0)
    throw LaunchError(launch.label + ": an invalid launch (" + std::to_string(threads) + " threads per block, grid " +
                      std::to_string(g.x) + "x" + std::to_string(g.y) + "x" + std::to_string(g.z) + ")");
  const std::vector<std::byte> params = pack_params(p, launch);
  const std::uint64_t ctas = static_cast<std::uint64_t>(g.x) * g.y * g.z;
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const auto workers = static_cast<unsigned>(
      std::min<std::uint64_t>(ctas, launch.host_threads > 0 ? static_cast<unsigned>(launch.host_threads) : hardware));

  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<Metrics> metrics(workers);
  std::vector<SectorSet::Range> ranges;
  for (const Region& r : launch.regions) ranges.push_back({.begin = r.begin, .end = r.end});
  SectorSet touched(ranges);
  auto work = [&](unsigned worker) {
    try {
      Cta cta(p, launch, params, metrics[worker], touched);
      for (std::uint64_t i; !stop && (i = next++) < ctas;)
        cta.run({static_cast<unsigned>(i % g.x), static_cast<unsigned>(i / g.x % g.y), static_cast<unsigned>(i / g.x / g.y)});
    } catch (...) {
      stop = true;
      const std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < workers; ++i) pool.emplace_back(work, i);
  work(0);
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  Metrics total;
  for (const Metrics& m : metrics) total += m;
  total.global_unique_bytes = static_cast<std::int64_t>(touched.unique_bytes());
  return total;
}

}  // namespace gemmlab::ptx::sim
