// reduce and argmax/argmin against their reference twins and against
// answers known in closed form.
//
// A shape (outer, n, inner) reduces the middle axis. inner = 1 takes the
// row path (SIMD along the row); inner > 1 the slice path (SIMD across inner).
// Sizes are odd so the vector body and the scalar tail both run.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/kernel_test_util.hpp"
#include "kernels/reduce.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

namespace {

struct Shape {
  int64_t outer, n, inner;
};

void check_reduce_matches_reference(Shape s) {
  CAPTURE(s.outer);
  CAPTURE(s.n);
  CAPTURE(s.inner);
  std::vector<float> x = random_vector(s.outer * s.n * s.inner, 41);

  for (Reduce op : {Reduce::Sum, Reduce::Max, Reduce::Min}) {
    CAPTURE(int(op));
    std::vector<float> out(s.outer * s.inner), out_ref(s.outer * s.inner);
    reduce(op, s.outer, s.n, s.inner, x.data(), out.data());
    reduce_reference(op, s.outer, s.n, s.inner, x.data(), out_ref.data());

    // Max and min pick one of the inputs, so they agree exactly. A sum in
    // another order differs by at most 2·n·u·Σ|x| (each float sum of n terms
    // is within n·u·Σ|x| of the exact one).
    int64_t bad = 0;
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        double abs_sum = 0;
        for (int64_t k = 0; k < s.n; ++k) abs_sum += std::abs(x[(o * s.n + k) * s.inner + i]);
        double tol = op == Reduce::Sum ? 2 * static_cast<double>(s.n) * kU * abs_sum : 0.0;
        int64_t at = o * s.inner + i;
        bad += !(std::abs(double(out[at]) - double(out_ref[at])) <= tol);
      }
    }
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("kernels/reduce") {
  // inner = 1: one row per output.
  SUBCASE("(1, 1, 1)") { check_reduce_matches_reference({1, 1, 1}); }
  SUBCASE("(2, 3, 1)") { check_reduce_matches_reference({2, 3, 1}); }
  SUBCASE("(3, 17, 1)") { check_reduce_matches_reference({3, 17, 1}); }
  SUBCASE("(2, 129, 1)") { check_reduce_matches_reference({2, 129, 1}); }
  // inner > 1: slices combined across inner.
  SUBCASE("(1, 1, 3)") { check_reduce_matches_reference({1, 1, 3}); }
  SUBCASE("(2, 3, 17)") { check_reduce_matches_reference({2, 3, 17}); }
  SUBCASE("(3, 17, 3)") { check_reduce_matches_reference({3, 17, 3}); }
  SUBCASE("(2, 129, 129)") { check_reduce_matches_reference({2, 129, 129}); }

  SUBCASE("sum of 1..n is n(n+1)/2") {
    // Exact in float for these n: every partial sum is an integer below 2²⁴.
    for (int64_t n : {1, 3, 17, 129, 1000}) {
      CAPTURE(n);
      std::vector<float> x(n);
      for (int64_t k = 0; k < n; ++k) x[k] = float(k + 1);
      float sum = -1;
      reduce(Reduce::Sum, 1, n, 1, x.data(), &sum);
      CHECK(sum == float(n * (n + 1) / 2));
    }
  }

  SUBCASE("the max and the min are found in every position") {
    // One extreme value, moved through every lane of the vector body and the
    // tail, must be found by the horizontal fold wherever it sits.
    const int64_t n = 37;
    for (int64_t at = 0; at < n; ++at) {
      CAPTURE(at);
      std::vector<float> x = random_vector(n, 63);
      float result = 0;
      x[at] = 2.0f;
      reduce(Reduce::Max, 1, n, 1, x.data(), &result);
      CHECK(result == 2.0f);
      x[at] = -2.0f;
      reduce(Reduce::Min, 1, n, 1, x.data(), &result);
      CHECK(result == -2.0f);
    }
  }

  SUBCASE("max and min of a column view, by hand") {
    // x is (outer=1, n=3, inner=2): reducing n gives one value per column.
    const float x[] = {1, -5, 7, 2, -3, 4};
    float out[2];
    reduce(Reduce::Max, 1, 3, 2, x, out);
    CHECK(out[0] == 7);
    CHECK(out[1] == 4);
    reduce(Reduce::Min, 1, 3, 2, x, out);
    CHECK(out[0] == -3);
    CHECK(out[1] == -5);
    reduce(Reduce::Sum, 1, 3, 2, x, out);
    CHECK(out[0] == 5);
    CHECK(out[1] == 1);
  }

  SUBCASE("a NaN anywhere makes max, min and sum NaN") {
    // The NaN goes first, inside the vector body, and last (in the scalar tail).
    const int64_t n = 37;
    for (int64_t at : {int64_t(0), int64_t(5), n - 1}) {
      for (Reduce op : {Reduce::Sum, Reduce::Max, Reduce::Min}) {
        CAPTURE(at);
        CAPTURE(int(op));
        // Row path: one row of n.
        std::vector<float> x = random_vector(n, 61);
        x[at] = kNaN;
        float row = 0;
        reduce(op, 1, n, 1, x.data(), &row);
        CHECK(std::isnan(row));

        // Slice path: two slices of n, the NaN in the first and then the second.
        for (int64_t slice : {0, 1}) {
          CAPTURE(slice);
          std::vector<float> two = random_vector(2 * n, 62), out(n);
          two[slice * n + at] = kNaN;
          reduce(op, 1, 2, n, two.data(), out.data());
          CHECK(std::isnan(out[at]));
          CHECK(!std::isnan(out[at == 0 ? 1 : 0]));  // and only there
        }
      }
    }
  }
}

TEST_CASE("kernels/argmax, argmin") {
  SUBCASE("row, by hand") {
    const float x[] = {3, 9, -1, 9, 2};  // the max 9 twice: the first index wins
    int64_t i = -1;
    argmax(1, 5, 1, x, &i);
    CHECK(i == 1);
    argmin(1, 5, 1, x, &i);
    CHECK(i == 2);
  }

  SUBCASE("columns, by hand") {
    // (outer=2, n=3, inner=2)
    const float x[] = {1,  8,  5,  0, 3,  8,   // outer 0
                       -1, -2, -1, 6, -4, 6};  // outer 1
    int64_t out[4];
    argmax(2, 3, 2, x, out);
    CHECK(out[0] == 1);  // 5
    CHECK(out[1] == 0);  // 8, first of two
    CHECK(out[2] == 0);  // -1, first of two
    CHECK(out[3] == 1);  // 6, first of two
    argmin(2, 3, 2, x, out);
    CHECK(out[0] == 0);  // 1
    CHECK(out[1] == 1);  // 0
    CHECK(out[2] == 2);  // -4
    CHECK(out[3] == 0);  // -2
  }

  SUBCASE("NaN counts as the max and the min, as in PyTorch") {
    const float x[] = {1, 9, kNaN, 9, kNaN, -7};
    int64_t i = -1;
    argmax(1, 6, 1, x, &i);
    CHECK(i == 2);
    argmin(1, 6, 1, x, &i);
    CHECK(i == 2);
  }

  SUBCASE("agrees with max and min on random rows") {
    // The value at the argmax is the max that reduce finds.
    for (int64_t n : {1, 3, 17, 129}) {
      CAPTURE(n);
      std::vector<float> x = random_vector(3 * n, 71);
      int64_t at_max[3], at_min[3];
      float max[3], min[3];
      argmax(3, n, 1, x.data(), at_max);
      argmin(3, n, 1, x.data(), at_min);
      reduce(Reduce::Max, 3, n, 1, x.data(), max);
      reduce(Reduce::Min, 3, n, 1, x.data(), min);
      for (int64_t o = 0; o < 3; ++o) {
        CHECK(x[o * n + at_max[o]] == max[o]);
        CHECK(x[o * n + at_min[o]] == min[o]);
      }
    }
  }
}
