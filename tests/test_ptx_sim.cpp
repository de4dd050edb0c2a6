// The PTX interpreter on small hand-written kernels whose expected results follow from the PTX
// ISA's text (instruction semantics, barriers, divergence), not from the CUDA kernels, and its
// sanitizer on deliberately faulty ones.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gemmlab/ptx_sim.hpp"
#include <gtest/gtest.h>

namespace gemmlab {
namespace {

using ptx::sim::Launch;
using ptx::sim::LaunchError;
using ptx::sim::Program;

// A kernel `k(.param .u64 out)` in a module of its own: `body` after the declarations.
std::string kernel(const std::string& declarations, const std::string& body) {
  return ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n" + declarations +
         "\n" + body + "\n}\n";
}

// Runs `ptx` on one CTA of `threads` threads (or `ctas` of them) with `out` as its buffer.
template <class T>
ptx::sim::Metrics run(const std::string& ptx, std::vector<T>& out, unsigned threads, unsigned ctas = 1) {
  const auto program = Program::load(ptx, "k");
  void* data = out.data();
  Launch l;
  l.grid = {ctas, 1, 1};
  l.block = {threads, 1, 1};
  l.args = {&data};
  const auto begin = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(data));
  l.regions = {{.begin = begin, .end = begin + out.size() * sizeof(T), .name = "out"}};
  l.label = "test kernel";
  l.host_threads = 1;
  return ptx::sim::launch(*program, l);
}

// The end of a kernel that stores %r9 to out[%r1] (%r1: the thread index, %rd1: out) and returns.
const std::string store_r9 = "mul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r9;\nret;";

// out[tid] = the value of %r9 after `computation` (32-bit).
std::string per_thread_u32(const std::string& computation) {
  return kernel(".reg .b32 %r<10>;\n.reg .b64 %rd<4>;\n.reg .pred %p<4>;\n.reg .f32 %f<4>;",
                "ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\n" + computation + "\n" + store_r9);
}

TEST(PtxSimInstructions, IntegerArithmeticFollowsTheIsa) {
  struct Case {
    const char* code;
    std::uint32_t expected;  // for thread 0
  };
  // Each expectation follows from the ISA's description of the instruction.
  const std::vector<Case> cases = {
      {"mov.u32 %r2, -7;\nmov.u32 %r3, 2;\ndiv.s32 %r9, %r2, %r3;", static_cast<std::uint32_t>(-3)},  // toward zero
      {"mov.u32 %r2, -7;\nmov.u32 %r3, 2;\nrem.s32 %r9, %r2, %r3;", static_cast<std::uint32_t>(-1)},  // sign of a
      {"mov.u32 %r2, -8;\nshr.s32 %r9, %r2, 1;", static_cast<std::uint32_t>(-4)},                     // arithmetic
      {"mov.u32 %r2, -8;\nshr.u32 %r9, %r2, 1;", 0x7ffffffcu},                                        // logical
      {"mov.u32 %r2, 1;\nshl.b32 %r9, %r2, 40;", 0u},  // shifts beyond the width clamp
      {"mov.u32 %r2, -1;\nmov.u32 %r3, 1;\nsetp.lt.u32 %p1, %r2, %r3;\nselp.u32 %r9, 5, 6, %p1;", 6u},  // unsigned
      {"mov.u32 %r2, -1;\nmov.u32 %r3, 1;\nsetp.lt.s32 %p1, %r2, %r3;\nselp.u32 %r9, 5, 6, %p1;", 5u},  // signed
      {"mov.u32 %r2, 0x80000000;\nmov.u32 %r3, 2;\nmul.hi.s32 %r9, %r2, %r3;", static_cast<std::uint32_t>(-1)},
      {"mov.u32 %r2, 0x10000;\nmad.lo.s32 %r9, %r2, %r2, 3;", 3u},  // the low 32 bits of 2^32 + 3
      {"mov.u32 %r2, -5;\nmov.u32 %r3, 3;\nmin.s32 %r9, %r2, %r3;", static_cast<std::uint32_t>(-5)},
      {"mov.u32 %r2, -5;\nmov.u32 %r3, 3;\nmin.u32 %r9, %r2, %r3;", 3u},
      {"mov.f32 %f1, 0f40600000;\ncvt.rzi.s32.f32 %r9, %f1;", 3u},   // 3.5 truncated
      {"mov.f32 %f1, 0f40600000;\ncvt.rni.s32.f32 %r9, %f1;", 4u},   // 3.5 to nearest even
      {"mov.f32 %f1, 0f4F800000;\ncvt.rzi.s32.f32 %r9, %f1;", 0x7fffffffu},  // 2^32 saturates
      {"mov.f32 %f1, 0fFFC00000;\ncvt.rzi.s32.f32 %r9, %f1;", 0u},   // NaN converts to 0
      {"mov.u32 %r2, 0xABCD1234;\nbfe.u32 %r9, %r2, 8, 12;", 0xD12u},  // bits 8..19
      {"mov.u32 %r2, 0x00F00000;\nbfe.s32 %r9, %r2, 20, 4;", 0xffffffffu},  // field 0xF, sign-extended
      {"mov.u32 %r2, 0x12345678;\nbfe.u32 %r9, %r2, 28, 8;", 0x1u},  // past bit 31: zeros
      {"mov.u32 %r2, 0xF;\nmov.u32 %r3, 0xFFFF0000;\nbfi.b32 %r9, %r2, %r3, 4, 8;", 0xFFFF00F0u},
      {"mov.u32 %r2, 0xF;\nmov.u32 %r3, 0x12345678;\nbfi.b32 %r9, %r2, %r3, 4, 0;", 0x12345678u},  // len 0
      // prmt, generic form: {b, a} numbers a's bytes 0-3 and b's 4-7; selector nibble i fills byte i
      {"mov.u32 %r2, 0x03020100;\nmov.u32 %r3, 0x07060504;\nprmt.b32 %r9, %r2, %r3, 0x4567;", 0x04050607u},
      {"mov.u32 %r2, 0x03020100;\nmov.u32 %r3, 0x07060504;\nprmt.b32 %r9, %r2, %r3, 0x2104;", 0x02010004u},
      // a nibble with its msb set replicates the chosen byte's sign bit: byte 0 is 0x80 -> 0xFF
      {"mov.u32 %r2, 0x00000080;\nmov.u32 %r3, 0;\nprmt.b32 %r9, %r2, %r3, 0x0008;", 0x808080FFu},
  };
  for (const Case& c : cases) {
    std::vector<std::uint32_t> out(32, 0xdeadbeef);
    run(per_thread_u32(c.code), out, 32);
    EXPECT_EQ(out[0], c.expected) << c.code;
  }
}

TEST(PtxSimInstructions, WideMultiplicationSignExtendsAndFloatsRoundAsIeee) {
  const std::string ptx = kernel(".reg .b32 %r<4>;\n.reg .b64 %rd<8>;\n.reg .f32 %f<6>;",
                                 "ld.param.u64 %rd1, [out];\nmov.u32 %r1, -3;\nmov.u32 %r2, 100000;\n"
                                 "mul.wide.s32 %rd2, %r1, %r2;\nst.global.u64 [%rd1], %rd2;\n"
                                 "mul.wide.u32 %rd3, %r1, %r2;\nst.global.u64 [%rd1+8], %rd3;\n"
                                 // fma rounds once: (1 + 2^-23) * (1 - 2^-23) - 1 = -2^-46 exactly
                                 "mov.f32 %f1, 0f3F800001;\nmov.f32 %f2, 0f3F7FFFFE;\nmov.f32 %f3, 0fBF800000;\n"
                                 "fma.rn.f32 %f4, %f1, %f2, %f3;\nmul.f32 %f5, %f1, %f2;\nadd.f32 %f5, %f5, %f3;\n"
                                 "mov.b64 %rd4, {%f4, %f5};\nst.global.u64 [%rd1+16], %rd4;\nret;");
  std::vector<std::uint64_t> out(3, 0);
  run(ptx, out, 1);
  EXPECT_EQ(static_cast<std::int64_t>(out[0]), -300000);
  EXPECT_EQ(out[1], 4294967293ull * 100000ull);
  float fused, separate;
  const auto lo = static_cast<std::uint32_t>(out[2]), hi = static_cast<std::uint32_t>(out[2] >> 32);
  std::memcpy(&fused, &lo, 4);
  std::memcpy(&separate, &hi, 4);
  EXPECT_EQ(fused, -0x1p-46f);
  EXPECT_EQ(separate, 0.0f);  // the product rounds to 1 - 2^-46 ... to 1 in fp32, then 1 - 1
}

// Lanes that branch apart run one side, then the other, and meet again: a warp-collective
// instruction after the join sees the whole warp.
TEST(PtxSimControl, DivergentLanesReconvergeWhereTheirPathsJoin) {
  const std::string ptx = kernel(".reg .b32 %r<10>;\n.reg .b64 %rd<4>;\n.reg .pred %p<2>;",
                                 "ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nand.b32 %r2, %r1, 1;\n"
                                 "setp.eq.u32 %p1, %r2, 0;\n@%p1 bra EVEN;\nmul.lo.s32 %r9, %r1, 3;\nbra JOIN;\n"
                                 "EVEN:\nmul.lo.s32 %r9, %r1, 2;\nJOIN:\nbar.warp.sync -1;\n" +
                                     store_r9);
  std::vector<std::uint32_t> out(32, 0);
  run(ptx, out, 32);
  for (std::uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], t % 2 == 0 ? 2 * t : 3 * t) << t;
}

// A loop whose trip count differs per lane: every lane runs its own count.
TEST(PtxSimControl, LanesLeaveALoopAfterTheirOwnTripCount) {
  const std::string ptx = kernel(".reg .b32 %r<10>;\n.reg .b64 %rd<4>;\n.reg .pred %p<2>;",
                                 "ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nmov.u32 %r9, 0;\nmov.u32 %r3, 0;\n"
                                 "LOOP:\nsetp.ge.u32 %p1, %r3, %r1;\n@%p1 bra DONE;\nadd.s32 %r9, %r9, %r3;\n"
                                 "add.s32 %r3, %r3, 1;\nbra LOOP;\nDONE:\n" +
                                     store_r9);
  std::vector<std::uint32_t> out(64, 0);
  run(ptx, out, 64);
  for (std::uint32_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], t * (t - 1) / 2) << t;
}

// bar.sync waits for the threads that have not exited: a CTA whose second half returns early
// still passes its barrier, and the barrier orders shared-memory stores before loads.
TEST(PtxSimBarriers, BarSyncCountsOnlyThreadsThatHaveNotExited) {
  const std::string ptx = kernel(".reg .b32 %r<10>;\n.reg .b64 %rd<4>;\n.reg .pred %p<2>;\n.shared .align 4 .b8 s[512];",
                                 "ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nsetp.ge.u32 %p1, %r1, 64;\n@%p1 ret;\n"
                                 "mov.u32 %r2, s;\nshl.b32 %r3, %r1, 2;\nadd.s32 %r4, %r2, %r3;\nadd.s32 %r5, %r1, 100;\n"
                                 "st.shared.u32 [%r4], %r5;\nbar.sync 0;\nxor.b32 %r6, %r1, 63;\nshl.b32 %r7, %r6, 2;\n"
                                 "add.s32 %r8, %r2, %r7;\nld.shared.u32 %r9, [%r8];\n" +
                                     store_r9);
  std::vector<std::uint32_t> out(128, 0);
  const auto counts = run(ptx, out, 128);
  for (std::uint32_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], (t ^ 63u) + 100) << t;
  for (std::uint32_t t = 64; t < 128; ++t) EXPECT_EQ(out[t], 0u) << t;
  EXPECT_EQ(counts.barriers, 2);  // one per warp that reached it
}

// cp.async's data lands in shared memory at the wait that covers its group, not before: the
// first group is there after wait_group 1, the second (two bytes copied, two zero-filled) only
// after wait_group 0.
TEST(PtxSimAsyncCopies, DataArrivesAtTheWaitThatCoversItsGroup) {
  const std::string copies = "ld.param.u64 %rd1, [out];\nmov.u32 %r1, s;\ncp.async.cg.shared.global [%r1], [%rd1], 16;\n"
                             "cp.async.commit_group;\ncp.async.ca.shared.global [%r1+16], [%rd1+4], 4, 2;\n"
                             "cp.async.commit_group;\ncp.async.wait_group 1;\nld.shared.u32 %r3, [%r1];\n";
  const std::string declarations = ".reg .b32 %r<10>;\n.reg .b64 %rd<4>;\n.shared .align 16 .b8 s[64];";
  const std::string ptx = kernel(declarations, copies + "cp.async.wait_group 0;\nld.shared.u32 %r5, [%r1+16];\n"
                                                       "st.global.u32 [%rd1+20], %r3;\nst.global.u32 [%rd1+28], %r5;\nret;");
  std::vector<std::uint32_t> out = {0x11111111, 0x22224444, 3, 4, 0, 0, 0, 0};
  run(ptx, out, 1);
  EXPECT_EQ(out[5], 0x11111111u);
  EXPECT_EQ(out[7], 0x4444u);
  // Reading the second group's bytes before the wait that covers them is a sanitizer finding.
  std::vector<std::uint32_t> again = {0x11111111, 0x22224444, 3, 4, 0, 0, 0, 0};
  EXPECT_THROW(run(kernel(declarations, copies + "ld.shared.u32 %r4, [%r1+16];\nret;"), again, 1), LaunchError);
}

void expect_launch_error(const std::string& ptx, unsigned threads, std::vector<std::string> parts,
                         std::size_t out_words = 64) {
  std::vector<std::uint32_t> out(out_words, 0);
  try {
    run(ptx, out, threads);
    ADD_FAILURE() << "no error; expected one containing " << parts.front();
  } catch (const LaunchError& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(PtxSimSanitizer, AGlobalStoreOutsideTheBuffersIsReportedAtItsLine) {
  expect_launch_error(per_thread_u32("add.s32 %r1, %r1, 64;\nmov.u32 %r9, 1;"), 32,
                      {"PTX line 16", "st.global.u32", "outside every buffer", "thread (0,0,0)", "out"});
}

TEST(PtxSimSanitizer, AMisalignedVectorLoadIsReported) {
  const std::string ptx = kernel(".reg .b64 %rd<4>;\n.reg .f32 %f<5>;",
                                 "ld.param.u64 %rd1, [out];\nld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+4];\nret;");
  expect_launch_error(ptx, 1, {"misaligned", "ld.global.v4.f32", "PTX line 9"});
}

TEST(PtxSimSanitizer, ASharedAccessBeyondTheCtasSharedMemoryIsReported) {
  const std::string ptx = kernel(".reg .b32 %r<4>;\n.shared .align 4 .b8 s[128];",
                                 "mov.u32 %r1, s;\nst.shared.u32 [%r1+128], %r1;\nret;");
  expect_launch_error(ptx, 1, {"shared-memory access at 128", "128 bytes"});
}

TEST(PtxSimSanitizer, ABarrierReachedByPartOfAWarpIsReported) {
  const std::string ptx = kernel(".reg .b32 %r<4>;\n.reg .pred %p<2>;",
                                 "mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 16;\n@%p1 bra SKIP;\nbar.sync 0;\n"
                                 "SKIP:\nbar.sync 0;\nret;");
  expect_launch_error(ptx, 32, {"only some of the warp's lanes", "bar.sync"});
}

TEST(PtxSimSanitizer, WarpsWaitingAtDifferentNamedBarriersAreADeadlock) {
  const std::string ptx = kernel(".reg .b32 %r<4>;\n.reg .pred %p<2>;",
                                 "mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 32;\n@%p1 bra FIRST;\nbar.sync 2, 64;\n"
                                 "ret;\nFIRST:\nbar.sync 1, 64;\nret;");
  expect_launch_error(ptx, 64, {"deadlock", "warp 0 waits at barrier 1", "warp 1 waits at barrier 2"});
}

TEST(PtxSimDecoding, AnUnsupportedFormIsNamedWithItsKernelAndLine) {
  const std::string ptx = kernel(".reg .b32 %r<4>;", "mov.u32 %r1, 1;\npopc.b32 %r2, %r1;\nret;");
  try {
    Program::load(ptx, "k");
    ADD_FAILURE() << "popc decoded";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("popc.b32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kernel k, PTX line 8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gemmlab
