// softmax and log_softmax against their reference twins and against values
// known in closed form, including logits of ±1e4 that overflow a naive exp.
//
// A shape (outer, n, inner) normalises along the middle axis. inner = 1 takes
// the SIMD row path; inner > 1 the scalar column path.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/kernel_test_util.hpp"
#include "kernels/softmax.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

namespace {

struct Shape {
  int64_t outer, n, inner;
};

// Tolerances. Both versions compute yₖ = eₖ / S with eₖ = exp(xₖ - m) and
// S = Σ eⱼ; they differ in the exp (xsimd or libm, a couple of ulps each) and
// in the order of the sum (up to n·u·S each, all terms being positive). So
//   softmax:      relative error up to (2n + 16)·u
//   log_softmax:  yₖ = (xₖ - m) - log S moves by ΔS/S, absolute (2n + 16)·u,
//                 plus rounding of the result itself, 4u·|yₖ|.
double softmax_tol(int64_t n, float want) { return static_cast<double>(2 * n + 16) * kU * want; }
double log_softmax_tol(int64_t n, float want) { return static_cast<double>(2 * n + 16) * kU + 4 * kU * std::abs(want); }

void check_matches_reference(Shape s) {
  CAPTURE(s.outer);
  CAPTURE(s.n);
  CAPTURE(s.inner);
  const int64_t size = s.outer * s.n * s.inner;
  std::vector<float> x = random_vector(size, 81, -8.0f, 8.0f);
  std::vector<float> y(size), y_ref(size);

  softmax(s.outer, s.n, s.inner, x.data(), y.data());
  softmax_reference(s.outer, s.n, s.inner, x.data(), y_ref.data());
  int64_t bad = 0;
  for (int64_t i = 0; i < size; ++i) bad += !(std::abs(double(y[i]) - double(y_ref[i])) <= softmax_tol(s.n, y_ref[i]));
  CHECK(bad == 0);

  log_softmax(s.outer, s.n, s.inner, x.data(), y.data());
  log_softmax_reference(s.outer, s.n, s.inner, x.data(), y_ref.data());
  bad = 0;
  for (int64_t i = 0; i < size; ++i)
    bad += !(std::abs(double(y[i]) - double(y_ref[i])) <= log_softmax_tol(s.n, y_ref[i]));
  CHECK(bad == 0);

  // In place (x and y the same array) gives the same answer.
  std::vector<float> x_io = x;
  log_softmax(s.outer, s.n, s.inner, x_io.data(), x_io.data());
  CHECK(x_io == y);
  x_io = x;
  softmax(s.outer, s.n, s.inner, x_io.data(), x_io.data());
  softmax(s.outer, s.n, s.inner, x.data(), y.data());
  CHECK(x_io == y);

  // Each normalised column sums to 1 (to within the rounding of n terms).
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < s.n; ++k) sum += y[(o * s.n + k) * s.inner + i];
      CHECK(std::abs(sum - 1.0) <= static_cast<double>(2 * s.n + 16) * kU);
    }
  }
}

}  // namespace

TEST_CASE("kernels/softmax, log_softmax") {
  // inner = 1: the SIMD row path.
  SUBCASE("(1, 1, 1)") { check_matches_reference({1, 1, 1}); }
  SUBCASE("(2, 3, 1)") { check_matches_reference({2, 3, 1}); }
  SUBCASE("(3, 17, 1)") { check_matches_reference({3, 17, 1}); }
  SUBCASE("(2, 129, 1)") { check_matches_reference({2, 129, 1}); }
  // inner > 1: the column path.
  SUBCASE("(2, 17, 3)") { check_matches_reference({2, 17, 3}); }
  SUBCASE("(1, 3, 129)") { check_matches_reference({1, 3, 129}); }

  SUBCASE("[1e4, -1e4]: no overflow") {
    // exp(1e4) overflows a float; after subtracting the max it is exp(0) = 1.
    const float x[] = {1e4f, -1e4f};
    float y[2];
    softmax(1, 2, 1, x, y);
    CHECK(y[0] == 1.0f);
    CHECK(y[1] == 0.0f);
    log_softmax(1, 2, 1, x, y);
    CHECK(y[0] == 0.0f);
    CHECK(y[1] == -2e4f);
  }

  SUBCASE("one logit of 1e4 among -1e4s, in every position") {
    // softmax is one-hot and log_softmax is 0 there, -2e4 elsewhere. The max
    // must be found wherever it sits (any SIMD lane, or the tail): missing it
    // would leave exp(1e4 - m) = ∞ and a row of NaN.
    const int64_t n = 37;
    for (int64_t at = 0; at < n; ++at) {
      CAPTURE(at);
      std::vector<float> x(n, -1e4f), y(n);
      x[at] = 1e4f;
      softmax(1, n, 1, x.data(), y.data());
      for (int64_t k = 0; k < n; ++k) CHECK(y[k] == (k == at ? 1.0f : 0.0f));
      log_softmax(1, n, 1, x.data(), y.data());
      for (int64_t k = 0; k < n; ++k) CHECK(y[k] == (k == at ? 0.0f : -2e4f));
    }
  }

  SUBCASE("two logits of 1e4 among -1e4s, in the vector body and in the tail") {
    // softmax: 1/2 at the two, 0 elsewhere; log_softmax: -log 2 and -2e4 - log 2.
    const int64_t n = 37;
    std::vector<float> x(n, -1e4f), y(n);
    x[5] = x[n - 1] = 1e4f;
    softmax(1, n, 1, x.data(), y.data());
    for (int64_t k = 0; k < n; ++k) CHECK(y[k] == (x[k] > 0 ? 0.5f : 0.0f));
    log_softmax(1, n, 1, x.data(), y.data());
    const float log2 = std::log(2.0f);
    for (int64_t k = 0; k < n; ++k) {
      CAPTURE(k);
      if (x[k] > 0)
        CHECK(std::abs(y[k] + log2) <= 4 * kU);
      else
        CHECK(y[k] == -2e4f - log2);
    }
  }

  SUBCASE("softmax([1, 2, 3]) by hand") {
    // eᵏ / (e + e² + e³) = 0.0900306, 0.2447285, 0.6652410
    const float x[] = {1, 2, 3};
    const double want[] = {0.09003057317, 0.24472847105, 0.66524095577};
    float y[3];
    softmax(1, 3, 1, x, y);
    for (int k = 0; k < 3; ++k) CHECK(std::abs(y[k] - want[k]) <= softmax_tol(3, static_cast<float>(want[k])));
    log_softmax(1, 3, 1, x, y);
    for (int k = 0; k < 3; ++k)
      CHECK(std::abs(y[k] - std::log(want[k])) <= log_softmax_tol(3, static_cast<float>(std::log(want[k]))));
  }

  SUBCASE("a constant row is uniform; shifting a row changes nothing") {
    for (int64_t n : {1, 3, 17, 129}) {
      CAPTURE(n);
      std::vector<float> x(n, 3.5f), y(n);
      softmax(1, n, 1, x.data(), y.data());
      for (float v : y)
        CHECK(std::abs(v - 1.0 / static_cast<double>(n)) <= softmax_tol(n, 1.0f / static_cast<float>(n)));
      log_softmax(1, n, 1, x.data(), y.data());
      for (float v : y) CHECK(std::abs(v + std::log(double(n))) <= log_softmax_tol(n, v));

      // softmax(x + 100) = softmax(x): e^100 cancels between top and bottom.
      std::vector<float> r = random_vector(n, 91, -3.0f, 3.0f), r_shift(n), y_shift(n);
      for (int64_t k = 0; k < n; ++k) r_shift[k] = r[k] + 100.0f;
      softmax(1, n, 1, r.data(), y.data());
      softmax(1, n, 1, r_shift.data(), y_shift.data());
      // r + 100 is rounded to an ulp of 100 (≈ 8e-6), which moves eₖ by that much relative.
      for (int64_t k = 0; k < n; ++k) CHECK(std::abs(y_shift[k] - y[k]) <= 2e-5 * y[k] + softmax_tol(n, y[k]));
    }
  }

  SUBCASE("columns (inner > 1), by hand") {
    // x is (outer=1, n=2, inner=2): column 0 = [0, 0], column 1 = [1e4, -1e4].
    const float x[] = {0, 1e4f, 0, -1e4f};
    float y[4];
    softmax(1, 2, 2, x, y);
    CHECK(y[0] == 0.5f);
    CHECK(y[2] == 0.5f);
    CHECK(y[1] == 1.0f);
    CHECK(y[3] == 0.0f);
  }
}
