// The Hopper (sm_90a) pieces of the PTX simulator, as pure functions and small classes the
// interpreter calls: the shared-memory swizzle, wgmma matrix descriptors and operand addressing,
// wgmma.mma_async m64nNk16 with fp32 accumulators (f16/bf16 inputs from shared memory), tensor maps
// (a driver-free stand-in for cuTensorMapEncodeTiled and its decoder), the TMA tile load
// cp.async.bulk.tensor.2d, and mbarriers kept in the CTA's shared memory.
//
// Shared memory is the CTA's byte array; a shared address is a byte offset into it. Conditions a
// faulty kernel can cause (misaligned or out-of-range addresses, bad descriptors or tensor maps,
// misuse of an mbarrier) and instruction forms this code does not support throw Fault; a thread or
// register index out of range is the caller's bug and throws std::out_of_range.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>

#include "ptx/fault.hpp"

namespace gemmlab::ptx::sim {

// ---- the shared-memory swizzle ---------------------------------------------------------------------

// The swizzle modes wgmma descriptors and tensor maps share. With span S (32, 64 or 128 bytes) the
// 16-byte chunk bits of an address (bits 4 and up, log2(S/16) of them) are XORed with as many bits
// from bit 7 up; the pattern repeats every 8*S bytes (256, 512, 1024).
enum class Swizzle : std::uint8_t { none, bytes32, bytes64, bytes128 };

std::uint32_t swizzle_span(Swizzle s);    // 0 (none), 32, 64, 128
std::uint32_t swizzle_repeat(Swizzle s);  // 0 (none), 256, 512, 1024
// The address where the byte at unswizzled `address` lies (an involution; none: `address`).
std::uint32_t swizzle_address(std::uint32_t address, Swizzle s);

// ---- wgmma matrix descriptors ------------------------------------------------------------------------

// The fields of a 64-bit shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"),
// decoded: addresses and offsets in bytes (the descriptor holds them in 16-byte units).
struct MatrixDescriptor {
  std::uint32_t start_address = 0;        // bits 0-13
  std::uint32_t leading_byte_offset = 0;  // LBO, bits 16-29
  std::uint32_t stride_byte_offset = 0;   // SBO, bits 32-45
  std::uint32_t base_offset = 0;          // bits 49-51 (0..7)
  Swizzle swizzle = Swizzle::none;        // bits 62-63: 0 none, 1 128B, 2 64B, 3 32B
};

// Decodes a descriptor. Throws Fault when a bit the ISA leaves unused is set (bits 14-15, 30-31,
// 46-48, 52-61): a kernel that sets one has most likely shifted a field wrongly.
MatrixDescriptor decode_matrix_descriptor(std::uint64_t descriptor);

// The shared byte address of element (row, col) of a 16-bit (f16/bf16) wgmma operand described by
// `d`, per the canonical layouts of the PTX ISA ("Shared Memory Matrix Layout", "Strides"):
//   A is 64 (m) x 16 (k): row = m, col = k; trans = imm-trans-a (0: K-major, 1: M-major).
//   B is 16 (k) x N:      row = k, col = n; trans = imm-trans-b (0: K-major, 1: N-major); `n` is
//                         the instruction's N.
// With mn the M or N index and S the swizzle span, the offset added to the start address is:
//   K-major, no swizzle:  core matrices of 8 rows x 16 bytes: (mn%8)*16 + (mn/8)*SBO
//                         + (k%8)*2 + (k/8)*LBO
//   K-major, swizzled:    rows of S bytes in 8-row atoms: (mn%8)*S + (mn/8)*SBO + k*2 (LBO unused)
//   MN-major, no swizzle: core matrices of 8 k-rows x 16 bytes: (mn%8)*2 + (mn/8)*SBO
//                         + (k%8)*16 + (k/8)*LBO
//   MN-major, swizzled:   atoms of 8 k-rows x S bytes: (mn%(S/2))*2 + (mn/(S/2))*LBO
//                         + (k%8)*S + (k/8)*SBO
// and the swizzle is then applied to the whole address (start + offset): it uses absolute address
// bits, as with base offset 0 the atoms start at multiples of the pattern's repeat. A non-zero base
// offset with a swizzle throws Fault (not supported); row or col out of range: std::out_of_range.
std::uint32_t wgmma_a_address(const MatrixDescriptor& d, int trans_a, std::uint32_t row, std::uint32_t col);
std::uint32_t wgmma_b_address(const MatrixDescriptor& d, int trans_b, std::uint32_t n, std::uint32_t row,
                              std::uint32_t col);

// ---- wgmma.mma_async m64nNk16, fp32 accumulators -------------------------------------------------

inline constexpr std::uint32_t warpgroup_threads = 128;

enum class WgmmaType : std::uint8_t { f16, bf16 };

// One wgmma.mma_async.sync.aligned.m64nNk16.f32.<atype>.<btype> d, a-desc, b-desc, scale-d,
// imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b (A and B both from shared memory).
struct Wgmma {
  std::uint32_t n = 64;  // 8, 16, ..., 256
  WgmmaType a_type = WgmmaType::f16, b_type = WgmmaType::f16;
  std::uint64_t a_desc = 0, b_desc = 0;
  bool scale_d = true;            // false: D = A*B (the old accumulators are not read)
  int scale_a = 1, scale_b = 1;   // 1, or -1 to negate A / B
  int trans_a = 0, trans_b = 0;   // 0: K-major; 1: M-major A / N-major B
};

// Which element of the 64 x N result accumulator register `reg` (0 .. N/2-1) of warpgroup thread
// `thread` (0..127) holds (PTX ISA figure "WGMMA .m64nNk16 register fragment layout for
// accumulator matrix D"): warp w = thread/32 holds rows 16w..16w+15; lane l holds rows
// 16w + l/4 (registers with reg%4 < 2) and 16w + l/4 + 8 (the others), and columns
// 8*(reg/4) + 2*(l%4) + reg%2. Fault for an unsupported N.
struct FragmentCoord {
  std::uint32_t row = 0, col = 0;
};
FragmentCoord wgmma_accumulator_coord(std::uint32_t thread, std::uint32_t reg, std::uint32_t n);

// Executes `op` on the warpgroup's accumulators: d[thread * (N/2) + reg] for the 128 threads, so
// d.size() must be 128 * N/2. For each element: acc = scale_d ? D : 0, then acc += A(m,k) * B(k,n)
// for k = 0, 1, ..., 15 in that order, each addition rounded to fp32 (round to nearest even). An
// f16/bf16 product is exact in fp32, so the result does not depend on whether the compiler fuses
// the multiply and the add. Throws Fault for an unsupported form (N, mixed types, scales or
// transposes out of range), a bad descriptor, an operand that leaves its swizzle row, or a read
// outside `shared`.
// Only the accumulators of threads [first_thread, first_thread + threads) are computed (a warp's
// quarter, when the warps of a warpgroup are simulated one at a time); the others are left.
void wgmma_mma_async(const Wgmma& op, std::span<const std::byte> shared, std::span<float> d,
                     std::uint32_t first_thread = 0, std::uint32_t threads = 128);

// ---- tensor maps ----------------------------------------------------------------------------------

// The driver's enumerations, with the driver's numeric values (CUtensorMapDataType and so on).
enum class TensorMapDataType : std::uint32_t {
  uint8 = 0, uint16, uint32, int32, uint64, int64, float16, float32, float64, bfloat16,
  float32_ftz, tfloat32, tfloat32_ftz
};
enum class TensorMapInterleave : std::uint32_t { none = 0, bytes16, bytes32 };
enum class TensorMapSwizzle : std::uint32_t { none = 0, bytes32, bytes64, bytes128 };
enum class TensorMapL2Promotion : std::uint32_t { none = 0, bytes64, bytes128, bytes256 };
enum class TensorMapOobFill : std::uint32_t { none = 0, nan_request_zero_fma };

// The opaque 128-byte, 64-byte aligned object a kernel receives (like CUtensorMap).
struct alignas(64) TensorMap {
  std::uint64_t opaque[16] = {};
};
static_assert(sizeof(TensorMap) == 128);

// What encode_tensor_map_tiled refuses (where the driver returns CUDA_ERROR_INVALID_VALUE).
class TensorMapError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// cuTensorMapEncodeTiled for the simulated device: the same parameters (arrays innermost dimension
// first; global_strides has rank-1 entries, in bytes), validated as the driver documents them.
// The simulator supports rank 2, no interleave, OOB fill none and the data types that copy as plain
// bytes (all but the FTZ and TF32 ones); other legal values are refused as unsupported. L2
// promotion is recorded and otherwise ignored.
TensorMap encode_tensor_map_tiled(TensorMapDataType data_type, std::uint32_t rank, std::uint64_t global_address,
                                  std::span<const std::uint64_t> global_dim,
                                  std::span<const std::uint64_t> global_strides,
                                  std::span<const std::uint32_t> box_dim,
                                  std::span<const std::uint32_t> element_strides, TensorMapInterleave interleave,
                                  TensorMapSwizzle swizzle, TensorMapL2Promotion l2_promotion,
                                  TensorMapOobFill oob_fill);

// A decoded 2-D tiled tensor map.
struct TiledTensorMap {
  TensorMapDataType data_type = TensorMapDataType::float16;
  std::uint32_t element_bytes = 2;
  std::uint64_t global_address = 0;
  std::array<std::uint64_t, 2> global_dim{};         // {columns, rows}: innermost first
  std::uint64_t row_stride = 0;                      // bytes from one row to the next
  std::array<std::uint32_t, 2> box_dim{};            // {columns, rows}
  std::array<std::uint32_t, 2> element_strides{};    // [0] is ignored (no interleave)
  Swizzle swizzle = Swizzle::none;
  TensorMapL2Promotion l2_promotion = TensorMapL2Promotion::none;
  TensorMapOobFill oob_fill = TensorMapOobFill::none;

  std::uint32_t box_rows() const;   // rows one load brings: ceil(box_dim[1] / element_strides[1])
  std::uint32_t row_bytes() const;  // box_dim[0] * element_bytes
  std::uint32_t box_bytes() const;  // bytes one load writes to shared memory (and counts)
};

// Reads a map made by encode_tensor_map_tiled. Throws Fault when the bytes are not such a map
// (a kernel passing anything else, or a map it has overwritten).
TiledTensorMap decode_tensor_map(const TensorMap& map);
TiledTensorMap decode_tensor_map(std::span<const std::byte, sizeof(TensorMap)> bytes);

// Reads `bytes` bytes of global memory at `address` into `out`; the caller's callback checks the
// bounds (throwing Fault) and counts the traffic.
using GlobalRead = std::function<void(std::uint64_t address, void* out, std::size_t bytes)>;

// cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst], [map,
// {c0, c1}], [mbar]: copies the box whose first element is (column c0, row c1) to shared memory at
// dst, rows packed one after the other (row_bytes() apart) with the map's swizzle applied to the
// destination addresses. Elements outside the tensor (negative coordinates too) are written as
// zeros and not read; each row's in-bounds run is one `read` call. Returns the bytes the copy
// counts on the mbarrier (complete_tx): the whole box, zero-filled parts included. The caller
// applies it: Mbarrier(shared, mbar).complete_tx(bytes).
// Throws Fault if dst is not 128-byte aligned, or not aligned to the swizzle pattern's repeat
// (1024 bytes for 128B) with a swizzle, or if the box does not fit in `shared`.
std::uint32_t tma_load_2d(const TiledTensorMap& map, std::int32_t c0, std::int32_t c1, std::span<std::byte> shared,
                          std::uint32_t dst, const GlobalRead& read);

// ---- mbarrier ----------------------------------------------------------------------------------------

// An mbarrier object: a view of 8 bytes of shared memory holding its state (PTX ISA "mbarrier"):
// current phase, pending arrivals, expected arrivals, tx-count. A phase completes when the pending
// arrivals and the tx-count are both zero; the phase then advances and the pending count is reset
// to the expected count. The state lives in the shared bytes (layout below), so every thread's
// view of the same address sees the same barrier; the operations are not atomic (one host thread
// runs a CTA). Layout, a little-endian 64-bit word: bits 0-19 expected count (0: not initialized),
// 20-39 pending count, 40-60 tx-count (21-bit two's complement), 61-63 phase number modulo 8.
class Mbarrier {
 public:
  static constexpr std::uint32_t max_count = (1u << 20) - 1;  // arrival counts: 1 .. 2^20-1
  static constexpr std::int32_t max_tx = (1 << 20) - 1;       // tx-count: -(2^20-1) .. 2^20-1

  // Throws Fault unless address is 8-byte aligned and the 8 bytes lie in `shared`.
  Mbarrier(std::span<std::byte> shared, std::uint32_t address);

  struct State {
    std::uint32_t phase = 0;  // modulo 8; its parity is phase % 2
    std::uint32_t pending = 0, expected = 0;
    std::int32_t tx_count = 0;
    bool initialized = false;
  };
  State state() const;

  // mbarrier.init: phase 0, pending = expected = count, tx-count 0. Fault unless 1 <= count < 2^20.
  void init(std::uint32_t count);
  // mbarrier.inval: back to not initialized.
  void inval();
  // mbarrier.arrive{, count}: the returned token names the phase before the arrival. Fault if not
  // initialized or count is outside 1 .. pending (the ISA leaves over-arrival undefined).
  std::uint64_t arrive(std::uint32_t count = 1);
  // mbarrier.arrive.expect_tx: expect_tx(bytes), then arrive(count).
  std::uint64_t arrive_expect_tx(std::uint32_t bytes, std::uint32_t count = 1);
  // mbarrier.expect_tx / the complete_tx of an asynchronous copy: tx-count += bytes / -= bytes.
  // Fault if the tx-count would leave its range.
  void expect_tx(std::uint32_t bytes);
  void complete_tx(std::uint32_t bytes);

  // mbarrier.test_wait with a token from arrive: true once that phase has completed. Fault for a
  // token that is not one, or names neither the current nor the preceding phase (undefined).
  bool test_wait(std::uint64_t token) const;
  // mbarrier.test_wait.parity: true when the phase with this parity (0 or 1) has completed, that is
  // when the current phase's parity differs (the preceding phase is the one with that parity; a
  // fresh barrier's preceding phase, parity 1, counts as completed).
  bool test_wait_parity(std::uint32_t parity) const;
  // try_wait is test_wait here: no time passes inside one call; on false the interpreter suspends
  // the thread and retries.
  bool try_wait(std::uint64_t token) const { return test_wait(token); }
  bool try_wait_parity(std::uint32_t parity) const { return test_wait_parity(parity); }

 private:
  std::uint64_t load() const;
  void store(std::uint64_t word);
  State checked_state(const char* operation) const;  // Fault if not initialized
  void save(State s);                                 // completes the phase if due, then stores

  std::span<std::byte> shared_;
  std::uint32_t address_;
};

}  // namespace gemmlab::ptx::sim
