#include "gemmlab/problem.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gemmlab {

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::fp64: return "fp64";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::int8: return "int8";
  }
  return "?";
}

Precision parse_precision(std::string_view text) {
  return parse_name(text, {Precision::fp32, Precision::fp64, Precision::fp16, Precision::bf16, Precision::int8},
                    "precision");
}

std::size_t element_size(Precision p) {
  switch (p) {
    case Precision::fp32: return 4;
    case Precision::fp64: return 8;
    case Precision::fp16:
    case Precision::bf16: return 2;
    case Precision::int8: return 1;
  }
  return 0;
}

std::size_t output_element_size(Precision p) {
  return p == Precision::fp16 || p == Precision::bf16 || p == Precision::int8 ? 4 : element_size(p);
}

double accumulation_epsilon(Precision p) {
  return p == Precision::fp16 || p == Precision::bf16 ? machine_epsilon(Precision::fp32) : machine_epsilon(p);
}

double machine_epsilon(Precision p) {
  switch (p) {
    case Precision::fp32: return std::numeric_limits<float>::epsilon();
    case Precision::fp64: return std::numeric_limits<double>::epsilon();
    case Precision::fp16: return 0x1p-10;
    case Precision::bf16: return 0x1p-7;
    case Precision::int8: return 0.0;
  }
  return 0.0;
}

Problem Problem::packed(std::int64_t m, std::int64_t n, std::int64_t k, Precision precision,
                        double alpha, double beta) {
  Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.alpha = alpha;
  p.beta = beta;
  p.lda = std::max<std::int64_t>(1, k);
  p.ldb = std::max<std::int64_t>(1, n);
  p.ldc = std::max<std::int64_t>(1, n);
  p.precision = precision;
  return p;
}

namespace {
// Elements spanned by `rows` rows of `cols` columns with leading dimension `ld`; 0 when empty.
std::size_t span(std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  if (rows == 0 || cols == 0) return 0;
  return static_cast<std::size_t>((rows - 1) * ld + cols);
}

void check_operand(const char* name, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                   const char* ld_name, std::size_t elem) {
  std::int64_t min_ld = std::max<std::int64_t>(1, cols);
  if (ld < min_ld)
    throw std::invalid_argument(std::string(ld_name) + "=" + std::to_string(ld) +
                                " is smaller than the row length of " + name + " (" +
                                std::to_string(cols) + "); must be >= " + std::to_string(min_ld));
  std::int64_t elements = 0, bytes = 0;
  if (rows > 0 && (__builtin_mul_overflow(rows - 1, ld, &elements) ||
                   __builtin_add_overflow(elements, cols, &elements) ||
                   __builtin_mul_overflow(elements, static_cast<std::int64_t>(elem), &bytes)))
    throw std::invalid_argument(std::string(name) + " (" + std::to_string(rows) + " rows, " +
                                ld_name + "=" + std::to_string(ld) +
                                ") is too large: its size in bytes overflows");
}
}  // namespace

std::size_t Problem::a_elements() const { return span(a_rows(), a_cols(), lda); }
std::size_t Problem::b_elements() const { return span(b_rows(), b_cols(), ldb); }
std::size_t Problem::c_elements() const { return span(m, n, ldc); }

std::string Problem::shape() const {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

std::string Problem::transposes() const { return std::string(trans_a ? "T" : "N") + (trans_b ? "T" : "N"); }

void require_untransposed(const Problem& p, std::string_view who) {
  if (p.transposed())
    throw std::invalid_argument(std::string(who) + " reads A and B untransposed only (this problem is " +
                                p.transposes() + ")");
}

void validate(const Problem& p) {
  // Beyond 2^31 in one dimension a kernel's index arithmetic is no longer the point of a test.
  constexpr std::int64_t max_dim = std::int64_t{1} << 31;
  for (auto [name, value] : {std::pair{"m", p.m}, std::pair{"n", p.n}, std::pair{"k", p.k}}) {
    if (value < 0)
      throw std::invalid_argument(std::string(name) + "=" + std::to_string(value) + " is negative");
    if (value > max_dim)
      throw std::invalid_argument(std::string(name) + "=" + std::to_string(value) +
                                  " is too large (at most 2^31)");
  }
  if (!std::isfinite(p.alpha)) throw std::invalid_argument("alpha is not a finite number");
  if (!std::isfinite(p.beta)) throw std::invalid_argument("beta is not a finite number");
  // int8 GEMMs accumulate and write int32: alpha and beta scale integers exactly or not at all.
  if (p.precision == Precision::int8 &&
      (p.alpha != std::nearbyint(p.alpha) || p.beta != std::nearbyint(p.beta) || std::abs(p.alpha) > 0x1p31 ||
       std::abs(p.beta) > 0x1p31))
    throw std::invalid_argument("int8 GEMMs take whole-number alpha and beta (their C is int32)");
  std::size_t elem = element_size(p.precision);
  check_operand("A", p.a_rows(), p.a_cols(), p.lda, "lda", elem);
  check_operand("B", p.b_rows(), p.b_cols(), p.ldb, "ldb", elem);
  check_operand("C", p.m, p.n, p.ldc, "ldc", output_element_size(p.precision));
}

void validate(const Problem& p, const void* a, const void* b, const void* c) {
  validate(p);
  if (p.m > 0 && p.n > 0) {
    const bool reads_ab = p.k > 0 && p.alpha != 0;  // otherwise C = beta*C: A and B are not read
    if (reads_ab && a == nullptr) throw std::invalid_argument("A is a null pointer");
    if (reads_ab && b == nullptr) throw std::invalid_argument("B is a null pointer");
    if (c == nullptr) throw std::invalid_argument("C is a null pointer");
  }
}

Problem with_padding(Problem p, std::int64_t extra) {
  p.lda = std::max<std::int64_t>(1, p.a_cols()) + extra;
  p.ldb = std::max<std::int64_t>(1, p.b_cols()) + extra;
  p.ldc = std::max<std::int64_t>(1, p.n) + extra;
  return p;
}

Problem parse_shape(std::string_view text) {
  std::int64_t dims[3] = {0, 0, 0};
  std::size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    std::size_t end = i < 2 ? text.find('x', pos) : text.size();
    if (end == std::string_view::npos) break;
    auto part = text.substr(pos, end - pos);
    auto [ptr, err] = std::from_chars(part.data(), part.data() + part.size(), dims[i]);
    if (part.empty() || err != std::errc() || ptr != part.data() + part.size() || dims[i] < 0)
      throw std::invalid_argument("shape '" + std::string(text) +
                                  "' is not of the form MxNxK with non-negative integers");
    pos = end + 1;
    if (i == 2) {
      Problem p = Problem::packed(dims[0], dims[1], dims[2]);
      validate(p);
      return p;
    }
  }
  throw std::invalid_argument("shape '" + std::string(text) + "' is not of the form MxNxK");
}

Problem parse_shape_and_transposes(std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return parse_shape(text);
  Problem p;
  try {
    p = parse_shape(text.substr(0, colon));
  } catch (const std::invalid_argument&) {  // the message quotes the whole text, transposes and all
    throw std::invalid_argument("shape '" + std::string(text) + "' is not of the form MxNxK or MxNxK:TT");
  }
  const std::string_view transposes = text.substr(colon + 1);
  if (transposes != "NN" && transposes != "TN" && transposes != "NT" && transposes != "TT")
    throw std::invalid_argument("shape '" + std::string(text) +
                                "': the transposes after ':' are NN, TN, NT or TT");
  p.trans_a = transposes[0] == 'T';
  p.trans_b = transposes[1] == 'T';
  return with_padding(p, 0);
}

std::string shape_and_transposes(const Problem& p) {
  return p.transposed() ? p.shape() + ":" + p.transposes() : p.shape();
}

}  // namespace gemmlab
