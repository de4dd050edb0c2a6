// The decoded form of a kernel the interpreter executes: every instruction with its operation,
// types and operands resolved to register slots once, so that executing it is a switch and lane
// loops. Immediates, special registers (%tid.x ...) and the addresses of variables and parameters
// are register slots too, filled when a warp starts; a source operand is always a slot.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gemmlab/ptx.hpp"
#include "gemmlab/ptx_sim.hpp"

namespace gemmlab::ptx::sim {

enum class Type : std::uint8_t {
  none, pred,
  b8, b16, b32, b64,
  u8, u16, u32, u64,
  s8, s16, s32, s64,
  f16, bf16, f16x2, bf16x2, f32, f64,
};

// Inline: the interpreter asks for every lane of every instruction.
constexpr int type_bits(Type t) {
  switch (t) {
    case Type::pred: return 1;
    case Type::b8: case Type::u8: case Type::s8: return 8;
    case Type::b16: case Type::u16: case Type::s16: case Type::f16: case Type::bf16: return 16;
    case Type::b32: case Type::u32: case Type::s32: case Type::f32: case Type::f16x2: case Type::bf16x2: return 32;
    case Type::b64: case Type::u64: case Type::s64: case Type::f64: return 64;
    case Type::none: return 0;
  }
  return 0;
}
constexpr bool is_signed(Type t) { return t == Type::s8 || t == Type::s16 || t == Type::s32 || t == Type::s64; }
constexpr bool is_float(Type t) {
  return t == Type::f16 || t == Type::bf16 || t == Type::f32 || t == Type::f64 || t == Type::f16x2 || t == Type::bf16x2;
}

enum class Space : std::uint8_t { generic, global, shared, param, local, constant };

enum class Op : std::uint16_t {
  mov, pack, unpack,  // mov to/from a vector {a, b}
  add, sub, mul_lo, mul_hi, mul_wide, mad_lo, mad_hi, mad_wide, div, rem, min, max, neg, abs,
  and_, or_, xor_, not_, shl, shr, bfe, bfi, prmt,
  fma, mul_f, add_f, sub_f,
  setp, selp, cvt, cvta_to, cvta_from,
  ld, st, ldmatrix,
  bra, exit, bar_sync, bar_warp_sync,
  cp_async, cp_async_commit, cp_async_wait, cp_async_wait_all,
  mma_sync, wmma_load, wmma_store, wmma_mma,
  // Hopper: mbarriers, TMA, wgmma; fences and register reallocation change nothing simulated
  mbarrier_init, mbarrier_arrive, mbarrier_try_wait_parity, tma_load_2d,
  wgmma_mma, wgmma_commit, wgmma_wait, no_effect,
};

// Metrics class of an instruction.
enum class Class : std::uint8_t { fp32, fp64, integer, memory, control, sync, tensor, other };

struct Instr {
  Op op = Op::mov;
  Class cls = Class::other;
  Type type = Type::none;   // the instruction's type (for cvt: the destination's)
  Type type2 = Type::none;  // cvt: the source's; setp: unused
  Space space = Space::generic;
  std::uint8_t cmp = 0;     // setp's comparison
  std::uint8_t rounding = 0;
  bool saturate = false;
  bool trans = false;       // ldmatrix .trans
  int vec = 1;              // .v2/.v4, ldmatrix .x1/.x2/.x4, cp.async size in bytes
  int guard = -1;           // predicate slot, or -1
  bool guard_negated = false;
  std::vector<int> dst;     // destination slots (-1: the sink `_`)
  std::vector<int> src;     // source slots
  int base = -1;            // an address operand's base slot (-1: absolute)
  std::int64_t offset = 0;  // an address operand's byte offset
  std::int64_t imm = 0;     // a compile-time integer (wait_group's N, a branch target, ...)
  int matrix = 0;           // wmma: 0 for A, 1 for B, 2 for C and D
  bool a_col = false, b_col = false;  // wmma layouts: column-major A (load: the fragment's), B
  // Address operands beyond the first (TMA: the tensor map, the mbarrier): base slot, offset.
  std::vector<std::pair<int, std::int64_t>> addresses;
  int wgmma_n = 0;  // wgmma: N of m64nNk16
  int scale_a = 1, scale_b = 1, trans_a = 0, trans_b = 0;
  std::string modifiers;    // the whole form, for messages
  int line = 0;
  std::string text;
};

// A slot's initial value in every lane, set when a warp starts.
struct SlotInit {
  enum class Kind : std::uint8_t { constant, tid_x, tid_y, tid_z, ntid_x, ntid_y, ntid_z, ctaid_x, ctaid_y, ctaid_z,
                                    nctaid_x, nctaid_y, nctaid_z, laneid, warpid, nwarpid, dynamic_smem_size };
  int slot = 0;
  Kind kind = Kind::constant;
  std::uint64_t value = 0;
};

class Decoded final : public Program {
 public:
  std::string kernel_name;
  std::vector<Instr> code;
  int slots = 0;                // registers, predicates, constants and special registers
  std::vector<SlotInit> inits;  // slots with an initial value
  std::vector<Param> param_list;
  std::vector<std::size_t> param_offsets;  // where each parameter sits in the parameter buffer
  std::size_t param_bytes = 0;
  std::size_t shared_static = 0;
  bool uses_dynamic_shared = false;
  std::size_t dynamic_shared_offset = 0;  // where extern .shared arrays begin (after the static ones)
  std::size_t local_bytes = 0;            // per thread

  const std::vector<Param>& params() const override { return param_list; }
  std::size_t static_shared_bytes() const override { return shared_static; }
  const std::string& name() const override { return kernel_name; }
  std::map<std::string, int> forms() const override {
    std::map<std::string, int> counts;
    for (const Instr& in : code) ++counts[in.modifiers];
    return counts;
  }
};

// Decodes a parsed kernel. Throws LaunchError for a form the interpreter does not support.
std::shared_ptr<const Decoded> decode(const Module& module, const Kernel& kernel);

}  // namespace gemmlab::ptx::sim
