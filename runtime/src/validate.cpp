#include "gemmlab/validate.hpp"

#include <bit>
#include <cmath>
#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace gemmlab {

float poison_fp32() { return std::bit_cast<float>(std::uint32_t{0x7fc0dead}); }
double poison_fp64() { return std::bit_cast<double>(std::uint64_t{0x7ff8deaddeaddeadULL}); }

double tolerance(const Problem& problem) {
  return (static_cast<double>(problem.k) + 2.0) * accumulation_epsilon(problem.precision);
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
// How elements are stored: the inputs in the problem's precision, C in its output precision
// (int8 inputs: int32 C).
enum class Storage { f64, f32, f16, bf16, i8, i32 };
Storage input_storage(Precision p) {
  switch (p) {
    case Precision::fp64: return Storage::f64;
    case Precision::fp16: return Storage::f16;
    case Precision::bf16: return Storage::bf16;
    case Precision::int8: return Storage::i8;
    default: return Storage::f32;
  }
}
Storage output_storage(Precision p) {
  return p == Precision::fp64 ? Storage::f64 : p == Precision::int8 ? Storage::i32 : Storage::f32;
}
std::size_t bytes_of(Storage s) {
  switch (s) {
    case Storage::f64: return 8;
    case Storage::f32:
    case Storage::i32: return 4;
    case Storage::i8: return 1;
    default: return 2;
  }
}

// Rounds to the nearest fp16 value (ties to even), subnormals included; |x| stays below 65504 here.
double round_to_fp16(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  int exponent = 0;
  std::frexp(x, &exponent);                       // |x| = f * 2^exponent, f in [0.5, 1)
  const int quantum = std::max(exponent - 11, -24);  // 11 significant bits; subnormals: 2^-24 steps
  return std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
}
std::uint16_t fp16_bits(double rounded) {
  const std::uint16_t sign = std::signbit(rounded) ? 0x8000 : 0;
  const double a = std::abs(rounded);
  if (std::isnan(a)) return 0x7e00;
  if (a < 0x1p-14) return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(a * 0x1p24));  // subnormal
  int exponent = 0;
  const double f = std::frexp(a, &exponent);  // a = f * 2^exponent = (2f) * 2^(exponent-1)
  const auto mantissa = static_cast<std::uint16_t>((2 * f - 1) * 1024);
  return static_cast<std::uint16_t>(sign | ((exponent - 1 + 15) << 10) | mantissa);
}
double fp16_value(std::uint16_t bits) {
  const double sign = bits & 0x8000 ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * mantissa * 0x1p-24;
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
}
// bf16 is the top half of an fp32: round the fp32 to 8 significant bits, ties to even.
std::uint16_t bf16_bits(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | 0x40);
  return static_cast<std::uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}
double bf16_value(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

}  // namespace

std::uint16_t to_fp16(double x) { return fp16_bits(round_to_fp16(x)); }
double from_fp16(std::uint16_t bits) { return fp16_value(bits); }
std::uint16_t to_bf16(double x) { return bf16_bits(static_cast<float>(x)); }
double from_bf16(std::uint16_t bits) { return bf16_value(bits); }

namespace {
// The value an element of storage s holds after storing x (what the kernel reads).
double representable(double x, Storage s) {
  switch (s) {
    case Storage::f32: return static_cast<float>(x);
    case Storage::f16: return round_to_fp16(x);
    case Storage::bf16: return bf16_value(bf16_bits(static_cast<float>(x)));
    case Storage::i8:
    case Storage::i32: return std::nearbyint(x);
    default: return x;
  }
}

void store(std::byte* base, std::size_t index, double value, Storage s) {
  switch (s) {
    case Storage::f64: reinterpret_cast<double*>(base)[index] = value; break;
    case Storage::f32: reinterpret_cast<float*>(base)[index] = static_cast<float>(value); break;
    case Storage::f16: reinterpret_cast<std::uint16_t*>(base)[index] = fp16_bits(round_to_fp16(value)); break;
    case Storage::bf16: reinterpret_cast<std::uint16_t*>(base)[index] = bf16_bits(static_cast<float>(value)); break;
    case Storage::i8: reinterpret_cast<std::int8_t*>(base)[index] = static_cast<std::int8_t>(value); break;
    case Storage::i32: reinterpret_cast<std::int32_t*>(base)[index] = static_cast<std::int32_t>(value); break;
  }
}
double load(const std::byte* base, std::size_t index, Storage s) {
  switch (s) {
    case Storage::f64: return reinterpret_cast<const double*>(base)[index];
    case Storage::f32: return reinterpret_cast<const float*>(base)[index];
    case Storage::f16: return fp16_value(reinterpret_cast<const std::uint16_t*>(base)[index]);
    case Storage::bf16: return bf16_value(reinterpret_cast<const std::uint16_t*>(base)[index]);
    case Storage::i8: return reinterpret_cast<const std::int8_t*>(base)[index];
    case Storage::i32: return reinterpret_cast<const std::int32_t*>(base)[index];
  }
  return 0;
}
// Poison: a NaN with a fixed payload, so that it is told apart from a NaN a kernel computes.
std::uint64_t poison_bits(Storage s) {
  switch (s) {
    case Storage::f64: return std::bit_cast<std::uint64_t>(poison_fp64());
    case Storage::f32: return std::bit_cast<std::uint32_t>(poison_fp32());
    case Storage::f16: return 0x7ead;
    case Storage::bf16: return 0x7fad;
    // Integers have no NaN: a fixed pattern no product of int8 operands this size produces.
    case Storage::i8: return 0x80;
    case Storage::i32: return 0x80000001u;
  }
  return 0;
}
bool is_poison(const std::byte* base, std::size_t index, Storage s) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, base + index * bytes_of(s), bytes_of(s));
  return bits == poison_bits(s);
}
void fill_poison(HostBuffer<std::byte>& buffer, Storage s) {
  const std::uint64_t bits = poison_bits(s);
  for (std::size_t i = 0; i < buffer.size() / bytes_of(s); ++i) std::memcpy(buffer.data() + i * bytes_of(s), &bits, bytes_of(s));
}

// Random values for the rows x cols valid part of a matrix with leading dimension ld; the fp64
// copy holds exactly the values stored (rounded to the storage first, as the issue of inputs
// rounded the same way on both sides demands).
// Integer storage gets whole numbers: int8 in [-127, 127], int32 in [-2^20, 2^20].
void fill_matrix(HostBuffer<std::byte>& buffer, std::vector<double>& copy, std::int64_t rows,
                 std::int64_t cols, std::int64_t ld, Storage s, std::uint64_t seed) {
  copy.assign(static_cast<std::size_t>(rows * cols), 0.0);
  fill_uniform(std::span<double>(copy), seed);
  const double range = s == Storage::i8 ? 127.0 : s == Storage::i32 ? 0x1p20 : 1.0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      auto& v = copy[static_cast<std::size_t>(i * cols + j)];
      v = representable(v * range, s);
      store(buffer.data(), static_cast<std::size_t>(i * ld + j), v, s);
    }
}

// The cols x rows transpose of a packed rows x cols matrix.
std::vector<double> transposed(const std::vector<double>& v, std::int64_t rows, std::int64_t cols) {
  std::vector<double> t(v.size());
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      t[static_cast<std::size_t>(j * rows + i)] = v[static_cast<std::size_t>(i * cols + j)];
  return t;
}

// The alpha/beta a kernel of precision p actually multiplies by (in its accumulation type).
double rounded(double x, Precision p) { return representable(x, output_storage(p)); }
}  // namespace

HostCase::HostCase(const Problem& problem, std::uint64_t seed) : problem_(problem) {
  validate(problem);
  const Precision p = problem.precision;
  const Storage in = input_storage(p), out = output_storage(p);
  a_ = HostBuffer<std::byte>(problem.a_elements() * bytes_of(in));
  b_ = HostBuffer<std::byte>(problem.b_elements() * bytes_of(in));
  c_ = HostBuffer<std::byte>((problem.c_elements() + guard_elements) * bytes_of(out));
  fill_poison(a_, in);
  fill_poison(b_, in);
  fill_poison(c_, out);
  fill_matrix(a_, a64_, problem.a_rows(), problem.a_cols(), problem.lda, in, seed);
  fill_matrix(b_, b64_, problem.b_rows(), problem.b_cols(), problem.ldb, in, seed + 1);
  // The fp64 copies hold op(A) and op(B): the truth is computed untransposed.
  if (problem.trans_a) a64_ = transposed(a64_, problem.k, problem.m);
  if (problem.trans_b) b64_ = transposed(b64_, problem.n, problem.k);
  if (problem.beta != 0) {
    fill_matrix(c_, c64_, problem.m, problem.n, problem.ldc, out, seed + 2);
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
  const Storage prec = output_storage(p.precision);
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
