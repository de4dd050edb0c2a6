// Decoding a parsed kernel for the interpreter (program.hpp): each instruction's form checked
// against what the interpreter implements, its operands resolved to slots.
#include "program.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gemmlab::ptx::sim {

namespace {

std::optional<Type> type_named(std::string_view m) {
  static const std::map<std::string_view, Type> types = {
      {"pred", Type::pred}, {"b8", Type::b8},     {"b16", Type::b16},   {"b32", Type::b32},       {"b64", Type::b64},
      {"u8", Type::u8},     {"u16", Type::u16},   {"u32", Type::u32},   {"u64", Type::u64},       {"s8", Type::s8},
      {"s16", Type::s16},   {"s32", Type::s32},   {"s64", Type::s64},   {"f16", Type::f16},       {"bf16", Type::bf16},
      {"f16x2", Type::f16x2}, {"bf16x2", Type::bf16x2}, {"f32", Type::f32}, {"f64", Type::f64}};
  const auto it = types.find(m);
  if (it == types.end()) return std::nullopt;
  return it->second;
}

// setp's comparisons; the u-variants of the float ones are true when either operand is NaN.
const std::map<std::string_view, std::uint8_t>& comparisons() {
  static const std::map<std::string_view, std::uint8_t> c = {
      {"eq", 0}, {"ne", 1}, {"lt", 2}, {"le", 3}, {"gt", 4}, {"ge", 5}, {"lo", 2}, {"ls", 3}, {"hi", 4}, {"hs", 5},
      {"equ", 8}, {"neu", 9}, {"ltu", 10}, {"leu", 11}, {"gtu", 12}, {"geu", 13}, {"num", 16}, {"nan", 17}};
  return c;
}

// Modifiers that change nothing a functional simulation can observe: cache and eviction hints,
// the memory-model qualifiers of ordinary accesses, .uni (a hint that a branch is uniform).
bool ignorable(std::string_view m) {
  return m == "nc" || m == "ca" || m == "cg" || m == "cs" || m == "lu" || m == "cv" || m == "wb" || m == "wt" ||
         m == "uni" || m == "weak" || m == "relaxed" || m == "cta" || m.starts_with("L1::") || m.starts_with("L2::");
}

class Decoder {
 public:
  Decoder(const Module& module, const Kernel& kernel) : module_(module), kernel_(kernel) {
    out_ = std::make_shared<Decoded>();
    out_->kernel_name = kernel.name;
  }

  std::shared_ptr<const Decoded> run() {
    declare_params();
    declare_variables();
    for (std::size_t i = 0; i < kernel_.body.size(); ++i) out_->code.push_back(instruction(kernel_.body[i]));
    out_->slots = next_slot_;
    return out_;
  }

 private:
  [[noreturn]] void unsupported(const Instruction& in, const std::string& why = "") const {
    throw LaunchError("the PTX simulator does not support `" + in.form() + "` (kernel " + kernel_.name + ", PTX line " +
                      std::to_string(in.line) + ": " + in.text + ")" + (why.empty() ? "" : ": " + why));
  }

  int new_slot() { return next_slot_++; }

  int constant(std::uint64_t value) {
    if (const auto it = constants_.find(value); it != constants_.end()) return it->second;
    const int slot = new_slot();
    out_->inits.push_back({.slot = slot, .kind = SlotInit::Kind::constant, .value = value});
    constants_[value] = slot;
    return slot;
  }

  void declare_params() {
    std::size_t offset = 0;
    for (const Declaration& p : kernel_.params) {
      const std::optional<Type> t = type_named(p.type);
      const std::size_t element = t ? std::max(1, type_bits(*t) / 8) : 1;
      const std::size_t bytes = p.array >= 0 ? element * static_cast<std::size_t>(p.array) : element;
      const std::size_t align = p.align > 0 ? static_cast<std::size_t>(p.align) : element;
      offset = (offset + align - 1) / align * align;
      out_->param_list.push_back({.bytes = bytes, .align = align});
      out_->param_offsets.push_back(offset);
      symbols_[p.name] = {Space::param, offset};
      offset += bytes;
    }
    out_->param_bytes = offset;
  }

  void place_shared(const Declaration& d) {
    const std::optional<Type> t = type_named(d.type);
    const std::size_t element = t ? std::max(1, type_bits(*t) / 8) : 1;
    const std::size_t align = d.align > 0 ? static_cast<std::size_t>(d.align) : element;
    if (d.external || d.array == 0) {  // extern __shared__: the dynamic shared memory, after the static
      extern_shared_.push_back({d.name + d.suffix, align});
      return;
    }
    const std::size_t bytes = element * static_cast<std::size_t>(std::max<std::int64_t>(d.array, 1));
    out_->shared_static = (out_->shared_static + align - 1) / align * align;
    symbols_[d.name + d.suffix] = {Space::shared, out_->shared_static};
    out_->shared_static += bytes;
  }

  void declare_variables() {
    for (const Declaration& d : module_.globals)
      if (d.space == "shared") place_shared(d);
    for (const Declaration& d : kernel_.declarations) {
      if (d.space == "shared") {
        place_shared(d);
      } else if (d.space == "reg") {
        if (d.count > 0)
          for (int i = 0; i < d.count; ++i) registers_[d.name + std::to_string(i) + d.suffix] = new_slot();
        else
          registers_[d.name + d.suffix] = new_slot();
      } else if (d.space == "local") {
        const std::optional<Type> t = type_named(d.type);
        const std::size_t element = t ? std::max(1, type_bits(*t) / 8) : 1;
        const std::size_t align = d.align > 0 ? static_cast<std::size_t>(d.align) : element;
        out_->local_bytes = (out_->local_bytes + align - 1) / align * align;
        symbols_[d.name + d.suffix] = {Space::local, out_->local_bytes};
        out_->local_bytes += element * static_cast<std::size_t>(std::max<std::int64_t>(d.array, 1));
      }
    }
    // Dynamic shared memory starts at the most demanding alignment of the extern arrays.
    std::size_t align = 16;
    for (const auto& e : extern_shared_) align = std::max(align, e.second);
    out_->dynamic_shared_offset = (out_->shared_static + align - 1) / align * align;
    for (const auto& e : extern_shared_) symbols_[e.first] = {Space::shared, out_->dynamic_shared_offset};
    out_->uses_dynamic_shared = !extern_shared_.empty();
  }

  std::optional<SlotInit::Kind> special(const std::string& name) const {
    static const std::map<std::string_view, SlotInit::Kind> specials = {
        {"%tid.x", SlotInit::Kind::tid_x},       {"%tid.y", SlotInit::Kind::tid_y},
        {"%tid.z", SlotInit::Kind::tid_z},       {"%ntid.x", SlotInit::Kind::ntid_x},
        {"%ntid.y", SlotInit::Kind::ntid_y},     {"%ntid.z", SlotInit::Kind::ntid_z},
        {"%ctaid.x", SlotInit::Kind::ctaid_x},   {"%ctaid.y", SlotInit::Kind::ctaid_y},
        {"%ctaid.z", SlotInit::Kind::ctaid_z},   {"%nctaid.x", SlotInit::Kind::nctaid_x},
        {"%nctaid.y", SlotInit::Kind::nctaid_y}, {"%nctaid.z", SlotInit::Kind::nctaid_z},
        {"%laneid", SlotInit::Kind::laneid},     {"%warpid", SlotInit::Kind::warpid},
        {"%nwarpid", SlotInit::Kind::nwarpid},   {"%dynamic_smem_size", SlotInit::Kind::dynamic_smem_size}};
    const auto it = specials.find(name);
    if (it == specials.end()) return std::nullopt;
    return it->second;
  }

  // A register, a special register or a symbol (its address in its state space), as a slot.
  int source_slot(const Instruction& in, const Operand& o) {
    switch (o.kind) {
      case Operand::Kind::immediate:
        return constant(o.bits ? *o.bits : static_cast<std::uint64_t>(o.integer));
      case Operand::Kind::reg: {
        if (o.negated) unsupported(in, "a negated operand here");
        if (const auto it = registers_.find(o.name); it != registers_.end()) return it->second;
        if (const auto kind = special(o.name)) {
          if (const auto it = specials_.find(o.name); it != specials_.end()) return it->second;
          const int slot = new_slot();
          out_->inits.push_back({.slot = slot, .kind = *kind, .value = 0});
          specials_[o.name] = slot;
          return slot;
        }
        if (const auto it = symbols_.find(o.name); it != symbols_.end()) return constant(it->second.second);
        unsupported(in, "unknown name " + o.name);
      }
      default: unsupported(in, "an operand of an unexpected kind");
    }
  }

  int dest_slot(const Instruction& in, const Operand& o) {
    if (o.kind == Operand::Kind::sink) return -1;
    if (o.kind != Operand::Kind::reg) unsupported(in, "a destination that is not a register");
    const auto it = registers_.find(o.name);
    if (it == registers_.end()) unsupported(in, "unknown register " + o.name);
    return it->second;
  }

  // The elements of a vector operand (or the operand itself), as slots.
  std::vector<int> vector_slots(const Instruction& in, const Operand& o, bool destination) {
    std::vector<int> slots;
    if (o.kind == Operand::Kind::vector) {
      for (const Operand& e : o.elements) slots.push_back(destination ? dest_slot(in, e) : source_slot(in, e));
    } else {
      slots.push_back(destination ? dest_slot(in, o) : source_slot(in, o));
    }
    return slots;
  }

  // [reg+offset], [symbol+offset] or [imm]: base slot and offset; a symbol's space when it names one.
  void address(const Instruction& in, const Operand& o, Instr& out) {
    if (o.kind != Operand::Kind::address) unsupported(in, "an address operand was expected");
    out.offset = o.integer;
    if (o.name.empty()) {
      out.base = -1;
      return;
    }
    if (const auto it = registers_.find(o.name); it != registers_.end()) {
      out.base = it->second;
      return;
    }
    if (const auto it = symbols_.find(o.name); it != symbols_.end()) {
      out.base = -1;
      out.offset += static_cast<std::int64_t>(it->second.second);
      return;
    }
    unsupported(in, "unknown address base " + o.name);
  }

  // The types among the modifiers, in order.
  static std::vector<Type> types_of(const Instruction& in) {
    std::vector<Type> types;
    for (const auto& m : in.modifiers)
      if (const auto t = type_named(m)) types.push_back(*t);
    return types;
  }

  static std::optional<Space> space_named(std::string_view m) {
    if (m == "global") return Space::global;
    if (m == "shared" || m == "shared::cta") return Space::shared;
    if (m == "param") return Space::param;
    if (m == "local") return Space::local;
    if (m == "const") return Space::constant;
    return std::nullopt;
  }

  // Checks that every modifier of `in` is one of `allowed`, a type, a space or an ignorable hint.
  void allow(const Instruction& in, std::initializer_list<std::string_view> allowed) const {
    for (const auto& m : in.modifiers) {
      if (type_named(m) || space_named(m) || ignorable(m)) continue;
      if (std::find(allowed.begin(), allowed.end(), m) != allowed.end()) continue;
      unsupported(in, "the modifier ." + m);
    }
  }

  void operands(const Instruction& in, std::size_t n) const {
    if (in.operands.size() != n) unsupported(in, "expected " + std::to_string(n) + " operands");
  }

  static Class class_of(Type t) {
    if (t == Type::f64) return Class::fp64;
    if (is_float(t)) return Class::fp32;
    return Class::integer;
  }

  Instr instruction(const Instruction& in) {
    Instr out;
    out.line = in.line;
    out.text = in.text;
    out.modifiers = in.form();
    if (!in.guard.empty()) {
      const auto it = registers_.find(in.guard);
      if (it == registers_.end()) unsupported(in, "unknown guard " + in.guard);
      out.guard = it->second;
      out.guard_negated = in.guard_negated;
    }
    const std::vector<Type> types = types_of(in);
    if (!types.empty()) out.type = types.front();
    for (const auto& m : in.modifiers)
      if (const auto s = space_named(m)) out.space = *s;
    const std::string& op = in.opcode;

    auto binary = [&](Op o) {
      operands(in, 3);
      out.op = o;
      out.cls = class_of(out.type);
      out.dst = {dest_slot(in, in.operands[0])};
      out.src = {source_slot(in, in.operands[1]), source_slot(in, in.operands[2])};
    };
    auto unary = [&](Op o) {
      operands(in, 2);
      out.op = o;
      out.cls = class_of(out.type);
      out.dst = {dest_slot(in, in.operands[0])};
      out.src = {source_slot(in, in.operands[1])};
    };
    auto need_type = [&] {
      if (types.size() != 1) unsupported(in, "expected one type");
    };

    if (op == "mov") {
      need_type();
      allow(in, {});
      operands(in, 2);
      out.cls = Class::integer;
      if (in.operands[0].kind == Operand::Kind::vector) {
        out.op = Op::unpack;  // mov.b64 {lo, hi}, %rd
        out.dst = vector_slots(in, in.operands[0], true);
        out.src = {source_slot(in, in.operands[1])};
      } else if (in.operands[1].kind == Operand::Kind::vector) {
        out.op = Op::pack;  // mov.b64 %rd, {lo, hi}
        out.dst = {dest_slot(in, in.operands[0])};
        out.src = vector_slots(in, in.operands[1], false);
      } else {
        out.op = Op::mov;
        out.dst = {dest_slot(in, in.operands[0])};
        out.src = {source_slot(in, in.operands[1])};
      }
      return out;
    }
    if (op == "add" || op == "sub") {
      need_type();
      allow(in, {"rn", "sat"});
      if (is_float(out.type)) {
        if (out.type != Type::f32 && out.type != Type::f64) unsupported(in);
        binary(op == "add" ? Op::add_f : Op::sub_f);
      } else {
        if (in.has("sat")) unsupported(in);
        binary(op == "add" ? Op::add : Op::sub);
      }
      return out;
    }
    if (op == "mul") {
      need_type();
      allow(in, {"lo", "hi", "wide", "rn"});
      if (is_float(out.type)) {
        if (out.type != Type::f32 && out.type != Type::f64) unsupported(in);
        binary(Op::mul_f);
      } else if (in.has("wide")) {
        binary(Op::mul_wide);
      } else if (in.has("hi")) {
        binary(Op::mul_hi);
      } else {
        binary(Op::mul_lo);
      }
      return out;
    }
    if (op == "mad" || op == "fma") {
      need_type();
      allow(in, {"lo", "hi", "wide", "rn"});
      operands(in, 4);
      out.dst = {dest_slot(in, in.operands[0])};
      out.src = {source_slot(in, in.operands[1]), source_slot(in, in.operands[2]), source_slot(in, in.operands[3])};
      out.cls = class_of(out.type);
      if (is_float(out.type)) {
        if ((out.type != Type::f32 && out.type != Type::f64) || (op == "mad" && !in.has("rn"))) unsupported(in);
        out.op = Op::fma;
      } else if (op == "fma") {
        unsupported(in);
      } else {
        out.op = in.has("wide") ? Op::mad_wide : in.has("hi") ? Op::mad_hi : Op::mad_lo;
      }
      return out;
    }
    if (op == "div" || op == "rem") {
      need_type();
      allow(in, {});
      if (is_float(out.type)) unsupported(in);
      binary(op == "div" ? Op::div : Op::rem);
      return out;
    }
    if (op == "min" || op == "max") {
      need_type();
      allow(in, {});
      if (is_float(out.type)) unsupported(in);
      binary(op == "min" ? Op::min : Op::max);
      return out;
    }
    if (op == "and" || op == "or" || op == "xor") {
      need_type();
      allow(in, {});
      binary(op == "and" ? Op::and_ : op == "or" ? Op::or_ : Op::xor_);
      return out;
    }
    if (op == "not" || op == "neg" || op == "abs") {
      need_type();
      allow(in, {});
      if (is_float(out.type) && op != "neg") unsupported(in);
      if (is_float(out.type) && out.type != Type::f32 && out.type != Type::f64) unsupported(in);
      unary(op == "not" ? Op::not_ : op == "neg" ? Op::neg : Op::abs);
      return out;
    }
    if (op == "shl" || op == "shr") {
      need_type();
      allow(in, {});
      binary(op == "shl" ? Op::shl : Op::shr);
      return out;
    }
    // bit field extract / insert; byte permute (the generic form only: no .f4e/.b4e/.rc8/.ecl/
    // .ecr/.rc16 mode)
    if (op == "bfe" || op == "bfi" || op == "prmt") {
      need_type();
      allow(in, {});
      operands(in, op == "bfi" ? 5 : 4);
      out.op = op == "bfi" ? Op::bfi : op == "bfe" ? Op::bfe : Op::prmt;
      out.cls = Class::integer;
      out.dst = {dest_slot(in, in.operands[0])};
      for (std::size_t i = 1; i < in.operands.size(); ++i) out.src.push_back(source_slot(in, in.operands[i]));
      return out;
    }
    if (op == "setp") {
      allow(in, {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu", "gtu", "geu",
                 "num", "nan", "ftz"});
      need_type();
      operands(in, 3);
      out.op = Op::setp;
      out.cls = class_of(out.type);
      for (const auto& m : in.modifiers)
        if (const auto it = comparisons().find(m); it != comparisons().end()) out.cmp = it->second;
      if (!is_float(out.type) && out.cmp >= 8) unsupported(in);
      if (is_float(out.type) && out.type != Type::f32 && out.type != Type::f64) unsupported(in);
      if (!in.operands[0].pair.empty()) unsupported(in, "a second destination");
      out.dst = {dest_slot(in, in.operands[0])};
      out.src = {source_slot(in, in.operands[1]), source_slot(in, in.operands[2])};
      return out;
    }
    if (op == "selp") {
      need_type();
      allow(in, {});
      operands(in, 4);
      out.op = Op::selp;
      out.cls = Class::integer;
      out.dst = {dest_slot(in, in.operands[0])};
      out.src = {source_slot(in, in.operands[1]), source_slot(in, in.operands[2]), source_slot(in, in.operands[3])};
      return out;
    }
    if (op == "cvt") {
      allow(in, {"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "sat", "ftz"});
      if (types.size() != 2) unsupported(in, "expected two types");
      unary(Op::cvt);
      out.type = types[0];
      out.type2 = types[1];
      out.saturate = in.has("sat");
      out.cls = is_float(out.type) || is_float(out.type2) ? (out.type == Type::f64 || out.type2 == Type::f64 ? Class::fp64 : Class::fp32)
                                                           : Class::integer;
      static const std::map<std::string_view, std::uint8_t> roundings = {
          {"rn", 1}, {"rni", 1}, {"rz", 2}, {"rzi", 2}, {"rm", 3}, {"rmi", 3}, {"rp", 4}, {"rpi", 4}};
      for (const auto& m : in.modifiers)
        if (const auto it = roundings.find(m); it != roundings.end()) out.rounding = it->second;
      return out;
    }
    if (op == "cvta") {
      allow(in, {"to"});
      unary(in.has("to") ? Op::cvta_to : Op::cvta_from);
      out.cls = Class::integer;
      return out;
    }
    if (op == "ld" || op == "st") {
      allow(in, {"v2", "v4"});
      need_type();
      operands(in, 2);
      out.op = op == "ld" ? Op::ld : Op::st;
      out.cls = Class::memory;
      out.vec = in.has("v4") ? 4 : in.has("v2") ? 2 : 1;
      if (op == "ld") {
        out.dst = vector_slots(in, in.operands[0], true);
        address(in, in.operands[1], out);
      } else {
        address(in, in.operands[0], out);
        out.src = vector_slots(in, in.operands[1], false);
      }
      if (static_cast<int>((op == "ld" ? out.dst : out.src).size()) != out.vec) unsupported(in, "vector size");
      return out;
    }
    if (op == "bra") {
      allow(in, {});
      operands(in, 1);
      out.op = Op::bra;
      out.cls = Class::control;
      const auto it = kernel_.labels.find(in.operands[0].name);
      if (it == kernel_.labels.end()) unsupported(in, "unknown label " + in.operands[0].name);
      out.imm = static_cast<std::int64_t>(it->second);
      return out;
    }
    if (op == "ret" || op == "exit") {
      if (!kernel_.entry) unsupported(in, "calls are not simulated");
      out.op = Op::exit;
      out.cls = Class::control;
      return out;
    }
    if (op == "bar" || op == "barrier") {
      if (in.has("warp")) {
        allow(in, {"warp", "sync"});
        operands(in, 1);
        out.op = Op::bar_warp_sync;
        out.cls = Class::sync;
        out.src = {source_slot(in, in.operands[0])};
        return out;
      }
      allow(in, {"sync", "aligned"});
      if (!in.has("sync") || in.operands.empty() || in.operands.size() > 2) unsupported(in);
      out.op = Op::bar_sync;
      out.cls = Class::sync;
      for (const Operand& o : in.operands) out.src.push_back(source_slot(in, o));
      return out;
    }
    if (op == "cp" && in.has("async") && !in.has("bulk")) {
      out.cls = Class::memory;
      if (in.has("commit_group")) {
        allow(in, {"async", "commit_group"});
        out.op = Op::cp_async_commit;
        return out;
      }
      if (in.has("wait_group") || in.has("wait_all")) {
        allow(in, {"async", "wait_group", "wait_all"});
        out.op = in.has("wait_all") ? Op::cp_async_wait_all : Op::cp_async_wait;
        if (out.op == Op::cp_async_wait) {
          operands(in, 1);
          if (in.operands[0].kind != Operand::Kind::immediate) unsupported(in, "a wait count that is not a constant");
          out.imm = in.operands[0].integer;
        }
        return out;
      }
      allow(in, {"async"});
      if (in.operands.size() != 3 && in.operands.size() != 4) unsupported(in);
      out.op = Op::cp_async;
      Instr src_addr;
      address(in, in.operands[0], out);  // destination (shared)
      address(in, in.operands[1], src_addr);
      if (in.operands[2].kind != Operand::Kind::immediate) unsupported(in, "a copy size that is not a constant");
      out.vec = static_cast<int>(in.operands[2].integer);
      if (out.vec != 4 && out.vec != 8 && out.vec != 16) unsupported(in, "a copy size other than 4, 8 or 16");
      if (in.has("cg") && out.vec != 16) unsupported(in, ".cg copies 16 bytes");
      // src holds the source base (or -1) and, when given, the source size (zero fill beyond it).
      out.src = {src_addr.base, in.operands.size() == 4 ? source_slot(in, in.operands[3]) : -1};
      out.imm = src_addr.offset;
      return out;
    }
    if (op == "ldmatrix") {
      allow(in, {"sync", "aligned", "m8n8", "x1", "x2", "x4", "trans"});
      operands(in, 2);
      if (!in.has("m8n8") || out.type != Type::b16 || out.space != Space::shared) unsupported(in);
      out.op = Op::ldmatrix;
      out.cls = Class::memory;
      out.vec = in.has("x4") ? 4 : in.has("x2") ? 2 : 1;
      out.trans = in.has("trans");
      out.dst = vector_slots(in, in.operands[0], true);
      if (static_cast<int>(out.dst.size()) != out.vec) unsupported(in, "the number of destination registers");
      address(in, in.operands[1], out);
      return out;
    }
    if (op == "mma") {
      allow(in, {"sync", "aligned", "m16n8k16", "row", "col"});
      // mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32
      if (!in.has("m16n8k16") || types.size() != 4 || types[0] != Type::f32 || types[3] != Type::f32 ||
          types[1] != types[2] || (types[1] != Type::f16 && types[1] != Type::bf16) || in.modifiers.size() < 8 ||
          in.modifiers[3] != "row" || in.modifiers[4] != "col")
        unsupported(in);
      operands(in, 4);
      out.op = Op::mma_sync;
      out.cls = Class::tensor;
      out.type = types[1];
      out.dst = vector_slots(in, in.operands[0], true);
      for (int i = 1; i <= 3; ++i)
        for (int slot : vector_slots(in, in.operands[static_cast<std::size_t>(i)], false)) out.src.push_back(slot);
      if (out.dst.size() != 4 || out.src.size() != 10) unsupported(in, "fragment sizes");
      return out;
    }
    if (op == "wmma") {
      allow(in, {"load", "store", "mma", "a", "b", "c", "d", "sync", "aligned", "row", "col", "m16n16k16"});
      if (!in.has("m16n16k16")) unsupported(in, "shapes other than m16n16k16");
      out.cls = Class::tensor;
      if (in.has("load") || in.has("store")) {
        const bool load = in.has("load");
        if (in.operands.size() != 2 && in.operands.size() != 3) unsupported(in);
        out.op = load ? Op::wmma_load : Op::wmma_store;
        out.cls = Class::memory;
        out.matrix = in.has("a") ? 0 : in.has("b") ? 1 : 2;
        out.a_col = in.has("col");
        if (load) {
          out.dst = vector_slots(in, in.operands[0], true);
          address(in, in.operands[1], out);
        } else {
          address(in, in.operands[0], out);
          out.src = vector_slots(in, in.operands[1], false);
        }
        // The stride (elements) comes last; 16 where it is left out.
        const int stride = in.operands.size() == 3 ? source_slot(in, in.operands[2]) : constant(16);
        out.src.push_back(stride);
        if (out.type != Type::f16 && out.type != Type::bf16 && out.type != Type::f32) unsupported(in);
        return out;
      }
      if (!in.has("mma")) unsupported(in);
      // wmma.mma.sync.aligned.{row,col}.{row,col}.m16n16k16.f32.{bf16.bf16.f32 | f32 (f16 inputs)}
      std::vector<std::string> layouts;
      for (const auto& m : in.modifiers)
        if (m == "row" || m == "col") layouts.push_back(m);
      if (layouts.size() != 2 || types.empty() || types.front() != Type::f32 || types.back() != Type::f32) unsupported(in);
      out.op = Op::wmma_mma;
      out.a_col = layouts[0] == "col";
      out.b_col = layouts[1] == "col";
      out.type = types.size() == 2 ? Type::f16 : types[1];
      if (types.size() != 2 && (types.size() != 4 || types[1] != types[2] || (types[1] != Type::f16 && types[1] != Type::bf16)))
        unsupported(in);
      operands(in, 4);
      out.dst = vector_slots(in, in.operands[0], true);
      const std::vector<int> a = vector_slots(in, in.operands[1], false), b = vector_slots(in, in.operands[2], false),
                             c = vector_slots(in, in.operands[3], false);
      out.imm = static_cast<std::int64_t>(a.size());
      if (a.size() != b.size() || c.size() != 8 || out.dst.size() != 8) unsupported(in, "fragment sizes");
      out.src = a;
      out.src.insert(out.src.end(), b.begin(), b.end());
      out.src.insert(out.src.end(), c.begin(), c.end());
      return out;
    }
    if (op == "mbarrier") {
      allow(in, {"init", "arrive", "expect_tx", "try_wait", "parity"});
      if (out.type != Type::b64 || out.space != Space::shared) unsupported(in);
      out.cls = Class::sync;
      if (in.has("init")) {
        operands(in, 2);
        out.op = Op::mbarrier_init;
        address(in, in.operands[0], out);
        out.src = {source_slot(in, in.operands[1])};
      } else if (in.has("arrive")) {
        // mbarrier.arrive{.expect_tx} state, [addr]{, tx}: the state token may be the sink.
        if (in.operands.size() != (in.has("expect_tx") ? 3u : 2u)) unsupported(in);
        out.op = Op::mbarrier_arrive;
        out.dst = {dest_slot(in, in.operands[0])};
        address(in, in.operands[1], out);
        if (in.has("expect_tx")) out.src = {source_slot(in, in.operands[2])};
      } else if (in.has("try_wait") && in.has("parity")) {
        operands(in, 3);
        out.op = Op::mbarrier_try_wait_parity;
        out.dst = {dest_slot(in, in.operands[0])};
        address(in, in.operands[1], out);
        out.src = {source_slot(in, in.operands[2])};
      } else {
        unsupported(in);
      }
      return out;
    }
    if (op == "fence") {  // the proxies and mbarrier initialisation are ordered by construction here
      allow(in, {"mbarrier_init", "release", "cluster", "proxy", "async", "acq_rel", "sc"});
      out.op = Op::no_effect;
      out.cls = Class::sync;
      return out;
    }
    if (op == "setmaxnreg") {  // register reallocation: nothing a functional simulation sees
      allow(in, {"inc", "dec", "sync", "aligned"});
      out.op = Op::no_effect;
      out.cls = Class::other;
      return out;
    }
    if (op == "cp" && in.has("bulk") && in.has("tensor")) {
      // cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
      //   [dst], [map, {c0, c1}], [mbar]
      allow(in, {"async", "bulk", "tensor", "2d", "shared::cluster", "tile", "mbarrier::complete_tx::bytes"});
      operands(in, 3);
      const Operand& map = in.operands[1];
      if (map.kind != Operand::Kind::address || map.elements.size() != 2) unsupported(in, "expected [map, {c0, c1}]");
      out.op = Op::tma_load_2d;
      out.cls = Class::memory;
      address(in, in.operands[0], out);
      Instr map_address, barrier_address;
      address(in, map, map_address);
      address(in, in.operands[2], barrier_address);
      out.addresses = {{map_address.base, map_address.offset}, {barrier_address.base, barrier_address.offset}};
      out.src = {source_slot(in, map.elements[0]), source_slot(in, map.elements[1])};
      return out;
    }
    if (op == "wgmma") {
      out.cls = Class::tensor;
      if (in.has("fence")) {
        allow(in, {"fence", "sync", "aligned"});
        out.op = Op::no_effect;
        return out;
      }
      if (in.has("commit_group")) {
        allow(in, {"commit_group", "sync", "aligned"});
        out.op = Op::wgmma_commit;
        return out;
      }
      if (in.has("wait_group")) {
        allow(in, {"wait_group", "sync", "aligned"});
        operands(in, 1);
        if (in.operands[0].kind != Operand::Kind::immediate) unsupported(in, "a wait count that is not a constant");
        out.op = Op::wgmma_wait;
        out.imm = in.operands[0].integer;
        return out;
      }
      // wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} d, a-desc, b-desc, scale-d,
      //   imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
      std::string shape;
      for (const auto& m : in.modifiers)
        if (m.starts_with("m64n") && m.ends_with("k16")) shape = m;
      const std::vector<std::string> known = {"mma_async", "sync", "aligned", shape};
      for (const auto& m : in.modifiers)
        if (!type_named(m) && std::find(known.begin(), known.end(), m) == known.end()) unsupported(in, "the modifier ." + m);
      if (shape.empty() || types.size() != 3 || types[0] != Type::f32 || types[1] != types[2] ||
          (types[1] != Type::f16 && types[1] != Type::bf16))
        unsupported(in);
      operands(in, 8);
      out.op = Op::wgmma_mma;
      out.type = types[1];
      out.wgmma_n = std::stoi(shape.substr(4, shape.size() - 7));
      out.dst = vector_slots(in, in.operands[0], true);
      if (static_cast<int>(out.dst.size()) != out.wgmma_n / 2) unsupported(in, "the number of accumulators");
      if (in.operands[1].kind == Operand::Kind::vector) unsupported(in, "A from registers");
      out.src = {source_slot(in, in.operands[1]), source_slot(in, in.operands[2]), source_slot(in, in.operands[3])};
      for (std::size_t i = 4; i < 8; ++i)
        if (in.operands[i].kind != Operand::Kind::immediate) unsupported(in, "a scale or transpose that is not a constant");
      out.scale_a = static_cast<int>(in.operands[4].integer);
      out.scale_b = static_cast<int>(in.operands[5].integer);
      out.trans_a = static_cast<int>(in.operands[6].integer);
      out.trans_b = static_cast<int>(in.operands[7].integer);
      return out;
    }
    unsupported(in);
  }

  const Module& module_;
  const Kernel& kernel_;
  std::shared_ptr<Decoded> out_;
  int next_slot_ = 0;
  std::unordered_map<std::string, int> registers_, specials_;
  std::map<std::uint64_t, int> constants_;
  std::unordered_map<std::string, std::pair<Space, std::size_t>> symbols_;
  std::vector<std::pair<std::string, std::size_t>> extern_shared_;
};

}  // namespace

std::shared_ptr<const Decoded> decode(const Module& module, const Kernel& kernel) {
  return Decoder(module, kernel).run();
}

}  // namespace gemmlab::ptx::sim
