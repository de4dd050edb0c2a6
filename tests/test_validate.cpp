// The validator: HostCase's operands and poison, check() against correct and corrupted
// results, the tolerance, and the CBLAS references against plain fp64 loops.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/validate.hpp"
#include "gemmlab/verify.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::contains;

// --- element access in a buffer of the problem's precision ----------------------------------
double get(const std::byte* base, std::size_t i, Precision p) {
  if (p == Precision::fp32) return reinterpret_cast<const float*>(base)[i];
  return reinterpret_cast<const double*>(base)[i];
}
void put(std::byte* base, std::size_t i, double v, Precision p) {
  if (p == Precision::fp32) reinterpret_cast<float*>(base)[i] = static_cast<float>(v);
  else reinterpret_cast<double*>(base)[i] = v;
}
void put_poison(std::byte* base, std::size_t i, Precision p) {
  if (p == Precision::fp32) reinterpret_cast<float*>(base)[i] = poison_fp32();
  else reinterpret_cast<double*>(base)[i] = poison_fp64();
}
bool is_poison(const std::byte* base, std::size_t i, Precision p) {
  if (p == Precision::fp32) {
    std::uint32_t bits;
    std::memcpy(&bits, base + 4 * i, 4);
    return bits == std::bit_cast<std::uint32_t>(poison_fp32());
  }
  std::uint64_t bits;
  std::memcpy(&bits, base + 8 * i, 8);
  return bits == std::bit_cast<std::uint64_t>(poison_fp64());
}
double rounded(double x, Precision p) { return p == Precision::fp32 ? double(float(x)) : x; }

// A correct result for a HostCase, computed independently of HostCase::compute_expected: the
// operands are read back from the case's buffers and multiplied with naive_gemm_fp64.
struct Solution {
  HostBuffer<std::byte> c;     // same layout as c_initial, guard included
  std::vector<double> scale;   // S = |alpha| |A||B| + |beta| |C0|, packed m x n
};

Solution solve(const HostCase& hc) {
  const Problem& p = hc.problem();
  const Precision prec = p.precision;
  const auto m = static_cast<std::size_t>(p.m), n = static_cast<std::size_t>(p.n),
             k = static_cast<std::size_t>(p.k);
  std::vector<double> a(m * k), b(k * n), c(m * n, 0.0), abs_a(m * k), abs_b(k * n), abs_c(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < k; ++j) a[i * k + j] = get(hc.a().data(), i * static_cast<std::size_t>(p.lda) + j, prec);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < n; ++j) b[i * n + j] = get(hc.b().data(), i * static_cast<std::size_t>(p.ldb) + j, prec);
  if (p.beta != 0)
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] = get(hc.c_initial().data(), i * static_cast<std::size_t>(p.ldc) + j, prec);
  for (std::size_t i = 0; i < a.size(); ++i) abs_a[i] = std::abs(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) abs_b[i] = std::abs(b[i]);
  for (std::size_t i = 0; i < c.size(); ++i) abs_c[i] = std::abs(c[i]);
  const double alpha = rounded(p.alpha, prec), beta = rounded(p.beta, prec);
  naive_gemm_fp64(p.m, p.n, p.k, alpha, a.data(), b.data(), beta, c.data());
  naive_gemm_fp64(p.m, p.n, p.k, std::abs(alpha), abs_a.data(), abs_b.data(), std::abs(beta), abs_c.data());

  Solution s{HostBuffer<std::byte>(hc.c_initial().size()), std::move(abs_c)};
  std::memcpy(s.c.data(), hc.c_initial().data(), hc.c_initial().size());
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) put(s.c.data(), i * static_cast<std::size_t>(p.ldc) + j, c[i * n + j], prec);
  return s;
}

std::size_t index_of(const Problem& p, std::int64_t i, std::int64_t j) {
  return static_cast<std::size_t>(i * p.ldc + j);
}
std::string element_name(std::int64_t i, std::int64_t j) {
  return "C[" + std::to_string(i) + "][" + std::to_string(j) + "]";
}

Problem make(const char* shape, Precision prec, double alpha, double beta, std::int64_t pad = 0) {
  Problem p = parse_shape(shape);
  if (pad > 0) p = with_padding(p, pad);
  p.precision = prec;
  p.alpha = alpha;
  p.beta = beta;
  return p;
}

std::string describe(const Problem& p) {
  return p.shape() + " " + std::string(to_string(p.precision)) + " alpha=" + std::to_string(p.alpha) +
         " beta=" + std::to_string(p.beta) + " lda/ldb/ldc=" + std::to_string(p.lda) + "/" +
         std::to_string(p.ldb) + "/" + std::to_string(p.ldc);
}

// Problems the validator is exercised on: both precisions, beta zero and not, padded or not.
std::vector<Problem> validator_problems() {
  return {make("7x13x5", Precision::fp32, 1.0, 0.0),
          make("7x13x5", Precision::fp64, -0.75, 1.25, 3),
          make("9x11x40", Precision::fp32, -0.75, 1.25, 3),
          make("6x5x17", Precision::fp64, 1.0, 0.0, 5),
          make("1x1x1", Precision::fp32, 2.0, -1.0)};
}

// Calls `check(p, hc, s)` for each of the validator problems, with its HostCase (seed 42, expected
// result from plain loops) and a correct result `s` for it.
template <class Check>
void for_each_solved_case(Check&& check) {
  for (const Problem& p : validator_problems()) {
    SCOPED_TRACE(describe(p));
    HostCase hc(p, 42);
    hc.compute_expected(nullptr);
    Solution s = solve(hc);
    check(p, hc, s);
  }
}

// A copy of a result, to corrupt.
HostBuffer<std::byte> copy_of(const HostBuffer<std::byte>& c) {
  HostBuffer<std::byte> copy(c.size());
  std::memcpy(copy.data(), c.data(), c.size());
  return copy;
}

TEST(Tolerance, IsKPlusTwoTimesMachineEpsilon) {
  EXPECT_DOUBLE_EQ(tolerance(Problem::packed(4, 4, 100, Precision::fp32)),
                   102.0 * std::numeric_limits<float>::epsilon());
  EXPECT_DOUBLE_EQ(tolerance(Problem::packed(4, 4, 100, Precision::fp64)),
                   102.0 * std::numeric_limits<double>::epsilon());
  EXPECT_DOUBLE_EQ(tolerance(Problem::packed(4, 4, 0, Precision::fp32)),
                   2.0 * std::numeric_limits<float>::epsilon());
  EXPECT_DOUBLE_EQ(tolerance(Problem::packed(1, 1, 1, Precision::fp64)),
                   3.0 * std::numeric_limits<double>::epsilon());
}

TEST(HostCaseCheck, CorrectResultPassesWithEitherTruth) {
  const auto host_blas = open_fp64_truth();
  for (const Problem& p : validator_problems()) {
    SCOPED_TRACE(describe(p));
    for (Reference* truth : {static_cast<Reference*>(nullptr), host_blas.get()}) {
      HostCase hc(p, 42);
      hc.compute_expected(truth);
      const Solution s = solve(hc);
      const ValidationResult r = hc.check(s.c.data());
      EXPECT_TRUE(r.valid) << "a correct result was rejected (truth "
                           << (truth ? truth->name() : "plain loops") << "): " << r.reason;
      EXPECT_TRUE(r.reason.empty());
      EXPECT_DOUBLE_EQ(r.tolerance, tolerance(p));
      EXPECT_GE(r.max_rel_error, 0.0);
      EXPECT_LE(r.max_rel_error, r.tolerance);
    }
  }
}

TEST(HostCaseCheck, EmptyAndZeroDepthProblemsPassWithCorrectResult) {
  for (const Problem& p : {make("0x5x3", Precision::fp32, 1.0, 0.0), make("5x0x3", Precision::fp64, 1.0, 1.25),
                           make("5x4x0", Precision::fp32, 1.0, 1.25, 2), make("5x4x0", Precision::fp64, -0.75, 0.0)}) {
    SCOPED_TRACE(describe(p));
    HostCase hc(p, 3);
    hc.compute_expected(nullptr);
    const Solution s = solve(hc);
    const ValidationResult r = hc.check(s.c.data());
    EXPECT_TRUE(r.valid) << r.reason;
  }
}

TEST(HostCaseCheck, ASingleElementOffByFourTolerancesFailsAtEveryPosition) {
  for_each_solved_case([](const Problem& p, const HostCase& hc, const Solution& s) {
    const double tol = tolerance(p);
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t j = 0; j < p.n; ++j) {
        HostBuffer<std::byte> c = copy_of(s.c);
        const std::size_t at = index_of(p, i, j);
        const double scale = s.scale[static_cast<std::size_t>(i * p.n + j)];
        put(c.data(), at, get(c.data(), at, p.precision) + 4 * tol * scale, p.precision);
        const ValidationResult r = hc.check(c.data());
        EXPECT_FALSE(r.valid) << element_name(i, j) << " was moved by 4x the tolerance (relative to S = "
                              << scale << ") and the check still passed";
        EXPECT_TRUE(contains(r.reason, element_name(i, j)))
            << "the reason should name " << element_name(i, j) << ", got: " << r.reason;
        EXPECT_GT(r.max_rel_error, 3 * tol) << element_name(i, j);
        EXPECT_LT(r.max_rel_error, 5 * tol) << element_name(i, j);
      }
  });
}

TEST(HostCaseCheck, AnElementOffByAQuarterToleranceStillPasses) {
  for_each_solved_case([](const Problem& p, const HostCase& hc, Solution& s) {
    const std::int64_t i = p.m / 2, j = p.n / 2;
    const std::size_t at = index_of(p, i, j);
    const double scale = s.scale[static_cast<std::size_t>(i * p.n + j)];
    put(s.c.data(), at, get(s.c.data(), at, p.precision) + 0.25 * tolerance(p) * scale, p.precision);
    const ValidationResult r = hc.check(s.c.data());
    EXPECT_TRUE(r.valid) << "an error of 1/4 of the bound must be accepted: " << r.reason;
  });
}

TEST(HostCaseCheck, ANaNOrInfiniteElementFails) {
  for_each_solved_case([](const Problem& p, const HostCase& hc, const Solution& s) {
    for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                       -std::numeric_limits<double>::infinity()}) {
      HostBuffer<std::byte> c = copy_of(s.c);
      const std::int64_t i = p.m - 1, j = p.n - 1;
      put(c.data(), index_of(p, i, j), bad, p.precision);
      const ValidationResult r = hc.check(c.data());
      EXPECT_FALSE(r.valid) << element_name(i, j) << " = " << bad << " passed";
      EXPECT_TRUE(contains(r.reason, element_name(i, j))) << r.reason;
      EXPECT_TRUE(std::isinf(r.max_rel_error)) << "max_rel_error = " << r.max_rel_error;
    }
  });
}

TEST(HostCaseCheck, AnUnwrittenElementStillHoldingPoisonFails) {
  for_each_solved_case([](const Problem& p, const HostCase& hc, Solution& s) {
    put_poison(s.c.data(), index_of(p, 0, 0), p.precision);
    const ValidationResult r = hc.check(s.c.data());
    EXPECT_FALSE(r.valid) << "C[0][0] left as poison passed";
    EXPECT_TRUE(contains(r.reason, "C[0][0]")) << r.reason;
  });
}

TEST(HostCaseCheck, AWriteIntoRowPaddingFails) {
  for_each_solved_case([](const Problem& p, const HostCase& hc, const Solution& s) {
    if (p.ldc == p.n || p.m < 2) return;  // no row padding before the last row
    for (std::int64_t i = 0; i + 1 < p.m; ++i)
      for (std::int64_t j = p.n; j < p.ldc; ++j) {
        HostBuffer<std::byte> c = copy_of(s.c);
        put(c.data(), index_of(p, i, j), 0.0, p.precision);
        const ValidationResult r = hc.check(c.data());
        EXPECT_FALSE(r.valid) << "a write to padding element " << element_name(i, j) << " (ldc=" << p.ldc
                              << ") passed";
        EXPECT_TRUE(contains(r.reason, "padding")) << r.reason;
      }
  });
}

TEST(HostCaseCheck, AWriteIntoTheGuardZoneAfterCFails) {
  for_each_solved_case([](const Problem& p, const HostCase& hc, const Solution& s) {
    ASSERT_EQ(hc.c_bytes_with_guard(), (p.c_elements() + HostCase::guard_elements) * element_size(p.precision));
    for (std::size_t g : {std::size_t{0}, std::size_t{1}, HostCase::guard_elements - 1}) {
      HostBuffer<std::byte> c = copy_of(s.c);
      put(c.data(), p.c_elements() + g, 1.0, p.precision);
      const ValidationResult r = hc.check(c.data());
      EXPECT_FALSE(r.valid) << "a write " << g << " elements past the end of C passed";
      EXPECT_TRUE(contains(r.reason, "past the end")) << r.reason;
    }
  });
}

TEST(HostCaseCheck, WhereTheScaleIsZeroTheElementMustBeExactlyZero) {
  // K = 0 and beta = 0: C = 0 exactly, and S = 0.
  const Problem p = make("3x4x0", Precision::fp64, 1.0, 0.0);
  HostCase hc(p, 1);
  hc.compute_expected(nullptr);
  Solution s = solve(hc);
  EXPECT_TRUE(hc.check(s.c.data()).valid);
  put(s.c.data(), index_of(p, 1, 2), 1e-300, p.precision);
  const ValidationResult r = hc.check(s.c.data());
  EXPECT_FALSE(r.valid) << "a tiny non-zero where the exact result is 0 with S = 0 passed";
  EXPECT_TRUE(contains(r.reason, "C[1][2]")) << r.reason;
}

TEST(HostCaseCheck, CheckBeforeComputeExpectedIsAnError) {
  HostCase hc(Problem::packed(2, 2, 2), 1);
  EXPECT_THROW(hc.check(hc.c_initial().data()), std::logic_error);
}

// int8 inputs are whole numbers in [-127, 127] and C is int32: a result is exact or wrong.
TEST(HostCase, Int8IsCheckedExactly) {
  const Problem p = Problem::packed(5, 4, 3, Precision::int8, 2.0, -1.0);
  HostCase host(p, 9);
  host.compute_expected(nullptr);
  const auto* a = reinterpret_cast<const std::int8_t*>(host.a().data());
  const auto* b = reinterpret_cast<const std::int8_t*>(host.b().data());
  std::vector<std::byte> c(host.c_bytes_with_guard());
  std::memcpy(c.data(), host.c_initial().data(), c.size());
  auto* out = reinterpret_cast<std::int32_t*>(c.data());
  bool any_large = false;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) {
      std::int32_t sum = 0;
      for (int k = 0; k < 3; ++k) sum += a[i * 3 + k] * b[k * 4 + j];
      any_large = any_large || std::abs(a[i * 3]) > 1;
      out[i * 4 + j] = 2 * sum - out[i * 4 + j];
    }
  EXPECT_TRUE(any_large) << "int8 operands span the integer range, not [-1, 1]";
  const ValidationResult v = host.check(c.data());
  EXPECT_TRUE(v.valid) << v.reason;
  EXPECT_EQ(v.tolerance, 0.0);
  out[7] += 1;
  EXPECT_FALSE(host.check(c.data()).valid);
  EXPECT_THROW_CONTAINING(HostCase(Problem::packed(2, 2, 2, Precision::int8, 0.5), 1), std::invalid_argument,
                          {"whole-number"});
}

TEST(SixteenBitFloats, RoundToNearestEvenBothWays) {
  EXPECT_EQ(from_fp16(to_fp16(1.0)), 1.0);
  EXPECT_EQ(to_fp16(1.0), 0x3c00);
  EXPECT_EQ(to_fp16(-2.0), 0xc000);
  EXPECT_EQ(from_fp16(to_fp16(1.0 + 0x1p-11)), 1.0) << "a tie goes to the even neighbour";
  EXPECT_EQ(from_fp16(to_fp16(1.0 + 3 * 0x1p-11)), 1.0 + 0x1p-9);
  EXPECT_EQ(from_fp16(to_fp16(0x1p-24)), 0x1p-24) << "the smallest subnormal";
  EXPECT_EQ(from_fp16(to_fp16(0x1p-14 * 0.75)), 0x1p-14 * 0.75);
  EXPECT_EQ(from_fp16(to_fp16(0.1)), 0.0999755859375);
  EXPECT_EQ(from_bf16(to_bf16(1.0 + 0x1p-8)), 1.0);
  EXPECT_EQ(from_bf16(to_bf16(1.0 + 3 * 0x1p-8)), 1.0 + 0x1p-6);
  EXPECT_EQ(to_bf16(1.0), 0x3f80);
}

// fp16/bf16 inputs, fp32 C: the tensor cores' contract. A float-accumulated product of the
// stored (rounded) inputs passes; one element off by a few tolerances fails.
TEST(HostCaseCheck, SixteenBitInputsWithFp32OutputValidateAgainstTheRoundedInputs) {
  for (Precision precision : {Precision::fp16, Precision::bf16}) {
    SCOPED_TRACE(std::string(to_string(precision)));
    Problem p = Problem::packed(9, 11, 40, precision, -0.75, 1.25);
    HostCase hc(p, 7);
    EXPECT_EQ(hc.a().size(), 9u * 40u * 2u) << "A holds 16-bit elements";
    EXPECT_EQ(hc.c_initial().size(), (9u * 11u + HostCase::guard_elements) * 4u) << "C holds fp32 elements";
    hc.compute_expected(nullptr);
    auto in = [&](const HostBuffer<std::byte>& m, std::size_t i) {
      std::uint16_t bits;
      std::memcpy(&bits, m.data() + 2 * i, 2);
      return static_cast<float>(precision == Precision::fp16 ? from_fp16(bits) : from_bf16(bits));
    };
    HostBuffer<std::byte> c = copy_of(hc.c_initial());
    auto* cf = reinterpret_cast<float*>(c.data());
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t j = 0; j < p.n; ++j) {
        float sum = 0;
        for (std::int64_t k = 0; k < p.k; ++k)
          sum += in(hc.a(), static_cast<std::size_t>(i * p.lda + k)) * in(hc.b(), static_cast<std::size_t>(k * p.ldb + j));
        cf[i * p.ldc + j] = -0.75f * sum + 1.25f * cf[i * p.ldc + j];
      }
    const ValidationResult good = hc.check(c.data());
    EXPECT_TRUE(good.valid) << good.reason;
    EXPECT_DOUBLE_EQ(good.tolerance, 42 * std::numeric_limits<float>::epsilon()) << "fp32 accumulation";
    cf[3 * p.ldc + 4] += 0.01f;
    EXPECT_FALSE(hc.check(c.data()).valid);
  }
}

TEST(HostCase, RejectsAnInvalidProblem) {
  Problem p = Problem::packed(2, 3, 4);
  p.lda = 2;
  EXPECT_THROW_MENTIONING(HostCase(p, 1), std::invalid_argument, {"lda"});
}

TEST(HostCase, WithBetaZeroTheInitialCIsPoisonEverywhere) {
  for (Precision prec : {Precision::fp32, Precision::fp64}) {
    const Problem p = make("5x7x3", prec, 1.0, 0.0, 2);
    HostCase hc(p, 9);
    const std::size_t total = hc.c_bytes_with_guard() / element_size(prec);
    ASSERT_EQ(total, p.c_elements() + HostCase::guard_elements);
    for (std::size_t i = 0; i < total; ++i)
      ASSERT_TRUE(is_poison(hc.c_initial().data(), i, prec))
          << to_string(prec) << ": element " << i << " of the initial C is " << get(hc.c_initial().data(), i, prec)
          << ", expected the NaN poison (beta = 0: C must not be read)";
  }
}

TEST(HostCase, WithBetaNonZeroOnlyPaddingAndGuardArePoison) {
  for (Precision prec : {Precision::fp32, Precision::fp64}) {
    const Problem p = make("5x7x3", prec, 1.0, 0.5, 2);
    HostCase hc(p, 9);
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t j = 0; j < p.ldc && index_of(p, i, j) < p.c_elements(); ++j) {
        const bool inside = j < p.n;
        const double v = get(hc.c_initial().data(), index_of(p, i, j), prec);
        if (inside) {
          EXPECT_TRUE(std::isfinite(v) && std::abs(v) <= 1.0) << element_name(i, j) << " = " << v;
        } else {
          EXPECT_TRUE(is_poison(hc.c_initial().data(), index_of(p, i, j), prec))
              << "padding " << element_name(i, j) << " = " << v << ", expected poison";
        }
      }
    for (std::size_t g = 0; g < HostCase::guard_elements; ++g)
      EXPECT_TRUE(is_poison(hc.c_initial().data(), p.c_elements() + g, prec)) << "guard element " << g;
  }
}

TEST(HostCase, PaddingOfAAndBIsPoisonAndValuesAreInRange) {
  for (Precision prec : {Precision::fp32, Precision::fp64}) {
    const Problem p = make("4x6x5", prec, 1.0, 0.0, 3);
    HostCase hc(p, 11);
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t j = 0; j < p.lda && static_cast<std::size_t>(i * p.lda + j) < p.a_elements(); ++j) {
        const auto at = static_cast<std::size_t>(i * p.lda + j);
        if (j < p.k) EXPECT_LE(std::abs(get(hc.a().data(), at, prec)), 1.0) << "A[" << i << "][" << j << "]";
        else EXPECT_TRUE(is_poison(hc.a().data(), at, prec)) << "A padding [" << i << "][" << j << "]";
      }
    for (std::int64_t i = 0; i < p.k; ++i)
      for (std::int64_t j = 0; j < p.ldb && static_cast<std::size_t>(i * p.ldb + j) < p.b_elements(); ++j) {
        const auto at = static_cast<std::size_t>(i * p.ldb + j);
        if (j < p.n) EXPECT_LE(std::abs(get(hc.b().data(), at, prec)), 1.0) << "B[" << i << "][" << j << "]";
        else EXPECT_TRUE(is_poison(hc.b().data(), at, prec)) << "B padding [" << i << "][" << j << "]";
      }
  }
}

TEST(HostCase, OperandsAreReproducibleForASeedAndDifferAcrossSeeds) {
  const Problem p = make("6x5x4", Precision::fp64, 1.0, 1.0);
  HostCase x(p, 5), y(p, 5), z(p, 6);
  EXPECT_EQ(std::memcmp(x.a().data(), y.a().data(), x.a().size()), 0);
  EXPECT_EQ(std::memcmp(x.b().data(), y.b().data(), x.b().size()), 0);
  EXPECT_EQ(std::memcmp(x.c_initial().data(), y.c_initial().data(), x.c_initial().size()), 0);
  EXPECT_NE(std::memcmp(x.a().data(), z.a().data(), x.a().size()), 0);
  EXPECT_NE(std::memcmp(x.a().data(), x.b().data(), std::min(x.a().size(), x.b().size())), 0)
      << "A and B should not hold the same values";
}

TEST(NaiveGemmFp64, ComputesAKnownProduct) {
  // [1 2; 3 4] * [5 6; 7 8] = [19 22; 43 50]
  const double a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  double c[] = {1, 1, 1, 1};
  naive_gemm_fp64(2, 2, 2, 2.0, a, b, -1.0, c);
  EXPECT_EQ(c[0], 37);
  EXPECT_EQ(c[1], 43);
  EXPECT_EQ(c[2], 85);
  EXPECT_EQ(c[3], 99);
  double nan_c[] = {NAN, NAN, NAN, NAN};
  naive_gemm_fp64(2, 2, 2, 1.0, a, b, 0.0, nan_c);
  EXPECT_EQ(nan_c[0], 19) << "beta = 0 must not read C";
  EXPECT_EQ(nan_c[3], 50) << "beta = 0 must not read C";
}

// --- the CBLAS references against plain loops -------------------------------------------------

template <class T>
void expect_reference_matches_naive(Reference& ref, std::int64_t m, std::int64_t n, std::int64_t k,
                                    double alpha, double beta, std::int64_t pad) {
  Problem p = Problem::packed(m, n, k, sizeof(T) == 4 ? Precision::fp32 : Precision::fp64, alpha, beta);
  p = with_padding(p, pad);
  p.alpha = alpha;
  p.beta = beta;
  SCOPED_TRACE(ref.name() + " " + describe(p));
  const T nan = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> a(p.a_elements() + 1, nan), b(p.b_elements() + 1, nan), c(p.c_elements() + 8, T(77));
  std::vector<double> a64(static_cast<std::size_t>(m * k)), b64(static_cast<std::size_t>(k * n)),
      c64(static_cast<std::size_t>(m * n));
  fill_uniform(std::span<double>(a64), 1);
  fill_uniform(std::span<double>(b64), 2);
  fill_uniform(std::span<double>(c64), 3);
  for (auto* v : {&a64, &b64, &c64})
    for (double& x : *v) x = static_cast<T>(x);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) a[static_cast<std::size_t>(i * p.lda + j)] = static_cast<T>(a64[static_cast<std::size_t>(i * k + j)]);
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < n; ++j) b[static_cast<std::size_t>(i * p.ldb + j)] = static_cast<T>(b64[static_cast<std::size_t>(i * n + j)]);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) c[static_cast<std::size_t>(i * p.ldc + j)] = static_cast<T>(c64[static_cast<std::size_t>(i * n + j)]);
  std::vector<double> scale(c64.size()), abs_a(a64.size()), abs_b(b64.size());
  for (std::size_t i = 0; i < c64.size(); ++i) scale[i] = std::abs(c64[i]);
  for (std::size_t i = 0; i < a64.size(); ++i) abs_a[i] = std::abs(a64[i]);
  for (std::size_t i = 0; i < b64.size(); ++i) abs_b[i] = std::abs(b64[i]);
  const double alpha_t = static_cast<T>(alpha), beta_t = static_cast<T>(beta);
  naive_gemm_fp64(m, n, k, alpha_t, a64.data(), b64.data(), beta_t, c64.data());
  naive_gemm_fp64(m, n, k, std::abs(alpha_t), abs_a.data(), abs_b.data(), std::abs(beta_t), scale.data());

  ref.gemm(p, {a.data(), b.data(), c.data()});

  const double tol = tolerance(p);
  int reported = 0;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < p.ldc; ++j) {
      const auto at = static_cast<std::size_t>(i * p.ldc + j);
      if (at >= p.c_elements()) break;
      if (j >= n) {
        EXPECT_EQ(c[at], T(77)) << ref.name() << " wrote to padding C[" << i << "][" << j << "]";
        continue;
      }
      const double want = c64[static_cast<std::size_t>(i * n + j)];
      const double err = std::abs(static_cast<double>(c[at]) - want);
      const double bound = tol * scale[static_cast<std::size_t>(i * n + j)];
      if (!(err <= bound) && reported++ < 5)
        ADD_FAILURE() << ref.name() << ": C[" << i << "][" << j << "] = " << c[at] << ", expected " << want
                      << " (error " << err << " > bound " << bound << ")";
    }
  for (std::size_t g = p.c_elements(); g < c.size(); ++g) EXPECT_EQ(c[g], T(77)) << "write past the end of C";
}

class ReferenceAgreesWithNaive : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceAgreesWithNaive, OnSmallOddShapesInBothPrecisionsWithPaddedLd) {
  auto ref = cpu::load_cblas(GetParam());
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->name(), GetParam());
  EXPECT_FALSE(ref->version().empty());
  for (auto [m, n, k] : {std::tuple{1, 1, 1}, std::tuple{7, 13, 5}, std::tuple{17, 3, 29}, std::tuple{31, 33, 1},
                         std::tuple{2, 65, 9}})
    for (std::int64_t pad : {0, 3}) {
      expect_reference_matches_naive<double>(*ref, m, n, k, -0.75, 1.25, pad);
      expect_reference_matches_naive<float>(*ref, m, n, k, -0.75, 1.25, pad);
      expect_reference_matches_naive<double>(*ref, m, n, k, 1.0, 0.0, pad);
      expect_reference_matches_naive<float>(*ref, m, n, k, 1.0, 0.0, pad);
    }
}

TEST_P(ReferenceAgreesWithNaive, ZeroDepthScalesCByBeta) {
  auto ref = cpu::load_cblas(GetParam());
  expect_reference_matches_naive<double>(*ref, 4, 5, 0, 1.0, 0.5, 2);
  expect_reference_matches_naive<float>(*ref, 4, 5, 0, 1.0, 0.5, 2);
}

TEST_P(ReferenceAgreesWithNaive, RejectsPrecisionsWithoutACblasRoutine) {
  auto ref = cpu::load_cblas(GetParam());
  std::vector<std::uint16_t> a(4), b(4), c(4);
  EXPECT_THROW_CONTAINING(ref->gemm(Problem::packed(2, 2, 2, Precision::fp16), {a.data(), b.data(), c.data()}),
                          std::invalid_argument, {"fp16"});
}

INSTANTIATE_TEST_SUITE_P(Cblas, ReferenceAgreesWithNaive, ::testing::Values("openblas", "blis"),
                         [](const auto& param_info) { return param_info.param; });

TEST(CblasReferences, NamesAreOpenblasAndBlisThenOnednnAndLibxsmm) {
  EXPECT_EQ(cpu::cblas_names(), (std::vector<std::string>{"openblas", "blis"}));
  EXPECT_EQ(registry().backend("cpu").reference_names(),
            (std::vector<std::string>{"openblas", "blis", "onednn", "libxsmm"}));
}

// A reference's C checked by the validator against the fp64 truth.
void expect_reference_right(Reference& reference, const Problem& p) {
  HostCase host(p, 5);
  host.compute_expected(&testing::openblas());
  HostBuffer<std::byte> c(host.c_bytes_with_guard());
  std::memcpy(c.data(), host.c_initial().data(), c.size());
  reference.gemm(p, {host.a().data(), host.b().data(), c.data()});
  const ValidationResult v = host.check(c.data());
  EXPECT_TRUE(v.valid) << reference.name() << " " << to_string(p.precision) << " " << p.transposes() << ": " << v.reason;
}

// A reference's C in one layout (NN, TN, NT, TT) checked by the validator against the fp64 truth,
// which is computed from untransposed copies: a reference that ignored the transposes would fail.
void expect_reference_right_in_every_layout(Reference& reference, Precision precision) {
  for (int layout = 0; layout < 4; ++layout) {
    Problem p = Problem::packed(37, 23, 19, precision, -0.75, 1.25);
    p.trans_a = (layout & 1) != 0;
    p.trans_b = (layout & 2) != 0;
    p = with_padding(p, 2);
    expect_reference_right(reference, p);
  }
}

TEST(CpuReferences, OpenblasAndBlisReadTransposedOperands) {
  for (const char* name : {"openblas", "blis"}) {
    const auto reference = cpu::load_reference(name);
    expect_reference_right_in_every_layout(*reference, Precision::fp32);
    expect_reference_right_in_every_layout(*reference, Precision::fp64);
  }
}

TEST(CpuReferences, OnednnComputesFp32InEveryLayoutAndRefusesFp64) {
  std::unique_ptr<Reference> onednn;
  try {
    onednn = cpu::load_reference("onednn");
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << e.what();
  }
  EXPECT_NE(onednn->version().find("oneDNN "), std::string::npos) << onednn->version();
  onednn->set_threads(1);
  expect_reference_right_in_every_layout(*onednn, Precision::fp32);
  std::vector<double> a(4), b(4), c(4);
  EXPECT_THROW_MENTIONING(onednn->gemm(Problem::packed(2, 2, 2, Precision::fp64), {a.data(), b.data(), c.data()}),
                          std::invalid_argument, {"onednn", "fp64"});
}

// libxsmm is column-major: the row-major problem reaches it with A and B exchanged. Both
// precisions, every layout, one thread and two; sizes beyond its small-matrix limit (64^3) too.
TEST(CpuReferences, LibxsmmComputesFp32AndFp64InEveryLayout) {
  std::unique_ptr<Reference> libxsmm;
  try {
    libxsmm = cpu::load_reference("libxsmm");
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << e.what();
  }
  EXPECT_NE(libxsmm->version().find("libxsmm "), std::string::npos) << libxsmm->version();
  for (int threads : {1, 2}) {
    libxsmm->set_threads(threads);
    expect_reference_right_in_every_layout(*libxsmm, Precision::fp32);
    expect_reference_right_in_every_layout(*libxsmm, Precision::fp64);
  }
  for (Precision precision : {Precision::fp32, Precision::fp64})
    expect_reference_right(*libxsmm, Problem::packed(131, 97, 89, precision, 0.5, -1.0));
  std::vector<float> a(4), b(4), c(4);
  EXPECT_THROW_MENTIONING(libxsmm->gemm(Problem::packed(2, 2, 2, Precision::fp16), {a.data(), b.data(), c.data()}),
                          std::invalid_argument, {"libxsmm", "fp16"});
}

TEST(CpuReferences, AKernelsOwnLibraryRefusesTransposesItCannotRead) {
  Problem p = Problem::packed(4, 4, 4);
  p.trans_a = true;
  EXPECT_THROW_MENTIONING(require_untransposed(p, "clblast"), std::invalid_argument, {"clblast", "TN"});
}

TEST(CblasReferences, UnknownNameThrowsListingTheKnownOnes) {
  EXPECT_THROW_MENTIONING(cpu::load_cblas("mkl"), std::invalid_argument, {"mkl", "openblas", "blis"});
  EXPECT_THROW_MENTIONING(cpu::load_cblas(""), std::invalid_argument, {"openblas", "blis"});
  EXPECT_THROW_MENTIONING(cpu::load_reference("mkl"), std::invalid_argument, {"mkl", "openblas", "blis", "onednn"});
  auto device = registry().backend("cpu").open(0);
  EXPECT_THROW_MENTIONING(registry().backend("cpu").make_reference("nope", *device), std::invalid_argument,
                          {"nope", "openblas"});
}

}  // namespace
}  // namespace gemmlab
