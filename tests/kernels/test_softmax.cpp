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

// ---- the backwards --------------------------------------------------------------

namespace {

// Tolerances. SIMD and reference differ in the order of the row's sum
// (n·u relative to the sum of the magnitudes), in fma against multiply-then-add
// (one rounding), and, for log_softmax, in the exp (a couple of ulps). So
//   softmax:      |Δdxₖ| ≤ (2n + 8)·u · |yₖ| · (|dyₖ| + Σⱼ |dyⱼ yⱼ|)
//   log_softmax:  |Δdxₖ| ≤ (2n + 8)·u · (|dyₖ| + exp(yₖ) · Σⱼ |dyⱼ|)
void check_backward_matches_reference(Shape s) {
  CAPTURE(s.outer);
  CAPTURE(s.n);
  CAPTURE(s.inner);
  const int64_t size = s.outer * s.n * s.inner;
  std::vector<float> x = random_vector(size, 83, -6.0f, 6.0f), dy = random_vector(size, 85, -2.0f, 2.0f);
  std::vector<float> y(size), dx(size), dx_ref(size);
  auto column_sum = [&](int64_t at, auto term) {  // Σ over the column through element `at`
    const int64_t o = at / (s.n * s.inner), i = at % s.inner;
    double sum = 0;
    for (int64_t k = 0; k < s.n; ++k) sum += term((o * s.n + k) * s.inner + i);
    return sum;
  };
  const double tol_scale = static_cast<double>(2 * s.n + 8) * kU;

  softmax(s.outer, s.n, s.inner, x.data(), y.data());
  softmax_backward(s.outer, s.n, s.inner, y.data(), dy.data(), dx.data());
  softmax_backward_reference(s.outer, s.n, s.inner, y.data(), dy.data(), dx_ref.data());
  int64_t bad = 0;
  for (int64_t k = 0; k < size; ++k) {
    const double dot = column_sum(k, [&](int64_t j) { return std::abs(double(dy[j]) * y[j]); });
    bad += !(std::abs(double(dx[k]) - dx_ref[k]) <= tol_scale * y[k] * (std::abs(dy[k]) + dot));
  }
  CHECK(bad == 0);

  log_softmax(s.outer, s.n, s.inner, x.data(), y.data());
  log_softmax_backward(s.outer, s.n, s.inner, y.data(), dy.data(), dx.data());
  log_softmax_backward_reference(s.outer, s.n, s.inner, y.data(), dy.data(), dx_ref.data());
  bad = 0;
  for (int64_t k = 0; k < size; ++k) {
    const double sum = column_sum(k, [&](int64_t j) { return std::abs(double(dy[j])); });
    bad += !(std::abs(double(dx[k]) - dx_ref[k]) <= tol_scale * (std::abs(dy[k]) + std::exp(double(y[k])) * sum));
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("kernels/softmax_backward, log_softmax_backward") {
  SUBCASE("(1, 1, 1)") { check_backward_matches_reference({1, 1, 1}); }
  SUBCASE("(3, 10, 1)") { check_backward_matches_reference({3, 10, 1}); }
  SUBCASE("(2, 129, 1)") { check_backward_matches_reference({2, 129, 1}); }
  SUBCASE("(2, 17, 3)") { check_backward_matches_reference({2, 17, 3}); }

  SUBCASE("by hand") {
    // y = (0.25, 0.75), dy = (1, -1): Σ dy y = -0.5, dx = y ⊙ (dy + 0.5) = (0.375, -0.375).
    const float y[] = {0.25f, 0.75f}, dy[] = {1, -1};
    float dx[2];
    softmax_backward(1, 2, 1, y, dy, dx);
    CHECK(dx[0] == 0.375f);
    CHECK(dx[1] == -0.375f);
    // log_softmax: y = log(0.25, 0.75), dy = (1, 2): dx = dy - softmax · 3 = (0.25, -0.25).
    const float logy[] = {std::log(0.25f), std::log(0.75f)}, dy2[] = {1, 2};
    log_softmax_backward(1, 2, 1, logy, dy2, dx);
    CHECK(std::abs(dx[0] - 0.25f) <= 8 * kU);
    CHECK(std::abs(dx[1] + 0.25f) <= 8 * kU);
  }
}

// ---- masked softmax ----------------------------------------------------------------

TEST_CASE("kernels/masked_softmax") {
  SUBCASE("against the reference, lengths 0 to past n") {
    // Rows of n = 10 (all of it the padded tail) and n = 37 (body and tail).
    for (int64_t n : {10, 37}) {
      CAPTURE(n);
      const int64_t rows = 7;
      const int64_t lens[rows] = {0, 1, 3, n - 1, n, n + 5, 2};
      std::vector<float> x = random_vector(rows * n, 87, -8.0f, 8.0f), y(rows * n), y_ref(rows * n);
      masked_softmax(rows, n, lens, x.data(), y.data());
      masked_softmax_reference(rows, n, lens, x.data(), y_ref.data());
      for (int64_t r = 0; r < rows; ++r) {
        CAPTURE(r);
        for (int64_t k = 0; k < n; ++k) {
          // Same tolerance as softmax (the masked row is a softmax of n entries).
          CHECK(std::abs(double(y[r * n + k]) - y_ref[r * n + k]) <= softmax_tol(n, y_ref[r * n + k]));
          // From mathematics: exp(-1e6 - m) is 0 in float for any m > -1e6 + 104,
          // so a masked key gets exactly 0 unless the whole row is masked (then 1/n).
          if (lens[r] > 0 && k >= lens[r]) CHECK(y[r * n + k] == 0.0f);
        }
      }
      CHECK(std::abs(y[0] - 1.0 / static_cast<double>(n)) <= softmax_tol(n, y[0]));  // length 0: uniform
    }
  }

  SUBCASE("backward: softmax's on the kept keys, 0 on the masked ones") {
    const int64_t n = 10, rows = 3;
    const int64_t lens[rows] = {0, 4, 12};
    std::vector<float> x = random_vector(rows * n, 89, -3.0f, 3.0f), dy = random_vector(rows * n, 91), y(rows * n);
    std::vector<float> dx(rows * n), dx_plain(rows * n);
    masked_softmax(rows, n, lens, x.data(), y.data());
    masked_softmax_backward(rows, n, lens, y.data(), dy.data(), dx.data());
    softmax_backward(rows, n, 1, y.data(), dy.data(), dx_plain.data());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < n; ++k) CHECK(dx[r * n + k] == (k < lens[r] ? dx_plain[r * n + k] : 0.0f));
  }

  SUBCASE("backward against the reference, lengths 0 to past n") {
    for (int64_t n : {10, 37}) {
      CAPTURE(n);
      const int64_t rows = 6;
      const int64_t lens[rows] = {0, 1, 3, n - 1, n, n + 5};
      std::vector<float> x = random_vector(rows * n, 93, -6.0f, 6.0f), dy = random_vector(rows * n, 95, -2.0f, 2.0f);
      std::vector<float> y(rows * n), dx(rows * n), dx_ref(rows * n);
      masked_softmax_reference(rows, n, lens, x.data(), y.data());
      masked_softmax_backward(rows, n, lens, y.data(), dy.data(), dx.data());
      masked_softmax_backward_reference(rows, n, lens, y.data(), dy.data(), dx_ref.data());
      // softmax_backward's tolerance on a kept key (the same sum over the row),
      // and exactly 0 on a masked one in both.
      const double tol_scale = static_cast<double>(2 * n + 8) * kU;
      for (int64_t r = 0; r < rows; ++r) {
        CAPTURE(r);
        double dot = 0;  // Σⱼ |dyⱼ yⱼ| over the row
        for (int64_t j = 0; j < n; ++j) dot += std::abs(double(dy[r * n + j]) * y[r * n + j]);
        for (int64_t k = 0; k < n; ++k) {
          const int64_t i = r * n + k;
          if (k >= lens[r]) {
            CHECK(dx[i] == 0.0f);
            CHECK(dx_ref[i] == 0.0f);
          } else {
            CHECK(std::abs(double(dx[i]) - dx_ref[i]) <= tol_scale * y[i] * (std::abs(dy[i]) + dot));
          }
        }
      }
    }
  }
}

// ---- cross-entropy ------------------------------------------------------------------

namespace {

struct CrossEntropyCase {
  int64_t N, C;
  bool weighted;
  float smoothing;
};

// Tolerances, from the rounding the two versions do differently: the exp
// (a couple of ulps) and the order of the sums. In a row, log Σ moves by up
// to (2C + 16)·u and each logp[c] = (x[c] - m) - log Σ by that plus 4u·|logp[c]|;
// the smoothing sum adds C·u relative to Σ |w[c]·logp[c]|. So
//   |Δloss| ≤ (2C + 16)·u · ((1-ε)·w[t]·(1 + |logp[t]|) + ε/C · Σ_c w[c]·(1 + |logp[c]|))
// The backward reads the same stats in both, so p differs only by the exp:
//   |Δdx[c]| ≤ 8u · |g| · (a·p[c] + ε/C·w[c] + [c = t]·(1-ε)·w[t])
void check_cross_entropy_matches_reference(CrossEntropyCase s) {
  CAPTURE(s.N);
  CAPTURE(s.C);
  CAPTURE(s.weighted);
  CAPTURE(s.smoothing);
  const int64_t N = s.N, C = s.C, ignore = -100;
  std::vector<float> x = random_vector(N * C, 93, -6.0f, 6.0f), dloss = random_vector(N, 95, -1.0f, 1.0f);
  std::vector<float> w = random_vector(C, 97, 0.1f, 2.0f);
  std::vector<int64_t> target(N);
  for (int64_t i = 0; i < N; ++i) target[i] = i % 4 == 3 ? ignore : (i * 7) % C;  // every fourth row ignored
  const float* weight = s.weighted ? w.data() : nullptr;
  auto wt = [&](int64_t c) { return s.weighted ? double(w[c]) : 1.0; };
  const double eps = s.smoothing, eps_c = eps / static_cast<double>(C);

  std::vector<float> loss(N), loss_ref(N), stats(2 * N), stats_ref(2 * N), dx(N * C), dx_ref(N * C);
  cross_entropy(N, C, x.data(), target.data(), weight, ignore, s.smoothing, loss.data(), stats.data());
  cross_entropy_reference(N, C, x.data(), target.data(), weight, ignore, s.smoothing, loss_ref.data(),
                          stats_ref.data());
  cross_entropy_backward(N, C, x.data(), stats.data(), target.data(), weight, ignore, s.smoothing, dloss.data(),
                         dx.data());
  cross_entropy_backward_reference(N, C, x.data(), stats.data(), target.data(), weight, ignore, s.smoothing,
                                   dloss.data(), dx_ref.data());
  double w_sum = 0;
  for (int64_t c = 0; c < C; ++c) w_sum += wt(c);
  for (int64_t i = 0; i < N; ++i) {
    CAPTURE(i);
    const int64_t t = target[i];
    CHECK(stats[2 * i] == stats_ref[2 * i]);  // the max is exact
    if (t == ignore) {
      CHECK(loss[i] == 0.0f);
      for (int64_t c = 0; c < C; ++c) CHECK(dx[i * C + c] == 0.0f);
      continue;
    }
    auto logp = [&](int64_t c) { return double(x[i * C + c]) - stats_ref[2 * i] - stats_ref[2 * i + 1]; };
    double scale = (1 - eps) * wt(t) * (1 + std::abs(logp(t)));
    for (int64_t c = 0; c < C; ++c) scale += eps_c * wt(c) * (1 + std::abs(logp(c)));
    CHECK(std::abs(double(loss[i]) - loss_ref[i]) <= static_cast<double>(2 * C + 16) * kU * scale);

    const double g = dloss[i], a = (1 - eps) * wt(t) + eps_c * w_sum;
    int64_t bad = 0;
    for (int64_t c = 0; c < C; ++c) {
      const double bound = a * std::exp(logp(c)) + eps_c * wt(c) + (c == t ? (1 - eps) * wt(t) : 0.0);
      bad += !(std::abs(double(dx[i * C + c]) - dx_ref[i * C + c]) <= 8 * kU * std::abs(g) * bound);
    }
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("kernels/cross_entropy") {
  SUBCASE("(8, 5)") { check_cross_entropy_matches_reference({8, 5, false, 0.0f}); }
  SUBCASE("(8, 201) weighted") { check_cross_entropy_matches_reference({8, 201, true, 0.0f}); }
  SUBCASE("(8, 37) smoothed") { check_cross_entropy_matches_reference({8, 37, false, 0.1f}); }
  SUBCASE("(12, 201) weighted and smoothed") { check_cross_entropy_matches_reference({12, 201, true, 0.3f}); }
  SUBCASE("(4, 1): one class") { check_cross_entropy_matches_reference({4, 1, true, 0.5f}); }

  SUBCASE("by hand") {
    // Row (0, log 3): p = (1/4, 3/4), so with target 1 the loss is -log(3/4)
    // and dx = p - onehot(1) = (1/4, -1/4).
    const float x[] = {0.0f, std::log(3.0f)};
    const int64_t target[] = {1};
    const float dloss[] = {1.0f};
    float loss, stats[2], dx[2];
    cross_entropy(1, 2, x, target, nullptr, -100, 0.0f, &loss, stats);
    CHECK(std::abs(loss + std::log(0.75f)) <= 8 * kU);
    cross_entropy_backward(1, 2, x, stats, target, nullptr, -100, 0.0f, dloss, dx);
    CHECK(std::abs(dx[0] - 0.25f) <= 8 * kU);
    CHECK(std::abs(dx[1] + 0.25f) <= 8 * kU);
  }
}
