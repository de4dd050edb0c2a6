// The PTX parser, on statements written from the syntax of NVIDIA's PTX ISA (chapters "Syntax",
// "State Spaces, Types, and Variables" and "Instruction Statements"), not from the kernels.
#include <gtest/gtest.h>

#include "gemmlab/ptx.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using ptx::Operand;

// A module with one kernel around `body`, its registers declared.
ptx::Module with_body(const std::string& body) {
  return ptx::parse(".version 8.0\n.target sm_90a\n.address_size 64\n"
                    ".visible .entry k(.param .u64 k_param_0)\n{\n"
                    ".reg .pred %p<4>;\n.reg .b32 %r<10>;\n.reg .f32 %f<8>;\n.reg .b64 %rd<6>;\n" +
                    body + "\n}\n");
}

const ptx::Instruction& only_instruction(const ptx::Module& m) {
  EXPECT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(m.kernels[0].body.size(), 1u);
  return m.kernels[0].body.at(0);
}

TEST(PtxParse, ModuleDirectivesParametersAndPerformanceDirectives) {
  const ptx::Module m = ptx::parse(R"(
// a comment
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 shared_raw[];   /* dynamic shared memory */

.visible .entry gemm(
    .param .u32 gemm_param_0,
    .param .f32 gemm_param_1,
    .param .align 64 .b8 gemm_param_2[128]
)
.maxntid 384, 1, 1
.minnctapersm 1
{
    .reg .pred %p<10>;
    .reg .b32 %r<31>;
    ret;
}
)");
  EXPECT_EQ(m.version, "8.0");
  EXPECT_EQ(m.targets, (std::vector<std::string>{"sm_90a"}));
  EXPECT_EQ(m.address_size, 64);
  ASSERT_EQ(m.globals.size(), 1u);
  EXPECT_EQ(m.globals[0].space, "shared");
  EXPECT_EQ(m.globals[0].name, "shared_raw");
  EXPECT_EQ(m.globals[0].array, 0) << "name[]: an array of no declared size";
  EXPECT_EQ(m.globals[0].align, 16);
  EXPECT_TRUE(m.globals[0].external);
  const ptx::Kernel& k = m.kernel("gemm");
  EXPECT_TRUE(k.entry);
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].type, "u32");
  EXPECT_EQ(k.params[1].type, "f32");
  EXPECT_EQ(k.params[2].type, "b8");
  EXPECT_EQ(k.params[2].array, 128);
  EXPECT_EQ(k.params[2].align, 64);
  EXPECT_EQ(k.performance.at(".maxntid"), (std::vector<std::int64_t>{384, 1, 1}));
  EXPECT_EQ(k.performance.at(".minnctapersm"), (std::vector<std::int64_t>{1}));
  ASSERT_EQ(k.declarations.size(), 2u);
  EXPECT_EQ(k.declarations[0].type, "pred");
  EXPECT_EQ(k.declarations[0].count, 10) << "%p<10> declares %p0 ... %p9";
  EXPECT_EQ(k.declarations[1].name, "%r");
  ASSERT_EQ(k.body.size(), 1u);
  EXPECT_EQ(k.body[0].opcode, "ret");
  EXPECT_TRUE(k.body[0].operands.empty());
}

TEST(PtxParse, GuardsLabelsAndBranches) {
  const ptx::Module m = with_body("@!%p1 bra $L__BB0_2;\nadd.s32 %r1, %r1, 1;\n$L__BB0_2:\n@%p2 ret;");
  const ptx::Kernel& k = m.kernels[0];
  ASSERT_EQ(k.body.size(), 3u);
  EXPECT_EQ(k.body[0].guard, "%p1");
  EXPECT_TRUE(k.body[0].guard_negated);
  EXPECT_EQ(k.body[0].opcode, "bra");
  ASSERT_EQ(k.body[0].operands.size(), 1u);
  EXPECT_EQ(k.body[0].operands[0].name, "$L__BB0_2");
  EXPECT_EQ(k.labels.at("$L__BB0_2"), 2u) << "a label names the instruction after it";
  EXPECT_EQ(k.body[2].guard, "%p2");
  EXPECT_FALSE(k.body[2].guard_negated);
  EXPECT_EQ(k.body[1].line + 2, k.body[2].line);
}

TEST(PtxParse, OpcodeModifiersVectorsAndAddresses) {
  const ptx::Module m = with_body("ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+16];");
  const ptx::Instruction& in = only_instruction(m);
  EXPECT_EQ(in.opcode, "ld");
  EXPECT_EQ(in.modifiers, (std::vector<std::string>{"global", "nc", "v4", "f32"}));
  EXPECT_EQ(in.form(), "ld.global.nc.v4.f32");
  EXPECT_TRUE(in.has("nc"));
  EXPECT_FALSE(in.has("shared"));
  ASSERT_EQ(in.operands.size(), 2u);
  ASSERT_EQ(in.operands[0].kind, Operand::Kind::vector);
  ASSERT_EQ(in.operands[0].elements.size(), 4u);
  EXPECT_EQ(in.operands[0].elements[3].name, "%f4");
  EXPECT_EQ(in.operands[1].kind, Operand::Kind::address);
  EXPECT_EQ(in.operands[1].name, "%rd1");
  EXPECT_EQ(in.operands[1].integer, 16);
  EXPECT_EQ(in.text, "ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+16]");

  const ptx::Instruction param = only_instruction(with_body("ld.param.u64 %rd1, [k_param_0];"));
  EXPECT_EQ(param.operands[1].name, "k_param_0");
  EXPECT_EQ(param.operands[1].integer, 0);
  const ptx::Instruction negative = only_instruction(with_body("st.shared.f32 [%r2+-4], %f1;"));
  EXPECT_EQ(negative.operands[0].integer, -4);
  const ptx::Instruction special = only_instruction(with_body("mov.u32 %r1, %tid.x;"));
  EXPECT_EQ(special.operands[1].name, "%tid.x");
}

TEST(PtxParse, IntegerAndFloatingPointConstants) {
  const ptx::Kernel k = with_body("mov.f32 %f1, 0f3F800000;\nmov.b64 %rd1, 0d3FF0000000000000;\n"
                                  "add.s32 %r1, %r1, -4;\nand.b32 %r2, %r2, 0x1F;\nmov.f32 %f2, -0f40000000;")
                            .kernels[0];
  ASSERT_EQ(k.body.size(), 5u);
  EXPECT_EQ(k.body[0].operands[1].kind, Operand::Kind::immediate);
  EXPECT_EQ(k.body[0].operands[1].bits, 0x3F800000u) << "0f: the eight hex digits of an IEEE single (1.0f)";
  EXPECT_FALSE(k.body[0].operands[1].fp64);
  EXPECT_EQ(k.body[1].operands[1].bits, 0x3FF0000000000000u) << "0d: sixteen hex digits of a double (1.0)";
  EXPECT_TRUE(k.body[1].operands[1].fp64);
  EXPECT_FALSE(k.body[2].operands[2].bits.has_value());
  EXPECT_EQ(k.body[2].operands[2].integer, -4);
  EXPECT_EQ(k.body[3].operands[2].integer, 31);
  EXPECT_EQ(k.body[4].operands[1].bits, 0xC0000000u) << "-2.0f: the sign bit flipped";
}

TEST(PtxParse, SetpPairsNegatedPredicatesAndSinks) {
  const ptx::Kernel k = with_body("setp.lt.s32 %p1|%p2, %r1, %r2;\nselp.b32 %r3, 1, 0, !%p1;\n"
                                  "mbarrier.arrive.shared::cta.b64 _, [%r4];")
                            .kernels[0];
  EXPECT_EQ(k.body[0].operands[0].name, "%p1");
  EXPECT_EQ(k.body[0].operands[0].pair, "%p2");
  EXPECT_TRUE(k.body[1].operands[3].negated);
  EXPECT_EQ(k.body[1].operands[3].name, "%p1");
  EXPECT_EQ(k.body[2].modifiers, (std::vector<std::string>{"arrive", "shared::cta", "b64"}));
  EXPECT_EQ(k.body[2].operands[0].kind, Operand::Kind::sink);
}

TEST(PtxParse, TensorCopyAddressesCarryTheirCoordinates) {
  const ptx::Instruction in = only_instruction(
      with_body("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                "[%r1], [%rd4, {%r2, %r3}], [%r5];"));
  EXPECT_EQ(in.opcode, "cp");
  EXPECT_TRUE(in.has("shared::cluster"));
  EXPECT_TRUE(in.has("mbarrier::complete_tx::bytes"));
  ASSERT_EQ(in.operands.size(), 3u);
  EXPECT_EQ(in.operands[1].kind, Operand::Kind::address);
  EXPECT_EQ(in.operands[1].name, "%rd4");
  ASSERT_EQ(in.operands[1].elements.size(), 2u);
  EXPECT_EQ(in.operands[1].elements[1].name, "%r3");
}

// A `{ }` block opens a scope (PTX ISA, "Statements"): two blocks may declare the same name,
// which then names two registers; outside them the kernel's own registers are meant.
TEST(PtxParse, NamesDeclaredInABlockAreThatBlocksOwn) {
  const ptx::Kernel k = with_body("{\n.reg .pred p;\nsetp.ne.b32 p, %r1, 0;\n@p add.s32 %r2, %r2, 1;\n}\n"
                                  "{\n.reg .pred p;\n.reg .b32 t<2>;\nsetp.eq.b32 p, %r1, 0;\nmov.b32 t1, %r3;\n}\n"
                                  "mov.b32 %r4, %r1;")
                            .kernels[0];
  ASSERT_EQ(k.body.size(), 5u);
  EXPECT_EQ(k.body[0].operands[0].name, "p#1");
  EXPECT_EQ(k.body[1].guard, "p#1");
  EXPECT_EQ(k.body[2].operands[0].name, "p#2") << "each block's p is a register of its own";
  EXPECT_EQ(k.body[3].operands[0].name, "t1#2") << "t1 of the second block's t<2>";
  EXPECT_EQ(k.body[3].operands[1].name, "%r3");
  EXPECT_EQ(k.body[4].operands[1].name, "%r1");
  std::vector<std::string> inner;
  for (const auto& d : k.declarations)
    if (!d.suffix.empty()) inner.push_back(d.name + d.suffix + (d.count ? "<" + std::to_string(d.count) + ">" : ""));
  EXPECT_EQ(inner, (std::vector<std::string>{"p#1", "p#2", "t#2<2>"}));
}

TEST(PtxParse, MalformedInputIsAParseErrorNamingTheLine) {
  EXPECT_THROW_MENTIONING(with_body("add.s32 %r1, %r1, 1\nret;"), ptx::ParseError, {"line 11", "add.s32"});
  EXPECT_THROW_MENTIONING(ptx::parse(".version 8.0\n.entry k() {\n ret;\n"), ptx::ParseError, {"'}'", "k"});
  EXPECT_THROW_MENTIONING(ptx::parse(".version 8.0\n/* open"), ptx::ParseError, {"line 2", "comment"});
  EXPECT_THROW_MENTIONING(ptx::parse(".entry k() { mov.u32 %r1, #; }"), ptx::ParseError, {"'#'"});
  EXPECT_THROW_MENTIONING(ptx::parse(".entry k() { mov.f32 %f1, 0f3F80; }"), ptx::ParseError, {"0f3F80"});
  EXPECT_THROW_MENTIONING(ptx::parse(".entry k() { add.u64 %rd1, %rd1, 99999999999999999999; }"), ptx::ParseError,
                          {"overflows"});
  EXPECT_THROW_MENTIONING(ptx::parse(".entry a() { ret; }").kernel("b"), ptx::ParseError, {"no kernel b", "a"});
  // Found by fuzz_ptx: thousands of nested braces as an operand overflowed the stack. The PTX ISA
  // ("Instruction Operands", vectors as operands) has a vector operand list scalars, never vectors.
  EXPECT_THROW_MENTIONING(ptx::parse(".entry k() { mov.b64 {{%r1, %r2}}, %rd1; }"), ptx::ParseError,
                          {"vector operand inside a vector operand"});
  EXPECT_THROW_MENTIONING(ptx::parse(".entry k() { m" + std::string(100000, '{') + " }"), ptx::ParseError,
                          {"vector operand inside a vector operand"});
}

}  // namespace
}  // namespace gemmlab
