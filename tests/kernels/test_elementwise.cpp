// unary, binary and axpy against their reference twins, and against values
// worked out by hand.
//
// Lengths 1, 3, 17 and 129 are never a multiple of the SIMD width, so both the
// vector body and the scalar tail of every kernel run.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/elementwise.hpp"
#include "kernels/kernel_test_util.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

namespace {

// got ≈ want within tol, where two NaNs or two equal infinities also agree.
bool close(float got, float want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(double(got) - double(want)) <= tol;
}

// unary(op) on n copies of x: 37 = 2·16 + 5 covers the vector body and the
// tail for SIMD widths 4, 8 and 16.
std::vector<float> unary_of(Unary op, float x) {
  std::vector<float> in(37, x), out(37);
  unary(op, 37, in.data(), out.data());
  return out;
}

// CHECK that unary(op, x) is want (within tol) in every position.
void check_unary_value(Unary op, float x, float want, double tol = 0.0) {
  CAPTURE(int(op));
  CAPTURE(x);
  for (float y : unary_of(op, x)) CHECK(close(y, want, tol));
}

const Unary kAllUnary[] = {Unary::Neg,  Unary::Exp,     Unary::Log,  Unary::Sqrt, Unary::Abs,  Unary::Sign,
                           Unary::Tanh, Unary::Sigmoid, Unary::Relu, Unary::Step, Unary::Gelu, Unary::GeluGrad};

const Binary kAllBinary[] = {Binary::Add, Binary::Sub, Binary::Mul, Binary::Div, Binary::Pow};

void check_unary_matches_reference(int64_t n) {
  for (Unary op : kAllUnary) {
    CAPTURE(int(op));
    // log and sqrt get positive inputs; the rest see both signs, out to where
    // tanh, sigmoid and erf saturate.
    bool positive = op == Unary::Log || op == Unary::Sqrt;
    std::vector<float> x = random_vector(n, 11, positive ? 1e-3f : -9.0f, positive ? 50.0f : 9.0f);
    std::vector<float> y(n), y_ref(n);
    unary(op, n, x.data(), y.data());
    unary_reference(op, n, x.data(), y_ref.data());

    // Tolerance. xsimd's exp, log, tanh and erf and the C library's are each
    // within a couple of ulps of the true value, hence 8u·|y| between them.
    // The extra 8u·(|x| + 1) covers cancellation: gelu(x) = x/2·(1 + erf(x/√2))
    // for x ≪ 0 subtracts two numbers near 1, so its error is absolute, about
    // u·|x|, not relative to the tiny result. Neg, Abs, Sign, Relu and Step
    // are exact either way.
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      double tol = 8 * kU * (std::abs(y_ref[i]) + std::abs(x[i]) + 1);
      if (!close(y[i], y_ref[i], tol) && bad++ == 0) {
        INFO("x = ", x[i], ": unary ", y[i], " vs reference ", y_ref[i]);
        CHECK(false);
      }
    }
    CHECK(bad == 0);

    // In place (x and y the same array) gives the same answer.
    unary(op, n, x.data(), x.data());
    CHECK(x == y);
  }
}

void check_binary_matches_reference(int64_t n) {
  for (Binary op : kAllBinary) {
    for (int64_t a_step : {0, 1}) {
      for (int64_t b_step : {0, 1}) {
        CAPTURE(int(op));
        CAPTURE(a_step);
        CAPTURE(b_step);
        // pow gets a positive base (a negative one with a fractional
        // exponent is NaN, which would test nothing).
        float a_lo = op == Binary::Pow ? 0.0f : -3.0f;
        std::vector<float> a = random_vector(n, 21, a_lo, 3.0f);
        std::vector<float> b = random_vector(n, 22, -3.0f, 3.0f);
        // A NaN in the vector body of a and in the tail of b: every op must
        // propagate it in both.
        if (n > 2 && a_step == 1) a[2] = kNaN;
        if (n > 1 && b_step == 1) b[n - 1] = kNaN;

        std::vector<float> out(n), out_ref(n);
        binary(op, n, a.data(), a_step, b.data(), b_step, out.data());
        binary_reference(op, n, a.data(), a_step, b.data(), b_step, out_ref.data());

        // +, -, × and ÷ are correctly rounded in IEEE arithmetic, in
        // a SIMD lane as in a scalar register, and pow runs the scalar
        // std::pow in both: so the two must agree exactly.
        int64_t bad = 0;
        for (int64_t i = 0; i < n; ++i) bad += !close(out[i], out_ref[i], 0.0);
        CHECK(bad == 0);

        // out may be the same array as a step-1 operand.
        if (a_step == 1) {
          std::vector<float> a_io = a;
          binary(op, n, a_io.data(), 1, b.data(), b_step, a_io.data());
          int64_t bad_alias = 0;
          for (int64_t i = 0; i < n; ++i) bad_alias += !close(a_io[i], out_ref[i], 0.0);
          CHECK(bad_alias == 0);
        }
      }
    }
  }
}

void check_axpy_matches_reference(int64_t n) {
  std::vector<float> x = random_vector(n, 31, -2.0f, 2.0f);
  std::vector<float> y = random_vector(n, 32, -2.0f, 2.0f), y_ref = y;
  const float alpha = -0.37f;
  axpy(n, alpha, x.data(), y.data());
  axpy_reference(n, alpha, x.data(), y_ref.data());
  // The SIMD body fuses α·x + y into one rounding, the reference rounds twice:
  // they differ by at most an ulp of each term, u·(|α·x| + |y|) each way.
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double tol = 2 * kU * (std::abs(alpha * x[i]) + std::abs(y_ref[i]));
    bad += !close(y[i], y_ref[i], tol);
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("kernels/unary") {
  SUBCASE("n = 0") { check_unary_matches_reference(0); }
  SUBCASE("n = 1") { check_unary_matches_reference(1); }
  SUBCASE("n = 3") { check_unary_matches_reference(3); }
  SUBCASE("n = 17") { check_unary_matches_reference(17); }
  SUBCASE("n = 129") { check_unary_matches_reference(129); }

  SUBCASE("known values") {
    const double tol = 4 * kU;  // a few ulps of values of order 1
    check_unary_value(Unary::Neg, 2.5f, -2.5f);
    check_unary_value(Unary::Exp, 0.0f, 1.0f);
    check_unary_value(Unary::Exp, 1.0f, 2.718281828f, 3 * tol);
    check_unary_value(Unary::Log, 1.0f, 0.0f);
    check_unary_value(Unary::Log, 0.0f, -kInf);
    check_unary_value(Unary::Log, -1.0f, kNaN);
    check_unary_value(Unary::Sqrt, 4.0f, 2.0f);
    check_unary_value(Unary::Sqrt, -1.0f, kNaN);
    check_unary_value(Unary::Abs, -3.0f, 3.0f);
    check_unary_value(Unary::Sign, -2.0f, -1.0f);
    check_unary_value(Unary::Sign, 0.0f, 0.0f);  // 0 at 0, as the derivative of |x| is taken
    check_unary_value(Unary::Sign, 1e-30f, 1.0f);
    check_unary_value(Unary::Tanh, 0.0f, 0.0f);
    check_unary_value(Unary::Tanh, 20.0f, 1.0f, tol);
    check_unary_value(Unary::Sigmoid, 0.0f, 0.5f, tol);
    check_unary_value(Unary::Sigmoid, -100.0f, 0.0f, tol);
    check_unary_value(Unary::Relu, -1.0f, 0.0f);
    check_unary_value(Unary::Relu, 2.0f, 2.0f);
    check_unary_value(Unary::Relu, kNaN, kNaN);  // torch.relu lets NaN through
    check_unary_value(Unary::Step, 0.0f, 0.0f);
    check_unary_value(Unary::Step, 1e-30f, 1.0f);
    // Φ(1) = 0.841344746 and φ(1) = 0.241970725 (normal CDF and density).
    check_unary_value(Unary::Gelu, 0.0f, 0.0f);
    check_unary_value(Unary::Gelu, 1.0f, 0.841344746f, tol);
    check_unary_value(Unary::Gelu, 10.0f, 10.0f, 10 * tol);
    check_unary_value(Unary::Gelu, -10.0f, 0.0f, 10 * tol);
    check_unary_value(Unary::GeluGrad, 0.0f, 0.5f, tol);
    check_unary_value(Unary::GeluGrad, 1.0f, 0.841344746f + 0.241970725f, tol);
  }

  SUBCASE("gelu_grad is the slope of gelu") {
    // Central difference (gelu(x+h) - gelu(x-h)) / 2h: error ~h²·|gelu'''|/6
    // ≈ 1e-5 from the formula plus ~u/h ≈ 1e-5 from rounding.
    const float h = 1e-2f;
    for (float x : {-3.0f, -1.0f, -0.3f, 0.0f, 0.5f, 2.0f}) {
      CAPTURE(x);
      float slope = (unary_of(Unary::Gelu, x + h)[0] - unary_of(Unary::Gelu, x - h)[0]) / (2 * h);
      CHECK(close(unary_of(Unary::GeluGrad, x)[36], slope, 1e-4));
    }
  }
}

TEST_CASE("kernels/binary") {
  SUBCASE("n = 0") { check_binary_matches_reference(0); }
  SUBCASE("n = 1") { check_binary_matches_reference(1); }
  SUBCASE("n = 3") { check_binary_matches_reference(3); }
  SUBCASE("n = 17") { check_binary_matches_reference(17); }
  SUBCASE("n = 129") { check_binary_matches_reference(129); }

  SUBCASE("known values and broadcasting") {
    const int64_t n = 37;
    std::vector<float> ramp(n), out(n);
    for (int64_t i = 0; i < n; ++i) ramp[i] = float(i);
    const float ten = 10.0f, two = 2.0f;

    binary(Binary::Add, n, ramp.data(), 1, &ten, 0, out.data());  // ramp + 10
    for (int64_t i = 0; i < n; ++i) CHECK(out[i] == float(i) + 10);
    binary(Binary::Sub, n, &ten, 0, ramp.data(), 1, out.data());  // 10 - ramp
    for (int64_t i = 0; i < n; ++i) CHECK(out[i] == 10 - float(i));
    binary(Binary::Mul, n, ramp.data(), 1, ramp.data(), 1, out.data());  // ramp²
    for (int64_t i = 0; i < n; ++i) CHECK(out[i] == float(i * i));
    binary(Binary::Pow, n, &two, 0, &ten, 0, out.data());  // 2¹⁰ everywhere
    for (int64_t i = 0; i < n; ++i) CHECK(out[i] == 1024.0f);
    binary(Binary::Div, n, ramp.data(), 1, &two, 0, out.data());  // ramp / 2
    for (int64_t i = 0; i < n; ++i) CHECK(out[i] == float(i) / 2);

    // Single values, each placed in every lane and in the tail.
    auto binary_of = [&](Binary op, float a, float b) {
      std::vector<float> va(n, a), vb(n, b), r(n);
      binary(op, n, va.data(), 1, vb.data(), 1, r.data());
      return r;
    };
    for (float r : binary_of(Binary::Pow, 0.0f, 0.0f)) CHECK(r == 1.0f);  // std::pow: 0⁰ = 1
    for (float r : binary_of(Binary::Pow, -2.0f, 3.0f)) CHECK(r == -8.0f);
    for (float r : binary_of(Binary::Pow, 4.0f, 0.5f)) CHECK(r == 2.0f);
    for (float r : binary_of(Binary::Pow, kNaN, 0.0f)) CHECK(r == 1.0f);  // std::pow: NaN⁰ = 1
    for (float r : binary_of(Binary::Div, 1.0f, 0.0f)) CHECK(r == kInf);
  }
}

TEST_CASE("kernels/axpy") {
  SUBCASE("n = 0") { check_axpy_matches_reference(0); }
  SUBCASE("n = 1") { check_axpy_matches_reference(1); }
  SUBCASE("n = 3") { check_axpy_matches_reference(3); }
  SUBCASE("n = 17") { check_axpy_matches_reference(17); }
  SUBCASE("n = 129") { check_axpy_matches_reference(129); }

  SUBCASE("known values") {
    // y = 1 + 2·i, exact in float.
    const int64_t n = 37;
    std::vector<float> x(n), y(n, 1.0f);
    for (int64_t i = 0; i < n; ++i) x[i] = float(i);
    axpy(n, 2.0f, x.data(), y.data());
    for (int64_t i = 0; i < n; ++i) CHECK(y[i] == 1.0f + 2.0f * float(i));
  }
}
