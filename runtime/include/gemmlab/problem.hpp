// A GEMM problem: C = alpha * op(A) * op(B) + beta * C, all matrices row-major. A and B hold
// elements of the problem's precision; C holds them too, except for fp16/bf16 (fp32 C) and int8
// (int32 C).
//   op(A) is M x K, op(B) is K x N, C is M x N (ldc >= N). A is stored M x K (lda >= K), or
//   K x M (lda >= M) when trans_a: op(A) = A^T. Likewise B: K x N (ldb >= N), or N x K (ldb >= K)
//   when trans_b. A column-major GEMM is the row-major one of C^T = op(B)^T op(A)^T, which is how
//   the BLAS interface (blas/) passes it on. Kernels take transposed operands only where they say
//   so (Kernel::reads_transposed).
// BLAS semantics: a zero dimension is legal; with M or N zero nothing happens, with K zero (or
// alpha zero) C becomes beta * C; with beta zero C is never read, so NaN in C does not propagate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gemmlab {

// fp16, bf16 and int8 are reserved for backends with such units (tensor cores, systolic arrays).
enum class Precision { fp32, fp64, fp16, bf16, int8 };

std::string_view to_string(Precision p);
// Throws std::invalid_argument naming the allowed values.
Precision parse_precision(std::string_view text);

// The value among `values` whose to_string() is `text`: how every enumeration's name is read.
// Otherwise std::invalid_argument: "unknown <what> '<text>'; allowed: <the names>".
template <class E>
E parse_name(std::string_view text, std::initializer_list<E> values, std::string_view what) {
  std::string allowed;
  for (E value : values) {
    if (text == to_string(value)) return value;
    allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(value));
  }
  throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(text) + "'; allowed: " + allowed);
}
// Bytes of an element of A and B in precision p.
std::size_t element_size(Precision p);
// Bytes of an element of C: fp16 and bf16 GEMMs accumulate and write fp32 (tensor cores), int8
// ones int32; the others write their own precision.
std::size_t output_element_size(Precision p);
// Machine epsilon of the arithmetic the products are summed in (fp32 for fp16/bf16 inputs).
double accumulation_epsilon(Precision p);
// Machine epsilon of the precision's storage type (distance from 1 to the next value).
double machine_epsilon(Precision p);

struct Problem {
  std::int64_t m = 0, n = 0, k = 0;
  double alpha = 1.0, beta = 0.0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;  // elements between consecutive rows
  Precision precision = Precision::fp32;
  bool trans_a = false, trans_b = false;   // A stored K x M, B stored N x K (see above)

  // Leading dimensions equal to the row lengths (no padding).
  static Problem packed(std::int64_t m, std::int64_t n, std::int64_t k,
                        Precision precision = Precision::fp32, double alpha = 1.0,
                        double beta = 0.0);

  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
  // Elements each operand spans in memory, padding between rows included.
  std::size_t a_elements() const;
  std::size_t b_elements() const;
  std::size_t c_elements() const;
  std::string shape() const;  // "MxNxK"
  bool operator==(const Problem&) const = default;
  bool transposed() const { return trans_a || trans_b; }
  // "NN", "TN", "NT", "TT": whether A, then B, is stored transposed (BLAS's TRANSA, TRANSB).
  std::string transposes() const;
  // Rows and columns of A and B as stored (M x K, or K x M when transposed).
  std::int64_t a_rows() const { return trans_a ? k : m; }
  std::int64_t a_cols() const { return trans_a ? m : k; }
  std::int64_t b_rows() const { return trans_b ? n : k; }
  std::int64_t b_cols() const { return trans_b ? k : n; }
};

// Throws std::invalid_argument when `p` has a transposed operand: for a library or kernel that
// reads A and B untransposed only, named in the message.
void require_untransposed(const Problem& p, std::string_view who);

// Checks sizes, leading dimensions, alpha/beta; throws std::invalid_argument naming the field.
void validate(const Problem& p);
// As above, and the operand pointers: a pointer that would be read or written must not be null.
void validate(const Problem& p, const void* a, const void* b, const void* c);

// The same problem with every leading dimension `extra` elements longer than its row as stored
// (at least 1, as BLAS asks): with_padding(p, 0) packs it for its transposes.
Problem with_padding(Problem p, std::int64_t extra);

// "MxNxK" -> packed fp32 problem; throws std::invalid_argument.
Problem parse_shape(std::string_view text);
// "MxNxK", or "MxNxK:" followed by NN, TN, NT or TT (A, then B, stored transposed: BLAS's TRANSA and
// TRANSB) -> packed fp32 problem, each leading dimension the row length of its operand as stored;
// throws std::invalid_argument. shape_and_transposes() writes it back.
Problem parse_shape_and_transposes(std::string_view text);
// "MxNxK" for NN, else "MxNxK:TT".
std::string shape_and_transposes(const Problem& p);

}  // namespace gemmlab
