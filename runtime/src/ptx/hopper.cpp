// The Hopper pieces of the PTX simulator (ptx/hopper.hpp): swizzle, wgmma descriptors and
// wgmma.mma_async, tensor maps and the TMA tile load, mbarriers.
#include "ptx/hopper.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gemmlab/validate.hpp"

namespace gemmlab::ptx::sim {

namespace {

std::string hex(std::uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(v));
  return buffer;
}

std::string dec(std::int64_t v) { return std::to_string(v); }

[[noreturn]] void fault(const std::string& what) { throw Fault(what); }

}  // namespace

// ---- the shared-memory swizzle ---------------------------------------------------------------------

std::uint32_t swizzle_span(Swizzle s) {
  switch (s) {
    case Swizzle::none: return 0;
    case Swizzle::bytes32: return 32;
    case Swizzle::bytes64: return 64;
    case Swizzle::bytes128: return 128;
  }
  return 0;
}

std::uint32_t swizzle_repeat(Swizzle s) { return 8 * swizzle_span(s); }

std::uint32_t swizzle_address(std::uint32_t address, Swizzle s) {
  if (s == Swizzle::none) return address;
  // The chunk bits within the span (1, 2 or 3 of them from bit 4) take the XOR of as many bits from
  // bit 7: the row of the pattern for 128-byte rows.
  const std::uint32_t mask = swizzle_span(s) / 16 - 1;
  return address ^ (((address >> 7) & mask) << 4);
}

// ---- wgmma matrix descriptors ------------------------------------------------------------------------

MatrixDescriptor decode_matrix_descriptor(std::uint64_t descriptor) {
  constexpr std::uint64_t field14 = 0x3FFF;
  constexpr std::uint64_t used = field14 | field14 << 16 | field14 << 32 | 0x7ull << 49 | 0x3ull << 62;
  if (descriptor & ~used)
    fault("wgmma matrix descriptor " + hex(descriptor) + " sets bits the ISA leaves unused (" +
          hex(descriptor & ~used) + "): a field shifted wrongly?");
  MatrixDescriptor d;
  d.start_address = static_cast<std::uint32_t>(descriptor & field14) << 4;
  d.leading_byte_offset = static_cast<std::uint32_t>(descriptor >> 16 & field14) << 4;
  d.stride_byte_offset = static_cast<std::uint32_t>(descriptor >> 32 & field14) << 4;
  d.base_offset = static_cast<std::uint32_t>(descriptor >> 49 & 0x7);
  constexpr Swizzle modes[4] = {Swizzle::none, Swizzle::bytes128, Swizzle::bytes64, Swizzle::bytes32};
  d.swizzle = modes[descriptor >> 62];
  return d;
}

namespace {

constexpr std::uint32_t element_bytes = 2;  // f16, bf16
constexpr std::uint32_t wgmma_m = 64, wgmma_k = 16;

// The address of element (mn, k) of a 16-bit operand (see wgmma_a_address).
std::uint32_t operand_address(const MatrixDescriptor& d, bool mn_major, std::uint32_t mn, std::uint32_t k) {
  if (d.swizzle != Swizzle::none && d.base_offset != 0)
    fault("wgmma matrix descriptor with base offset " + dec(d.base_offset) +
          " (pattern not starting at a multiple of " + dec(swizzle_repeat(d.swizzle)) +
          " bytes): not supported by the simulator");
  const std::uint64_t lbo = d.leading_byte_offset, sbo = d.stride_byte_offset;
  const std::uint64_t span = swizzle_span(d.swizzle);
  std::uint64_t offset = 0;
  if (!mn_major) {
    if (span == 0)
      offset = (mn % 8) * 16 + (mn / 8) * sbo + (k % 8) * element_bytes + (k / 8) * lbo;
    else
      offset = (mn % 8) * span + (mn / 8) * sbo + k * element_bytes;
  } else {
    if (span == 0) {
      offset = (mn % 8) * element_bytes + (mn / 8) * sbo + (k % 8) * 16 + (k / 8) * lbo;
    } else {
      const std::uint64_t per_row = span / element_bytes;  // elements of mn in one swizzled row
      offset = (mn % per_row) * element_bytes + (mn / per_row) * lbo + (k % 8) * span + (k / 8) * sbo;
    }
  }
  // start < 2^18 and the offsets < 2^18 * 64: the sum fits in 32 bits.
  return swizzle_address(static_cast<std::uint32_t>(d.start_address + offset), d.swizzle);
}

void check_trans(int trans, const char* name) {
  if (trans != 0 && trans != 1) fault(std::string("wgmma ") + name + " " + dec(trans) + " (must be 0 or 1)");
}

void check_n(std::uint32_t n) {
  if (n < 8 || n > 256 || n % 8 != 0)
    fault("wgmma m64nNk16 with N = " + dec(n) + " (N must be a multiple of 8 in 8..256)");
}

}  // namespace

std::uint32_t wgmma_a_address(const MatrixDescriptor& d, int trans_a, std::uint32_t row, std::uint32_t col) {
  check_trans(trans_a, "imm-trans-a");
  if (row >= wgmma_m || col >= wgmma_k)
    throw std::out_of_range("wgmma A element (" + dec(row) + ", " + dec(col) + ") outside 64 x 16");
  return operand_address(d, trans_a == 1, row, col);
}

std::uint32_t wgmma_b_address(const MatrixDescriptor& d, int trans_b, std::uint32_t n, std::uint32_t row,
                              std::uint32_t col) {
  check_trans(trans_b, "imm-trans-b");
  check_n(n);
  if (row >= wgmma_k || col >= n)
    throw std::out_of_range("wgmma B element (" + dec(row) + ", " + dec(col) + ") outside 16 x " + dec(n));
  return operand_address(d, trans_b == 1, col, row);
}

// ---- wgmma.mma_async ---------------------------------------------------------------------------------

FragmentCoord wgmma_accumulator_coord(std::uint32_t thread, std::uint32_t reg, std::uint32_t n) {
  check_n(n);
  if (thread >= warpgroup_threads || reg >= n / 2)
    throw std::out_of_range("wgmma accumulator: thread " + dec(thread) + ", register " + dec(reg) +
                            " (128 threads of " + dec(n / 2) + " registers)");
  const std::uint32_t warp = thread / 32, lane = thread % 32;
  FragmentCoord c;
  c.row = 16 * warp + lane / 4 + (reg % 4 >= 2 ? 8 : 0);
  c.col = 8 * (reg / 4) + 2 * (lane % 4) + reg % 2;
  return c;
}

namespace {

const char* type_name(WgmmaType t) { return t == WgmmaType::f16 ? "f16" : "bf16"; }

// An operand's rows must stay within the swizzled row they start in: the canonical layouts place a
// K-major operand's 16 elements of k, and up to a row's worth of an MN-major operand's mn, there.
void check_swizzle_row(const MatrixDescriptor& d, bool mn_major, std::uint32_t mn_extent, const char* operand) {
  const std::uint32_t span = swizzle_span(d.swizzle);
  if (span == 0) return;
  const std::uint32_t within = d.start_address % span;
  const std::uint32_t extent = mn_major ? std::min(mn_extent * element_bytes, span) : wgmma_k * element_bytes;
  if (within + extent > span)
    fault(std::string("wgmma operand ") + operand + ": start address " + hex(d.start_address) + " is " +
          dec(within) + " bytes into a " + dec(span) + "-byte swizzled row, and its " + dec(extent) +
          " bytes there would leave the row");
}

float read_element(std::span<const std::byte> shared, std::uint32_t address, WgmmaType type, const char* operand,
                   std::uint32_t row, std::uint32_t col) {
  if (static_cast<std::uint64_t>(address) + element_bytes > shared.size())
    fault(std::string("wgmma reads ") + operand + "(" + dec(row) + ", " + dec(col) + ") at shared address " +
          hex(address) + ", outside the " + dec(static_cast<std::int64_t>(shared.size())) +
          " bytes of shared memory");
  // Shared memory holds the 16-bit value little-endian, as the GPU stores it.
  const auto bits = static_cast<std::uint16_t>(std::to_integer<unsigned>(shared[address]) |
                                               std::to_integer<unsigned>(shared[address + 1]) << 8);
  // Every f16 and bf16 value is an fp32 value: the conversion is exact.
  return static_cast<float>(type == WgmmaType::f16 ? from_fp16(bits) : from_bf16(bits));
}

}  // namespace

void wgmma_mma_async(const Wgmma& op, std::span<const std::byte> shared, std::span<float> d, std::uint32_t first_thread,
                     std::uint32_t threads) {
  check_n(op.n);
  if (op.a_type != op.b_type)
    fault(std::string("wgmma .f32.") + type_name(op.a_type) + "." + type_name(op.b_type) +
          ": A and B must have the same type");
  if ((op.scale_a != 1 && op.scale_a != -1) || (op.scale_b != 1 && op.scale_b != -1))
    fault("wgmma imm-scale-a " + dec(op.scale_a) + ", imm-scale-b " + dec(op.scale_b) + " (must be 1 or -1)");
  check_trans(op.trans_a, "imm-trans-a");
  check_trans(op.trans_b, "imm-trans-b");
  const std::uint32_t n = op.n, regs = n / 2;
  if (d.size() != std::size_t{warpgroup_threads} * regs)
    throw std::invalid_argument("wgmma: " + dec(static_cast<std::int64_t>(d.size())) + " accumulators for N = " +
                                dec(n) + " (128 x " + dec(regs) + " expected)");

  const MatrixDescriptor a_desc = decode_matrix_descriptor(op.a_desc);
  const MatrixDescriptor b_desc = decode_matrix_descriptor(op.b_desc);
  check_swizzle_row(a_desc, op.trans_a == 1, wgmma_m, "A");
  check_swizzle_row(b_desc, op.trans_b == 1, n, "B");

  // The operands as dense row-major arrays, the scales applied (a negation is exact).
  std::vector<float> a(wgmma_m * wgmma_k), b(wgmma_k * n);
  for (std::uint32_t m = 0; m < wgmma_m; ++m)
    for (std::uint32_t k = 0; k < wgmma_k; ++k)
      a[m * wgmma_k + k] = static_cast<float>(op.scale_a) *
                           read_element(shared, wgmma_a_address(a_desc, op.trans_a, m, k), op.a_type, "A", m, k);
  for (std::uint32_t k = 0; k < wgmma_k; ++k)
    for (std::uint32_t j = 0; j < n; ++j)
      b[k * n + j] = static_cast<float>(op.scale_b) *
                     read_element(shared, wgmma_b_address(b_desc, op.trans_b, n, k, j), op.b_type, "B", k, j);

  if (first_thread > warpgroup_threads || threads > warpgroup_threads - first_thread)
    throw std::invalid_argument("wgmma: threads " + dec(first_thread) + " + " + dec(threads) + " of a warpgroup");
  for (std::uint32_t t = first_thread; t < first_thread + threads; ++t)
    for (std::uint32_t r = 0; r < regs; ++r) {
      const FragmentCoord c = wgmma_accumulator_coord(t, r, n);
      float& out = d[std::size_t{t} * regs + r];
      float acc = op.scale_d ? out : 0.0f;
      // k ascending, one rounding per step (a fused multiply-add: exact even where a bf16
      // product would leave fp32's range).
      for (std::uint32_t k = 0; k < wgmma_k; ++k) acc = std::fma(a[c.row * wgmma_k + k], b[k * n + c.col], acc);
      out = acc;
    }
}

// ---- tensor maps ----------------------------------------------------------------------------------

namespace {

constexpr std::uint64_t tensor_map_magic = 0x31'30'50'41'4D'54'4C'47ull;  // "GLTMAP01", little-endian

struct TensorMapParams {
  std::uint32_t data_type = 0, rank = 0;
  std::uint64_t global_address = 0;
  std::span<const std::uint64_t> global_dim, global_strides;
  std::span<const std::uint32_t> box_dim, element_strides;
  std::uint32_t interleave = 0, swizzle = 0, l2_promotion = 0, oob_fill = 0;
};

// Bytes per element of a driver data type; 0 for a value that is no CUtensorMapDataType.
std::uint32_t data_type_bytes(std::uint32_t t) {
  constexpr std::uint32_t bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  return t < std::size(bytes) ? bytes[t] : 0;
}

// What is wrong with the parameters, per cuTensorMapEncodeTiled's documented requirements and
// what the simulator supports; empty when nothing is.
std::string tensor_map_problem(const TensorMapParams& p) {
  using std::to_string;
  const std::uint32_t t = p.data_type;
  if (t >= 13 && t <= 15)
    return "data type " + to_string(t) + " (a packed 4- or 6-bit type) is not supported by the simulator";
  const std::uint32_t eb = data_type_bytes(t);
  if (eb == 0) return "data type " + to_string(t) + " is not a CUtensorMapDataType";
  if (t >= 10) return "data type " + to_string(t) + " (FTZ or TF32) is not supported by the simulator";
  if (p.rank == 0 || p.rank > 5) return "tensorRank " + to_string(p.rank) + " (must be 1..5)";
  if (p.rank != 2) return "tensorRank " + to_string(p.rank) + " is not supported by the simulator (2 only)";
  if (p.global_dim.size() != p.rank || p.box_dim.size() != p.rank || p.element_strides.size() != p.rank ||
      p.global_strides.size() != p.rank - 1)
    return "arrays of " + to_string(p.global_dim.size()) + " globalDim, " + to_string(p.global_strides.size()) +
           " globalStrides, " + to_string(p.box_dim.size()) + " boxDim, " + to_string(p.element_strides.size()) +
           " elementStrides for rank " + to_string(p.rank);
  if (p.global_address % 16 != 0) return "globalAddress " + hex(p.global_address) + " is not 16-byte aligned";
  for (std::uint32_t i = 0; i < p.rank; ++i)
    if (p.global_dim[i] == 0 || p.global_dim[i] > (1ull << 32))
      return "globalDim[" + to_string(i) + "] = " + to_string(p.global_dim[i]) + " (must be 1..2^32)";
  for (std::uint32_t i = 0; i + 1 < p.rank; ++i) {
    const std::uint64_t s = p.global_strides[i];
    if (s % 16 != 0 || s >= (1ull << 40))
      return "globalStrides[" + to_string(i) + "] = " + to_string(s) + " (must be a multiple of 16 below 2^40)";
  }
  // The documented stride formula: globalStrides[0] = globalDim[0] * element size + padding.
  if (p.global_strides[0] < p.global_dim[0] * eb)
    return "globalStrides[0] = " + to_string(p.global_strides[0]) + " is less than a row of globalDim[0] = " +
           to_string(p.global_dim[0]) + " elements of " + to_string(eb) + " bytes";
  for (std::uint32_t i = 0; i < p.rank; ++i)
    if (p.box_dim[i] == 0 || p.box_dim[i] > 256)
      return "boxDim[" + to_string(i) + "] = " + to_string(p.box_dim[i]) + " (must be 1..256)";
  for (std::uint32_t i = 0; i < p.rank; ++i)
    if (p.element_strides[i] == 0 || p.element_strides[i] > 8)
      return "elementStrides[" + to_string(i) + "] = " + to_string(p.element_strides[i]) + " (must be 1..8)";
  if (p.interleave > 2) return "interleave " + to_string(p.interleave) + " is not a CUtensorMapInterleave";
  if (p.interleave != 0) return "interleave " + to_string(p.interleave) + " is not supported by the simulator";
  const std::uint32_t inner_bytes = p.box_dim[0] * eb;
  if (inner_bytes % 16 != 0)
    return "boxDim[0] = " + to_string(p.box_dim[0]) + " elements of " + to_string(eb) + " bytes is " +
           to_string(inner_bytes) + " bytes, not a multiple of 16";
  if (p.swizzle > 6) return "swizzle " + to_string(p.swizzle) + " is not a CUtensorMapSwizzle";
  if (p.swizzle > 3)
    return "swizzle " + to_string(p.swizzle) + " (a 128-byte swizzle with 32- or 64-byte atoms) is not supported "
           "by the simulator";
  if (p.swizzle != 0) {
    const std::uint32_t span = 16u << p.swizzle;  // 32, 64, 128
    if (inner_bytes > span)
      return "the box's inner dimension is " + to_string(inner_bytes) + " bytes, more than the " +
             to_string(span) + "-byte swizzle allows";
  }
  if (p.l2_promotion > 3) return "l2Promotion " + to_string(p.l2_promotion) + " is not a CUtensorMapL2promotion";
  if (p.oob_fill > 1) return "oobFill " + to_string(p.oob_fill) + " is not a CUtensorMapFloatOOBfill";
  if (p.oob_fill != 0) return "oobFill NAN_REQUEST_ZERO_FMA is not supported by the simulator";
  return {};
}

// A check word over the fields, so that a kernel's stray bytes are not taken for a map.
std::uint64_t mix(const std::uint64_t* words, int count) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < count; ++i) {
    h ^= words[i];
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h;
}

// The format: word 0 magic, 1 global address, 2-3 global dims (innermost first), 4 row stride,
// 5 box dims (16 bits each) and element strides (8 bits each, from bit 32), 6 data type, rank,
// interleave, swizzle, L2 promotion, OOB fill (8 bits each), 7 check word over 0-6, 8-15 zero.
constexpr int tensor_map_fields = 7;

}  // namespace

TensorMap encode_tensor_map_tiled(TensorMapDataType data_type, std::uint32_t rank, std::uint64_t global_address,
                                  std::span<const std::uint64_t> global_dim,
                                  std::span<const std::uint64_t> global_strides,
                                  std::span<const std::uint32_t> box_dim,
                                  std::span<const std::uint32_t> element_strides, TensorMapInterleave interleave,
                                  TensorMapSwizzle swizzle, TensorMapL2Promotion l2_promotion,
                                  TensorMapOobFill oob_fill) {
  TensorMapParams p;
  p.data_type = static_cast<std::uint32_t>(data_type);
  p.rank = rank;
  p.global_address = global_address;
  p.global_dim = global_dim;
  p.global_strides = global_strides;
  p.box_dim = box_dim;
  p.element_strides = element_strides;
  p.interleave = static_cast<std::uint32_t>(interleave);
  p.swizzle = static_cast<std::uint32_t>(swizzle);
  p.l2_promotion = static_cast<std::uint32_t>(l2_promotion);
  p.oob_fill = static_cast<std::uint32_t>(oob_fill);
  if (const std::string problem = tensor_map_problem(p); !problem.empty())
    throw TensorMapError("cuTensorMapEncodeTiled (simulated): " + problem);

  TensorMap map;
  std::uint64_t* w = map.opaque;
  w[0] = tensor_map_magic;
  w[1] = global_address;
  w[2] = global_dim[0];
  w[3] = global_dim[1];
  w[4] = global_strides[0];
  w[5] = std::uint64_t{box_dim[0]} | std::uint64_t{box_dim[1]} << 16 | std::uint64_t{element_strides[0]} << 32 |
         std::uint64_t{element_strides[1]} << 40;
  w[6] = std::uint64_t{p.data_type} | std::uint64_t{rank} << 8 | std::uint64_t{p.interleave} << 16 |
         std::uint64_t{p.swizzle} << 24 | std::uint64_t{p.l2_promotion} << 32 | std::uint64_t{p.oob_fill} << 40;
  w[7] = mix(w, tensor_map_fields);
  return map;
}

TiledTensorMap decode_tensor_map(const TensorMap& map) {
  const std::uint64_t* w = map.opaque;
  bool tail_clear = true;
  for (int i = tensor_map_fields + 1; i < 16; ++i) tail_clear = tail_clear && w[i] == 0;
  if (w[0] != tensor_map_magic || w[7] != mix(w, tensor_map_fields) || !tail_clear)
    fault("the tensor map operand is not a tensor map encoded for the simulator (first word " + hex(w[0]) + ")");
  TensorMapParams p;
  p.global_address = w[1];
  const std::uint64_t dims[2] = {w[2], w[3]}, strides[1] = {w[4]};
  const std::uint32_t box[2] = {static_cast<std::uint32_t>(w[5] & 0xFFFF),
                                static_cast<std::uint32_t>(w[5] >> 16 & 0xFFFF)};
  const std::uint32_t es[2] = {static_cast<std::uint32_t>(w[5] >> 32 & 0xFF),
                               static_cast<std::uint32_t>(w[5] >> 40 & 0xFF)};
  p.global_dim = dims;
  p.global_strides = strides;
  p.box_dim = box;
  p.element_strides = es;
  p.data_type = static_cast<std::uint32_t>(w[6] & 0xFF);
  p.rank = static_cast<std::uint32_t>(w[6] >> 8 & 0xFF);
  p.interleave = static_cast<std::uint32_t>(w[6] >> 16 & 0xFF);
  p.swizzle = static_cast<std::uint32_t>(w[6] >> 24 & 0xFF);
  p.l2_promotion = static_cast<std::uint32_t>(w[6] >> 32 & 0xFF);
  p.oob_fill = static_cast<std::uint32_t>(w[6] >> 40 & 0xFF);
  // A map that passes the check word was made by the encoder; checking again costs little.
  if (const std::string problem = tensor_map_problem(p); !problem.empty())
    fault("invalid tensor map: " + problem);

  TiledTensorMap m;
  m.data_type = static_cast<TensorMapDataType>(p.data_type);
  m.element_bytes = data_type_bytes(p.data_type);
  m.global_address = p.global_address;
  m.global_dim = {dims[0], dims[1]};
  m.row_stride = strides[0];
  m.box_dim = {box[0], box[1]};
  m.element_strides = {es[0], es[1]};
  constexpr Swizzle modes[4] = {Swizzle::none, Swizzle::bytes32, Swizzle::bytes64, Swizzle::bytes128};
  m.swizzle = modes[p.swizzle];
  m.l2_promotion = static_cast<TensorMapL2Promotion>(p.l2_promotion);
  m.oob_fill = static_cast<TensorMapOobFill>(p.oob_fill);
  return m;
}

TiledTensorMap decode_tensor_map(std::span<const std::byte, sizeof(TensorMap)> bytes) {
  TensorMap map;
  std::memcpy(map.opaque, bytes.data(), sizeof map.opaque);  // the host's byte order, as the encoder wrote it
  return decode_tensor_map(map);
}

std::uint32_t TiledTensorMap::box_rows() const { return (box_dim[1] + element_strides[1] - 1) / element_strides[1]; }
std::uint32_t TiledTensorMap::row_bytes() const { return box_dim[0] * element_bytes; }
std::uint32_t TiledTensorMap::box_bytes() const { return row_bytes() * box_rows(); }

std::uint32_t tma_load_2d(const TiledTensorMap& map, std::int32_t c0, std::int32_t c1, std::span<std::byte> shared,
                          std::uint32_t dst, const GlobalRead& read) {
  const std::string what = "cp.async.bulk.tensor.2d to shared address " + hex(dst);
  if (dst % 128 != 0) fault(what + ": the destination must be 128-byte aligned");
  const std::uint32_t repeat = swizzle_repeat(map.swizzle);
  if (repeat != 0 && dst % repeat != 0)
    fault(what + ": with a " + dec(swizzle_span(map.swizzle)) + "-byte swizzle the destination must be " +
          dec(repeat) + "-byte aligned, where the swizzle pattern starts");
  const std::uint32_t bytes = map.box_bytes(), row_bytes = map.row_bytes();
  if (std::uint64_t{dst} + bytes > shared.size())
    fault(what + ": the " + dec(bytes) + "-byte box does not fit in the " +
          dec(static_cast<std::int64_t>(shared.size())) + " bytes of shared memory");

  const std::int64_t columns = static_cast<std::int64_t>(map.global_dim[0]);
  const std::int64_t rows = static_cast<std::int64_t>(map.global_dim[1]);
  const std::int64_t first = std::max<std::int64_t>(c0, 0);
  const std::int64_t last = std::min<std::int64_t>(std::int64_t{c0} + map.box_dim[0], columns);  // exclusive
  std::vector<std::byte> row(row_bytes);
  for (std::uint32_t j = 0; j < map.box_rows(); ++j) {
    std::fill(row.begin(), row.end(), std::byte{0});  // OOB fill NONE: zeros
    const std::int64_t y = std::int64_t{c1} + std::int64_t{j} * map.element_strides[1];
    if (y >= 0 && y < rows && first < last) {
      const std::uint64_t address = map.global_address + static_cast<std::uint64_t>(y) * map.row_stride +
                                    static_cast<std::uint64_t>(first) * map.element_bytes;
      read(address, row.data() + (first - c0) * map.element_bytes,
           static_cast<std::size_t>(last - first) * map.element_bytes);
    }
    // Rows are packed; the swizzle moves whole 16-byte chunks (row_bytes is a multiple of 16).
    for (std::uint32_t offset = 0; offset < row_bytes; offset += 16) {
      const std::uint32_t target = swizzle_address(dst + j * row_bytes + offset, map.swizzle);
      if (std::uint64_t{target} + 16 > shared.size())
        fault(what + ": a swizzled chunk lands at " + hex(target) + ", outside shared memory");
      std::memcpy(shared.data() + target, row.data() + offset, 16);
    }
  }
  return bytes;
}

// ---- mbarrier ----------------------------------------------------------------------------------------

namespace {

constexpr std::uint64_t mask20 = (1ull << 20) - 1, mask21 = (1ull << 21) - 1;
constexpr std::uint64_t token_tag = 0x4D42ull << 48;  // "MB" over the phase number in bits 0-2

}  // namespace

Mbarrier::Mbarrier(std::span<std::byte> shared, std::uint32_t address) : shared_(shared), address_(address) {
  if (address % 8 != 0) fault("mbarrier at shared address " + hex(address) + ": not 8-byte aligned");
  if (std::uint64_t{address} + 8 > shared.size())
    fault("mbarrier at shared address " + hex(address) + ": outside the " +
          dec(static_cast<std::int64_t>(shared.size())) + " bytes of shared memory");
}

std::uint64_t Mbarrier::load() const {
  std::uint64_t word = 0;
  for (std::uint32_t i = 8; i-- > 0;) word = word << 8 | std::to_integer<std::uint64_t>(shared_[address_ + i]);
  return word;
}

void Mbarrier::store(std::uint64_t word) {
  for (std::uint32_t i = 0; i < 8; ++i) shared_[address_ + i] = static_cast<std::byte>(word >> (8 * i) & 0xFF);
}

Mbarrier::State Mbarrier::state() const {
  const std::uint64_t w = load();
  State s;
  s.expected = static_cast<std::uint32_t>(w & mask20);
  s.pending = static_cast<std::uint32_t>(w >> 20 & mask20);
  const std::uint64_t tx = w >> 40 & mask21;
  s.tx_count = static_cast<std::int32_t>(tx) - (tx >> 20 ? (1 << 21) : 0);  // sign-extend 21 bits
  s.phase = static_cast<std::uint32_t>(w >> 61);
  s.initialized = s.expected != 0;
  return s;
}

Mbarrier::State Mbarrier::checked_state(const char* operation) const {
  const State s = state();
  if (!s.initialized)
    fault(std::string("mbarrier.") + operation + " on shared address " + hex(address_) +
          ", which holds no initialized mbarrier");
  return s;
}

void Mbarrier::save(State s) {
  if (s.pending == 0 && s.tx_count == 0) {  // the phase completes: the next one starts
    s.phase = (s.phase + 1) % 8;
    s.pending = s.expected;
  }
  store(std::uint64_t{s.expected} | std::uint64_t{s.pending} << 20 |
        (static_cast<std::uint64_t>(static_cast<std::int64_t>(s.tx_count)) & mask21) << 40 |
        std::uint64_t{s.phase % 8} << 61);
}

void Mbarrier::init(std::uint32_t count) {
  if (count == 0 || count > max_count)
    fault("mbarrier.init at " + hex(address_) + " with count " + dec(count) + " (must be 1..2^20-1)");
  State s;
  s.expected = s.pending = count;
  save(s);
}

void Mbarrier::inval() { store(0); }

std::uint64_t Mbarrier::arrive(std::uint32_t count) {
  State s = checked_state("arrive");
  if (count == 0 || count > max_count)
    fault("mbarrier.arrive at " + hex(address_) + " with count " + dec(count) + " (must be 1..2^20-1)");
  if (count > s.pending)
    fault("mbarrier.arrive at " + hex(address_) + " with count " + dec(count) + " when only " + dec(s.pending) +
          " arrivals are pending in phase " + dec(s.phase) + " (tx-count " + dec(s.tx_count) +
          "): more arrivals than expected");
  const std::uint64_t token = token_tag | s.phase;
  s.pending -= count;
  save(s);
  return token;
}

std::uint64_t Mbarrier::arrive_expect_tx(std::uint32_t bytes, std::uint32_t count) {
  expect_tx(bytes);
  return arrive(count);
}

void Mbarrier::expect_tx(std::uint32_t bytes) {
  State s = checked_state("expect_tx");
  const std::int64_t tx = std::int64_t{s.tx_count} + bytes;
  if (tx > max_tx)
    fault("mbarrier expect_tx of " + dec(bytes) + " bytes at " + hex(address_) + " takes the tx-count from " +
          dec(s.tx_count) + " beyond 2^20-1");
  s.tx_count = static_cast<std::int32_t>(tx);
  save(s);
}

void Mbarrier::complete_tx(std::uint32_t bytes) {
  State s = checked_state("complete_tx");
  const std::int64_t tx = std::int64_t{s.tx_count} - bytes;
  if (tx < -max_tx)
    fault("mbarrier complete_tx of " + dec(bytes) + " bytes at " + hex(address_) + " takes the tx-count from " +
          dec(s.tx_count) + " below -(2^20-1)");
  s.tx_count = static_cast<std::int32_t>(tx);
  save(s);
}

bool Mbarrier::test_wait(std::uint64_t token) const {
  const State s = checked_state("test_wait");
  if ((token & ~std::uint64_t{7}) != token_tag)
    fault("mbarrier.test_wait at " + hex(address_) + " with state " + hex(token) +
          ", which no mbarrier.arrive returned");
  const auto phase = static_cast<std::uint32_t>(token & 7);
  if (phase == s.phase) return false;
  if (phase == (s.phase + 7) % 8) return true;
  fault("mbarrier.test_wait at " + hex(address_) + " with the state of phase " + dec(phase) +
        " (modulo 8), neither the current phase " + dec(s.phase) + " nor the one before");
}

bool Mbarrier::test_wait_parity(std::uint32_t parity) const {
  const State s = checked_state("test_wait.parity");
  if (parity > 1)
    fault("mbarrier wait at " + hex(address_) + " on parity " + dec(parity) + " (must be 0 or 1)");
  return s.phase % 2 != parity;
}

}  // namespace gemmlab::ptx::sim
