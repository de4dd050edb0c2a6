#include "gemmlab/validate.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace gemmlab {

float poison_fp32() { return std::bit_cast<float>(std::uint32_t{0x7fc0dead}); }
double poison_fp64() { return std::bit_cast<double>(std::uint64_t{0x7ff8deaddeaddeadULL}); }

double tolerance(const Problem& problem) {
  return (static_cast<double>(problem.k) + 2.0) * machine_epsilon(problem.precision);
}

void naive_gemm_fp64(std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                     const double* a, const double* b, double beta, double* c) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
      c[i * n + j] = alpha * sum + (beta == 0 ? 0.0 : beta * c[i * n + j]);
    }
}

namespace {
void require_host_precision(Precision p) {
  if (p != Precision::fp32 && p != Precision::fp64)
    throw std::invalid_argument("precision " + std::string(to_string(p)) +
                                " is not supported by the host validator (fp32, fp64)");
}

// Stores `value` at element `index` of a buffer in precision p.
void store(std::byte* base, std::size_t index, double value, Precision p) {
  if (p == Precision::fp32) reinterpret_cast<float*>(base)[index] = static_cast<float>(value);
  else reinterpret_cast<double*>(base)[index] = value;
}
double load(const std::byte* base, std::size_t index, Precision p) {
  if (p == Precision::fp32) return reinterpret_cast<const float*>(base)[index];
  return reinterpret_cast<const double*>(base)[index];
}
bool is_poison(const std::byte* base, std::size_t index, Precision p) {
  if (p == Precision::fp32)
    return std::bit_cast<std::uint32_t>(reinterpret_cast<const float*>(base)[index]) ==
           std::bit_cast<std::uint32_t>(poison_fp32());
  return std::bit_cast<std::uint64_t>(reinterpret_cast<const double*>(base)[index]) ==
         std::bit_cast<std::uint64_t>(poison_fp64());
}
void fill_poison(HostBuffer<std::byte>& buffer, Precision p) {
  std::size_t n = buffer.size() / element_size(p);
  for (std::size_t i = 0; i < n; ++i)
    store(buffer.data(), i, p == Precision::fp32 ? double(poison_fp32()) : poison_fp64(), p);
}

// Random values for the rows x cols valid part of a matrix with leading dimension ld; the fp64
// copy holds exactly the values stored (rounded to the precision first).
void fill_matrix(HostBuffer<std::byte>& buffer, std::vector<double>& copy, std::int64_t rows,
                 std::int64_t cols, std::int64_t ld, Precision p, std::uint64_t seed) {
  copy.assign(static_cast<std::size_t>(rows * cols), 0.0);
  fill_uniform(std::span<double>(copy), seed);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      auto& v = copy[static_cast<std::size_t>(i * cols + j)];
      if (p == Precision::fp32) v = static_cast<float>(v);
      store(buffer.data(), static_cast<std::size_t>(i * ld + j), v, p);
    }
}

// The alpha/beta a kernel of precision p actually multiplies by.
double rounded(double x, Precision p) { return p == Precision::fp32 ? double(float(x)) : x; }
}  // namespace

HostCase::HostCase(const Problem& problem, std::uint64_t seed) : problem_(problem) {
  validate(problem);
  const Precision p = problem.precision;
  require_host_precision(p);
  const std::size_t elem = element_size(p);
  a_ = HostBuffer<std::byte>(problem.a_elements() * elem);
  b_ = HostBuffer<std::byte>(problem.b_elements() * elem);
  c_ = HostBuffer<std::byte>((problem.c_elements() + guard_elements) * elem);
  fill_poison(a_, p);
  fill_poison(b_, p);
  fill_poison(c_, p);
  fill_matrix(a_, a64_, problem.m, problem.k, problem.lda, p, seed);
  fill_matrix(b_, b64_, problem.k, problem.n, problem.ldb, p, seed + 1);
  if (problem.beta != 0) {
    fill_matrix(c_, c64_, problem.m, problem.n, problem.ldc, p, seed + 2);
  } else {
    c64_.assign(static_cast<std::size_t>(problem.m * problem.n), 0.0);  // C is never read
  }
}

void HostCase::compute_expected(Reference* fp64) {
  const auto& p = problem_;
  const double alpha = rounded(p.alpha, p.precision), beta = rounded(p.beta, p.precision);
  expected_ = c64_;
  scale_.resize(c64_.size());
  for (std::size_t i = 0; i < c64_.size(); ++i) scale_[i] = std::abs(c64_[i]);
  std::vector<double> abs_a(a64_.size()), abs_b(b64_.size());
  for (std::size_t i = 0; i < a64_.size(); ++i) abs_a[i] = std::abs(a64_[i]);
  for (std::size_t i = 0; i < b64_.size(); ++i) abs_b[i] = std::abs(b64_[i]);
  if (p.m > 0 && p.n > 0) {
    if (fp64 != nullptr) {
      Problem q = Problem::packed(p.m, p.n, p.k, Precision::fp64, alpha, beta);
      fp64->gemm(q, {a64_.data(), b64_.data(), expected_.data()});
      q.alpha = std::abs(alpha);
      q.beta = std::abs(beta);
      fp64->gemm(q, {abs_a.data(), abs_b.data(), scale_.data()});
    } else {
      naive_gemm_fp64(p.m, p.n, p.k, alpha, a64_.data(), b64_.data(), beta, expected_.data());
      naive_gemm_fp64(p.m, p.n, p.k, std::abs(alpha), abs_a.data(), abs_b.data(),
                      std::abs(beta), scale_.data());
    }
  }
  have_expected_ = true;
}

ValidationResult HostCase::check(const std::byte* c_result) const {
  if (!have_expected_) throw std::logic_error("HostCase::check before compute_expected");
  const auto& p = problem_;
  const Precision prec = p.precision;
  ValidationResult r;
  r.tolerance = tolerance(p);
  auto fail = [&](std::string why) {
    if (r.reason.empty()) r.reason = std::move(why);
  };
  auto where = [](std::int64_t i, std::int64_t j) {
    return "C[" + std::to_string(i) + "][" + std::to_string(j) + "]";
  };
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      const auto packed = static_cast<std::size_t>(i * p.n + j);
      const double got = load(c_result, static_cast<std::size_t>(i * p.ldc + j), prec);
      const double want = expected_[packed];
      if (!std::isfinite(got)) {
        r.max_rel_error = INFINITY;
        fail(where(i, j) + " = " + std::to_string(got) + " (not finite; expected " +
             std::to_string(want) + ")");
        continue;
      }
      const double diff = std::abs(got - want);
      const double err = scale_[packed] > 0 ? diff / scale_[packed] : (diff == 0 ? 0 : INFINITY);
      if (err > r.max_rel_error) r.max_rel_error = err;
      if (err > r.tolerance)
        fail(where(i, j) + " = " + std::to_string(got) + ", expected " + std::to_string(want) +
             " (relative error " + std::to_string(err) + " > tolerance " +
             std::to_string(r.tolerance) + ")");
    }
    // Row padding (absent after the last row) must still hold the poison.
    if (i + 1 < p.m)
      for (std::int64_t j = p.n; j < p.ldc; ++j)
        if (!is_poison(c_result, static_cast<std::size_t>(i * p.ldc + j), prec))
          fail("the kernel wrote to padding " + where(i, j) + " (ldc=" + std::to_string(p.ldc) + ")");
  }
  const std::size_t end = p.c_elements();
  for (std::size_t g = 0; g < guard_elements; ++g)
    if (!is_poison(c_result, end + g, prec))
      fail("the kernel wrote " + std::to_string(g) + " elements past the end of C");
  r.valid = r.reason.empty();
  return r;
}

}  // namespace gemmlab
