// layer_norm and layer_norm_backward against their reference twins, and
// against values worked out by hand.
//
// D = 37 = 2·16 + 5 runs the vector body and the scalar tail for SIMD widths
// 4, 8 and 16; D = 3 is all tail.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/kernel_test_util.hpp"
#include "kernels/layer_norm.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

namespace {

// Tolerances. The versions differ in the order of the row sums (up to D·u
// relative to the sum of magnitudes) and in fma against multiply-then-add
// (one rounding). μ then moves by D·u·mean|x|, σ² and rstd by about 2D·u
// relative, so x̂ by (2D + 8)·u·(1 + |x̂|) and y by that times |w|. In the
// backward, the two means move by D·u relative to their sums of magnitudes
// Σ|g| and Σ|g x̂|, giving
//   |Δdx| ≤ (2D + 8)·u · rstd · (|g| + mean|g| + (1 + |x̂|)·mean|g x̂| + |x̂|·mean|g|).
void check_matches_reference(int64_t rows, int64_t D, bool affine) {
  CAPTURE(rows);
  CAPTURE(D);
  CAPTURE(affine);
  std::vector<float> x = random_vector(rows * D, 61, -3.0f, 4.0f), dy = random_vector(rows * D, 63);
  std::vector<float> w = random_vector(D, 65, 0.5f, 1.5f), b = random_vector(D, 67);
  const float* weight = affine ? w.data() : nullptr;
  const float* bias = affine ? b.data() : nullptr;
  std::vector<float> y(rows * D), y_ref(rows * D), mean(rows), mean_ref(rows), rstd(rows), rstd_ref(rows);
  layer_norm(rows, D, x.data(), weight, bias, 1e-5f, y.data(), mean.data(), rstd.data());
  layer_norm_reference(rows, D, x.data(), weight, bias, 1e-5f, y_ref.data(), mean_ref.data(), rstd_ref.data());
  const double tol = static_cast<double>(2 * D + 8) * kU;
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double abs_mean = 0;
    for (int64_t k = 0; k < D; ++k) abs_mean += std::abs(x[r * D + k]) / static_cast<double>(D);
    bad += !(std::abs(mean[r] - mean_ref[r]) <= tol * abs_mean);
    bad += !(std::abs(rstd[r] - rstd_ref[r]) <= tol * rstd_ref[r]);
    for (int64_t k = 0; k < D; ++k) {
      const double xhat = (double(x[r * D + k]) - mean_ref[r]) * rstd_ref[r];
      const double wk = affine ? std::abs(w[k]) : 1.0;
      bad += !(std::abs(y[r * D + k] - y_ref[r * D + k]) <= tol * ((1 + std::abs(xhat)) * wk + 1));
    }
  }
  CHECK(bad == 0);

  // The backward from the same mean and rstd.
  std::vector<float> dx(rows * D), dx_ref(rows * D), dw(D, 0.5f), dw_ref(D, 0.5f), db(D, 0.25f), db_ref(D, 0.25f);
  layer_norm_backward(rows, D, x.data(), weight, mean_ref.data(), rstd_ref.data(), dy.data(), dx.data(),
                      affine ? dw.data() : nullptr, affine ? db.data() : nullptr);
  layer_norm_backward_reference(rows, D, x.data(), weight, mean_ref.data(), rstd_ref.data(), dy.data(), dx_ref.data(),
                                affine ? dw_ref.data() : nullptr, affine ? db_ref.data() : nullptr);
  bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    auto xhat = [&](int64_t k) { return (double(x[r * D + k]) - mean_ref[r]) * rstd_ref[r]; };
    auto g = [&](int64_t k) { return double(dy[r * D + k]) * (affine ? w[k] : 1.0f); };
    double g_abs = 0, gx_abs = 0;
    for (int64_t k = 0; k < D; ++k) {
      g_abs += std::abs(g(k)) / static_cast<double>(D);
      gx_abs += std::abs(g(k) * xhat(k)) / static_cast<double>(D);
    }
    for (int64_t k = 0; k < D; ++k) {
      const double ax = std::abs(xhat(k));
      const double bound = tol * rstd_ref[r] * (std::abs(g(k)) + g_abs + (1 + ax) * gx_abs + ax * g_abs);
      bad += !(std::abs(dx[r * D + k] - dx_ref[r * D + k]) <= bound);
    }
  }
  // dweight and dbias: the same sums over rows in the same order; x̂ differs by fma only.
  for (int64_t k = 0; k < D; ++k) {
    bad += !(std::abs(dw[k] - dw_ref[k]) <= tol * static_cast<double>(rows) * 8);
    bad += !(db[k] == db_ref[k]);
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("kernels/layer_norm") {
  SUBCASE("rows 3, D 3, affine") { check_matches_reference(3, 3, true); }
  SUBCASE("rows 4, D 37, affine") { check_matches_reference(4, 37, true); }
  SUBCASE("rows 5, D 32, no affine") { check_matches_reference(5, 32, false); }

  SUBCASE("by hand") {
    // Row (1, 2, 3, …, 20) has μ = 10.5 and σ² = (20² - 1)/12 = 33.25; with
    // eps = 0, y_k = (k - 10.5)/sqrt(33.25). dy = 1 gives dx = 0 (g - mean(g) = 0
    // and Σ g x̂ = Σ x̂ = 0) and dbias = 1, dweight = x̂.
    const int64_t D = 20;
    std::vector<float> x(D), y(D), dy(D, 1.0f), dx(D), dw(D, 0.0f), db(D, 0.0f);
    for (int64_t k = 0; k < D; ++k) x[k] = static_cast<float>(k + 1);
    float mean, rstd;
    layer_norm(1, D, x.data(), nullptr, nullptr, 0.0f, y.data(), &mean, &rstd);
    CHECK(mean == 10.5f);
    const double s = std::sqrt(33.25);
    for (int64_t k = 0; k < D; ++k) CHECK(std::abs(y[k] - (double(k) + 1 - 10.5) / s) <= 8 * kU * 2);
    const float ones[D] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    layer_norm_backward(1, D, x.data(), ones, &mean, &rstd, dy.data(), dx.data(), dw.data(), db.data());
    for (int64_t k = 0; k < D; ++k) {
      CHECK(std::abs(dx[k]) <= 64 * kU);
      CHECK(db[k] == 1.0f);
      CHECK(std::abs(dw[k] - y[k]) <= 8 * kU * 2);
    }
  }
}
