// Problem: packed layouts, validation of sizes / leading dimensions / scalars / pointers,
// and the parsers of shapes and precisions.
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "gemmlab/problem.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

constexpr std::int64_t two31 = std::int64_t{1} << 31;

TEST(ProblemPacked, LeadingDimensionsEqualTheRowLengths) {
  const Problem p = Problem::packed(7, 13, 5, Precision::fp64, -0.75, 1.25);
  EXPECT_EQ(p.m, 7);
  EXPECT_EQ(p.n, 13);
  EXPECT_EQ(p.k, 5);
  EXPECT_EQ(p.lda, 5) << "A is M x K: lda must be K";
  EXPECT_EQ(p.ldb, 13) << "B is K x N: ldb must be N";
  EXPECT_EQ(p.ldc, 13) << "C is M x N: ldc must be N";
  EXPECT_EQ(p.precision, Precision::fp64);
  EXPECT_EQ(p.alpha, -0.75);
  EXPECT_EQ(p.beta, 1.25);
  EXPECT_EQ(p.a_elements(), 35u);
  EXPECT_EQ(p.b_elements(), 65u);
  EXPECT_EQ(p.c_elements(), 91u);
  EXPECT_EQ(p.shape(), "7x13x5");
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 7 * 13 * 5);
  EXPECT_NO_THROW(validate(p));
}

TEST(ProblemPacked, DefaultsAreFp32AlphaOneBetaZero) {
  const Problem p = Problem::packed(2, 3, 4);
  EXPECT_EQ(p.precision, Precision::fp32);
  EXPECT_EQ(p.alpha, 1.0);
  EXPECT_EQ(p.beta, 0.0);
}

TEST(ProblemPacked, ZeroDimensionsGetLeadingDimensionOneAndNoElements) {
  const Problem p = Problem::packed(0, 0, 0);
  EXPECT_EQ(p.lda, 1);
  EXPECT_EQ(p.ldb, 1);
  EXPECT_EQ(p.ldc, 1);
  EXPECT_EQ(p.a_elements(), 0u);
  EXPECT_EQ(p.b_elements(), 0u);
  EXPECT_EQ(p.c_elements(), 0u);
  EXPECT_EQ(p.flops(), 0.0);
}

TEST(ProblemElements, PaddingBetweenRowsIsCountedButNotAfterTheLastRow) {
  Problem p = Problem::packed(4, 6, 5);
  p.lda = 8;
  p.ldb = 9;
  p.ldc = 10;
  EXPECT_EQ(p.a_elements(), 3u * 8 + 5) << "A: (M-1)*lda + K";
  EXPECT_EQ(p.b_elements(), 4u * 9 + 6) << "B: (K-1)*ldb + N";
  EXPECT_EQ(p.c_elements(), 3u * 10 + 6) << "C: (M-1)*ldc + N";
}

// A transposed operand is stored the other way round: A as K x M (lda >= M), B as N x K (ldb >= K).
TEST(ProblemTransposes, StoredShapesLeadingDimensionsAndElementsFollowTheFlags) {
  Problem p = Problem::packed(3, 5, 7);  // A 3x7, B 7x5
  EXPECT_EQ(p.transposes(), "NN");
  p.trans_a = true;
  p.lda = 3;  // A stored 7 x 3
  EXPECT_EQ(p.transposes(), "TN");
  EXPECT_EQ(p.a_rows(), 7);
  EXPECT_EQ(p.a_cols(), 3);
  EXPECT_EQ(p.a_elements(), 21u);
  EXPECT_NO_THROW(validate(p));
  p.lda = 2;
  EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"lda=2", "3"});
  p.lda = 4;
  EXPECT_EQ(p.a_elements(), 6u * 4 + 3);  // padding between the 7 stored rows, none after the last
  p.trans_b = true;  // B stored 5 x 7: ldb >= 7
  EXPECT_EQ(p.transposes(), "TT");
  EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"ldb=5", "7"});
  p.ldb = 7;
  EXPECT_NO_THROW(validate(p));
  EXPECT_EQ(p.b_elements(), 35u);
  EXPECT_THROW_MENTIONING(require_untransposed(p, "somelib"), std::invalid_argument, {"somelib", "TT"});
}

TEST(ProblemValidate, ZeroDimensionsAreLegal) {
  for (auto [m, n, k] : {std::tuple{0, 5, 3}, std::tuple{5, 0, 3}, std::tuple{5, 3, 0},
                         std::tuple{0, 0, 0}, std::tuple{0, 0, 7}}) {
    for (Precision prec : {Precision::fp32, Precision::fp64}) {
      const Problem p = Problem::packed(m, n, k, prec, 1.0, 0.5);
      EXPECT_NO_THROW(validate(p)) << "shape " << p.shape() << " should be a legal (empty) GEMM";
    }
  }
}

TEST(ProblemValidate, NegativeDimensionThrowsNamingIt) {
  {
    Problem p = Problem::packed(4, 4, 4);
    p.m = -1;
    EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"m"});
  }
  {
    Problem p = Problem::packed(4, 4, 4);
    p.n = -3;
    EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"n"});
  }
  {
    Problem p = Problem::packed(4, 4, 4);
    p.k = -2;
    EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"k"});
  }
  EXPECT_THROW_MENTIONING(validate(Problem::packed(-1, 4, 4)), std::invalid_argument, {"m"});
}

TEST(ProblemValidate, DimensionAbove2To31ThrowsNamingIt) {
  EXPECT_THROW_MENTIONING(validate(Problem::packed(two31 + 1, 1, 1)), std::invalid_argument, {"m"});
  EXPECT_THROW_MENTIONING(validate(Problem::packed(1, two31 + 1, 1)), std::invalid_argument, {"n"});
  EXPECT_THROW_MENTIONING(validate(Problem::packed(1, 1, two31 + 1)), std::invalid_argument, {"k"});
}

TEST(ProblemValidate, ByteSizeOverflowOfAThrowsNamingA) {
  // (M-1)*lda + K elements of 4 bytes: 2^31 * 2^31 * 4 = 2^64 bytes.
  const Problem p = Problem::packed(two31, 1, two31);
  EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"A"});
  EXPECT_THROW_CONTAINING(validate(p), std::invalid_argument, {"overflow"});
}

TEST(ProblemValidate, ByteSizeOverflowOfBThrowsNamingB) {
  const Problem p = Problem::packed(1, two31, two31);
  EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"B"});
  EXPECT_THROW_CONTAINING(validate(p), std::invalid_argument, {"overflow"});
}

TEST(ProblemValidate, ByteSizeOverflowOfCThrowsNamingC) {
  const Problem p = Problem::packed(two31, two31, 1);
  EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"C"});
  EXPECT_THROW_CONTAINING(validate(p), std::invalid_argument, {"overflow"});
}

TEST(ProblemValidate, HugeLeadingDimensionOverflowThrowsNamingTheOperand) {
  // Small dimensions, but (M-1)*lda overflows int64 in elements already.
  Problem p = Problem::packed(4, 2, 2);
  p.lda = std::numeric_limits<std::int64_t>::max() / 2;
  EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"A"});
  // Elements fit int64 but bytes do not: 2^61 + ... elements x 8 bytes.
  Problem q = Problem::packed(2, 2, 2, Precision::fp64);
  q.ldc = std::int64_t{1} << 61;
  EXPECT_THROW_MENTIONING(validate(q), std::invalid_argument, {"C"});
  // Large but representable: fine.
  Problem r = Problem::packed(2, 2, 2, Precision::fp64);
  r.ldc = std::int64_t{1} << 40;
  EXPECT_NO_THROW(validate(r));
}

// lda below K, ldb or ldc below N: rejected naming the field; at the minimum, accepted.
TEST(ProblemValidate, LeadingDimensionBelowItsMinimumThrowsNamingIt) {
  struct Case {
    std::int64_t Problem::*ld;
    std::int64_t minimum;  // of 4 x 6 x 5
    const char* name;
  };
  for (const Case c : {Case{&Problem::lda, 5, "lda"}, Case{&Problem::ldb, 6, "ldb"}, Case{&Problem::ldc, 6, "ldc"}}) {
    Problem p = Problem::packed(4, 6, 5);
    p.*c.ld = c.minimum - 1;
    EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {c.name});
    p.*c.ld = c.minimum;
    EXPECT_NO_THROW(validate(p)) << c.name;
  }
}

TEST(ProblemValidate, ZeroOrNegativeLeadingDimensionThrowsEvenForEmptyMatrices) {
  Problem p = Problem::packed(0, 0, 0);
  p.lda = 0;
  EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"lda"});
  Problem q = Problem::packed(3, 3, 3);
  q.ldb = -3;
  EXPECT_THROW_MENTIONING(validate(q), std::invalid_argument, {"ldb"});
}

TEST(ProblemValidate, NonFiniteAlphaThrowsNamingAlpha) {
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    const Problem p = Problem::packed(3, 3, 3, Precision::fp32, bad, 0.0);
    EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"alpha"}) << "alpha = " << bad;
  }
}

TEST(ProblemValidate, NonFiniteBetaThrowsNamingBeta) {
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    const Problem p = Problem::packed(3, 3, 3, Precision::fp64, 1.0, bad);
    EXPECT_THROW_MENTIONING(validate(p), std::invalid_argument, {"beta"}) << "beta = " << bad;
  }
}

TEST(ProblemValidate, NullOperandThatWouldBeUsedThrowsNamingIt) {
  float a = 0, b = 0, c = 0;
  const Problem p = Problem::packed(1, 1, 1);
  EXPECT_NO_THROW(validate(p, &a, &b, &c));
  EXPECT_THROW_MENTIONING(validate(p, nullptr, &b, &c), std::invalid_argument, {"A"});
  EXPECT_THROW_MENTIONING(validate(p, &a, nullptr, &c), std::invalid_argument, {"B"});
  EXPECT_THROW_MENTIONING(validate(p, &a, &b, nullptr), std::invalid_argument, {"C"});
}

TEST(ProblemValidate, NullOperandThatIsNeverTouchedIsAccepted) {
  float c = 0;
  // M or N zero: nothing is read or written.
  EXPECT_NO_THROW(validate(Problem::packed(0, 4, 4), nullptr, nullptr, nullptr));
  EXPECT_NO_THROW(validate(Problem::packed(4, 0, 4), nullptr, nullptr, nullptr));
  // K zero: C = beta*C, A and B are not read.
  EXPECT_NO_THROW(validate(Problem::packed(1, 1, 0, Precision::fp32, 1.0, 2.0), nullptr, nullptr, &c));
  // alpha zero: C = beta*C as well.
  EXPECT_NO_THROW(validate(Problem::packed(3, 3, 3, Precision::fp32, 0.0, 2.0), nullptr, nullptr, &c));
  EXPECT_THROW_MENTIONING(validate(Problem::packed(1, 1, 0), nullptr, nullptr, nullptr),
                          std::invalid_argument, {"C"});
}

TEST(ProblemValidate, PointerCheckAlsoChecksTheProblem) {
  float a = 0, b = 0, c = 0;
  Problem p = Problem::packed(1, 1, 1);
  p.ldc = 0;
  EXPECT_THROW_MENTIONING(validate(p, &a, &b, &c), std::invalid_argument, {"ldc"});
}

TEST(ParseShape, ParsesMxNxKIntoAPackedFp32Problem) {
  const Problem p = parse_shape("7x13x5");
  EXPECT_EQ(p.m, 7);
  EXPECT_EQ(p.n, 13);
  EXPECT_EQ(p.k, 5);
  EXPECT_EQ(p.lda, 5);
  EXPECT_EQ(p.ldb, 13);
  EXPECT_EQ(p.ldc, 13);
  EXPECT_EQ(p.precision, Precision::fp32);
  EXPECT_EQ(p.alpha, 1.0);
  EXPECT_EQ(p.beta, 0.0);
  EXPECT_EQ(parse_shape("1000x1x1000").shape(), "1000x1x1000");
  EXPECT_EQ(parse_shape("0x0x0").shape(), "0x0x0");
  EXPECT_EQ(parse_shape("007x1x2").m, 7);
}

TEST(ParseShape, RejectsMalformedText) {
  for (const char* bad : {"", "7", "7x13", "7x13x", "x13x5", "7xx5", "7x13x5x2", "7x13x5 ", " 7x13x5",
                          "axbxc", "7X13X5", "7x-1x5", "-7x1x5", "+7x1x5", "7x1.5x5", "7,13,5",
                          "99999999999999999999x1x1"}) {
    EXPECT_THROW(parse_shape(bad), std::invalid_argument) << "shape text '" << bad << "' should be rejected";
  }
}

TEST(ParseShape, MessageQuotesTheText) {
  EXPECT_THROW_CONTAINING(parse_shape("12xfoo"), std::invalid_argument, {"12xfoo"});
}

TEST(ParseShape, RejectsDimensionsTooLarge) {
  EXPECT_THROW(parse_shape("3000000000x1x1"), std::invalid_argument);
}

TEST(ParseShapeAndTransposes, ReadsTheTransposesAndTheStoredOperandsLeadingDimensions) {
  // A stored K x M when transposed (lda = M), B stored N x K (ldb = K); C is M x N either way.
  const Problem nt = parse_shape_and_transposes("16x4096x512:NT");
  EXPECT_EQ(nt.shape(), "16x4096x512");
  EXPECT_FALSE(nt.trans_a);
  EXPECT_TRUE(nt.trans_b);
  EXPECT_EQ(nt.lda, 512);
  EXPECT_EQ(nt.ldb, 512);
  EXPECT_EQ(nt.ldc, 4096);
  const Problem tn = parse_shape_and_transposes("7x13x5:TN");
  EXPECT_TRUE(tn.trans_a);
  EXPECT_FALSE(tn.trans_b);
  EXPECT_EQ(tn.lda, 7);
  EXPECT_EQ(tn.ldb, 13);
  const Problem tt = parse_shape_and_transposes("7x13x5:TT");
  EXPECT_EQ(tt.lda, 7);
  EXPECT_EQ(tt.ldb, 5);
  EXPECT_EQ(parse_shape_and_transposes("7x13x5:NN"), parse_shape("7x13x5"));
  EXPECT_EQ(parse_shape_and_transposes("7x13x5"), parse_shape("7x13x5"));
  for (const char* text : {"7x13x5", "7x13x5:TN", "7x13x5:NT", "7x13x5:TT"})
    EXPECT_EQ(shape_and_transposes(parse_shape_and_transposes(text)), text);
  EXPECT_EQ(shape_and_transposes(parse_shape_and_transposes("7x13x5:NN")), "7x13x5");
  // An empty dimension still leaves leading dimensions of at least 1 (BLAS's LDA >= max(1, rows)).
  const Problem empty = parse_shape_and_transposes("0x3x0:TT");
  EXPECT_EQ(empty.lda, 1);
  EXPECT_EQ(empty.ldb, 1);
  EXPECT_NO_THROW(validate(empty));
}

TEST(ParseShapeAndTransposes, RejectsAnythingButTheFourTransposes) {
  for (const char* bad : {"7x13x5:", "7x13x5:N", "7x13x5:nt", "7x13x5:NTT", "7x13x5:CN", "7x13x5 :NT",
                          "7x13:NT", ":NT", "7x13x5:NT:NT"})
    EXPECT_THROW_CONTAINING(parse_shape_and_transposes(bad), std::invalid_argument, {bad});
}

TEST(ParsePrecision, RoundTripsEveryPrecisionName) {
  for (Precision p : {Precision::fp32, Precision::fp64, Precision::fp16, Precision::bf16, Precision::int8}) {
    EXPECT_EQ(parse_precision(to_string(p)), p) << "name " << to_string(p);
  }
  EXPECT_EQ(to_string(Precision::fp32), "fp32");
  EXPECT_EQ(to_string(Precision::fp64), "fp64");
}

TEST(ParsePrecision, UnknownNameThrowsListingTheAllowedValues) {
  for (const char* bad : {"", "FP32", "float", "fp 32", "fp32 ", "f32", "double"}) {
    EXPECT_THROW_CONTAINING(parse_precision(bad), std::invalid_argument, {"fp32", "fp64"})
        << "text '" << bad << "'";
  }
}

TEST(PrecisionTraits, ElementSizesAndEpsilons) {
  EXPECT_EQ(element_size(Precision::fp32), 4u);
  EXPECT_EQ(element_size(Precision::fp64), 8u);
  EXPECT_EQ(element_size(Precision::fp16), 2u);
  EXPECT_EQ(element_size(Precision::bf16), 2u);
  EXPECT_EQ(element_size(Precision::int8), 1u);
  EXPECT_EQ(machine_epsilon(Precision::fp32), static_cast<double>(std::numeric_limits<float>::epsilon()));
  EXPECT_EQ(machine_epsilon(Precision::fp64), std::numeric_limits<double>::epsilon());
  EXPECT_EQ(machine_epsilon(Precision::fp16), std::ldexp(1.0, -10));
  EXPECT_EQ(machine_epsilon(Precision::bf16), std::ldexp(1.0, -7));
}

}  // namespace
}  // namespace gemmlab
