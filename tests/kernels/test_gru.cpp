// gru_cell and gru_cell_backward against their reference twins and against
// values worked out by hand.
//
// H = 37 = 2·16 + 5 runs the vector body and the scalar tail for SIMD widths
// 4, 8 and 16; H = 3 is all tail.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/gru.hpp"
#include "kernels/kernel_test_util.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

namespace {

// Tolerances. The two versions differ only in σ and tanh (xsimd's against
// libm's, a few ulps each); every other operation is the same in the same
// order. An error of δ = 8u relative in r, z and n moves
//   h' = (1 - z)·n + z·h            by at most 8u·(|1 - z|·|n| + z·|n| + z·|h|)·2,
// and each gradient, a product of at most four such factors, by 32u relative
// to the product of the magnitudes (the bound computed below as `scale`).
void check_matches_reference(int64_t B, int64_t H) {
  CAPTURE(B);
  CAPTURE(H);
  std::vector<float> xw = random_vector(B * 3 * H, 71, -3.0f, 3.0f), hw = random_vector(B * 3 * H, 73, -3.0f, 3.0f);
  std::vector<float> h = random_vector(B * H, 75), dh_next = random_vector(B * H, 77);
  std::vector<float> h_next(B * H), h_next_ref(B * H), gates(B * 3 * H), gates_ref(B * 3 * H);
  gru_cell(B, H, xw.data(), hw.data(), h.data(), h_next.data(), gates.data());
  gru_cell_reference(B, H, xw.data(), hw.data(), h.data(), h_next_ref.data(), gates_ref.data());
  int64_t bad = 0;
  for (int64_t i = 0; i < B * 3 * H; ++i) bad += !(std::abs(gates[i] - gates_ref[i]) <= 8 * kU);  // r, z, n ≤ 1
  for (int64_t i = 0; i < B * H; ++i) bad += !(std::abs(h_next[i] - h_next_ref[i]) <= 16 * kU * (1 + std::abs(h[i])));
  CHECK(bad == 0);

  // The backward from the same gates, so only the arithmetic order could differ (it does not).
  std::vector<float> dxw(B * 3 * H), dhw(B * 3 * H), dh(B * H), dxw_ref(B * 3 * H), dhw_ref(B * 3 * H), dh_ref(B * H);
  gru_cell_backward(B, H, hw.data(), h.data(), gates.data(), dh_next.data(), dxw.data(), dhw.data(), dh.data());
  gru_cell_backward_reference(B, H, hw.data(), h.data(), gates.data(), dh_next.data(), dxw_ref.data(), dhw_ref.data(),
                              dh_ref.data());
  bad = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t k = 0; k < H; ++k) {
      // |dh'|·(1 + |h|)·(1 + |h_n|) bounds every factor chain in the backward.
      const double scale =
          std::abs(dh_next[b * H + k]) * (1 + std::abs(h[b * H + k])) * (1 + std::abs(hw[b * 3 * H + 2 * H + k]));
      for (int64_t j = 0; j < 3; ++j) {
        const int64_t i = b * 3 * H + j * H + k;
        bad += !(std::abs(dxw[i] - dxw_ref[i]) <= 32 * kU * scale);
        bad += !(std::abs(dhw[i] - dhw_ref[i]) <= 32 * kU * scale);
      }
      bad += !(std::abs(dh[b * H + k] - dh_ref[b * H + k]) <= 32 * kU * scale);
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("kernels/gru_cell") {
  SUBCASE("B 1, H 3") { check_matches_reference(1, 3); }
  SUBCASE("B 4, H 37") { check_matches_reference(4, 37); }
  SUBCASE("B 3, H 32") { check_matches_reference(3, 32); }

  SUBCASE("by hand: zero pre-activations") {
    // r = z = σ(0) = 1/2, n = tanh(0 + r·0) = 0, so h' = z·h = h/2.
    // Backward with dh' = 1: dn = 1/2, dz = h - n = h, dh = z = 1/2,
    // da_n = dn·(1 - 0) = 1/2, da_r = da_n·h_n·r(1-r) = 0, da_z = h/4.
    const int64_t H = 20;  // a register and a tail for widths up to 16
    std::vector<float> xw(3 * H, 0.0f), hw(3 * H, 0.0f), h(H, 2.0f), h_next(H), gates(3 * H), ones(H, 1.0f);
    gru_cell(1, H, xw.data(), hw.data(), h.data(), h_next.data(), gates.data());
    for (float v : h_next) CHECK(v == 1.0f);
    std::vector<float> dxw(3 * H), dhw(3 * H), dh(H);
    gru_cell_backward(1, H, hw.data(), h.data(), gates.data(), ones.data(), dxw.data(), dhw.data(), dh.data());
    for (int64_t k = 0; k < H; ++k) {
      CAPTURE(k);
      CHECK(dxw[k] == 0.0f);
      CHECK(dxw[H + k] == 0.5f);
      CHECK(dxw[2 * H + k] == 0.5f);
      CHECK(dhw[H + k] == 0.5f);
      CHECK(dhw[2 * H + k] == 0.25f);  // da_n · r
      CHECK(dh[k] == 0.5f);
    }
  }
}
