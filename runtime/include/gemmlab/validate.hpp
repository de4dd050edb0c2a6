// Checking a kernel's C against a reference computed in fp64.
//
// Error bound. For C = alpha*A*B + beta*C0 computed in a precision with machine epsilon eps
// (unit roundoff u = eps/2), any summation order satisfies, element by element,
//     |C_kernel - C_exact| <= gamma * S,   S = |alpha| * (|A| |B|) + |beta| * |C0|,
// with gamma about (K + 2) * u (K products and sums, the alpha and beta scalings, the final
// rounding). The fp64 reference has an error of the same form in its own precision. The
// validator therefore accepts an element when
//     |C_kernel - C_ref| / S  <=  tolerance = (K + 2) * eps      (eps, not u: room for both sides)
// and reports the largest such ratio as max_rel_error. Where S is 0 the element must be exactly 0.
// The bound is deterministic (no false failures however the kernel orders its sums); a kernel
// that drops or repeats a product exceeds it as long as 1/K > (K+2)*eps, i.e. K < ~2900 in fp32.
//
// Poison. Before the kernel runs, every element it must not touch (row padding of A, B and C, a
// guard zone after C) and, when beta is 0, every element of C holds a NaN with a fixed payload.
// An unwritten element then stays NaN and fails; a write outside C changes the poison and fails;
// a read of padding brings a NaN into the sum and fails. Non-finite output never passes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gemmlab/buffer.hpp"
#include "gemmlab/kernel.hpp"
#include "gemmlab/problem.hpp"

namespace gemmlab {

double tolerance(const Problem& problem);

struct ValidationResult {
  bool valid = false;
  double max_rel_error = 0;  // max over elements of |C - C_ref| / S
  double tolerance = 0;
  std::string reason;        // first failure, empty when valid
};

// Host operands of one test problem, in the problem's precision, with padding poisoned, plus the
// fp64 copies of the same values and (after compute_expected) the fp64 result and error scale.
class HostCase {
 public:
  static constexpr std::size_t guard_elements = 64;  // poisoned zone after C

  HostCase(const Problem& problem, std::uint64_t seed);

  const Problem& problem() const { return problem_; }
  // Buffers in the problem's precision; `c_initial` includes the guard zone.
  const HostBuffer<std::byte>& a() const { return a_; }
  const HostBuffer<std::byte>& b() const { return b_; }
  const HostBuffer<std::byte>& c_initial() const { return c_; }
  std::size_t c_bytes_with_guard() const { return c_.size(); }

  // Computes C_ref and S with `fp64` (a host reference library) or, when null, with a plain
  // fp64 triple loop.
  void compute_expected(Reference* fp64);
  // Checks a kernel's C (same layout as c_initial, guard zone included).
  ValidationResult check(const std::byte* c_result) const;

 private:
  Problem problem_;
  HostBuffer<std::byte> a_, b_, c_;
  std::vector<double> a64_, b64_, c64_;  // packed m*k, k*n, m*n fp64 copies of op(A), op(B), C
  std::vector<double> expected_, scale_;
  bool have_expected_ = false;
};

// fp64 C = alpha*A*B + beta*C on packed row-major arrays, plain loops: the reference's reference.
void naive_gemm_fp64(std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                     const double* a, const double* b, double beta, double* c);

// 16-bit floats as the host stores them for fp16/bf16 problems (round to nearest, ties to even;
// bf16 by way of fp32), and back.
std::uint16_t to_fp16(double x);
double from_fp16(std::uint16_t bits);
std::uint16_t to_bf16(double x);
double from_bf16(std::uint16_t bits);

// The NaN bit patterns used as poison.
float poison_fp32();
double poison_fp64();

}  // namespace gemmlab
