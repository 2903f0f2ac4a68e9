// Lesson 09 (d2l's multi-head attention) checked from its results.json
// alone: from the queries, keys (= values) and the four weight matrices it
// saved, d2l 11.5's forward written out here in plain loops (each head a
// scaled dot product on its 20 features, keys past the valid length
// masked, the heads side by side, then W_o) gives back every head's
// weights and the output.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "run_lesson.hpp"

TEST_CASE("lessons/09_multi_head_attention: weights and output from the saved inputs and weights") {
  qkv::lesson_test::LessonRun r("09_multi_head_attention");
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  constexpr size_t B = 2, NQ = 4, NK = 6, H = 100, h = 5, d = H / h;
  const size_t lens[B] = {3, 2};
  const std::vector<float> queries = r.values("queries"), keys = r.values("keys"), weights = r.values("weights"),
                           output = r.values("output");
  REQUIRE(queries.size() == B * NQ * H);
  REQUIRE(keys.size() == B * NK * H);
  REQUIRE(weights.size() == B * h * NQ * NK);
  REQUIRE(output.size() == B * NQ * H);
  // Linear without bias: y = x Wᵀ, W (H, H).
  auto project = [&](const std::vector<float>& x, size_t rows, const std::string& name) {
    const std::vector<float> W = r.values(name);
    REQUIRE(W.size() == H * H);
    std::vector<double> out(rows * H);
    for (size_t i = 0; i < rows; ++i)
      for (size_t o = 0; o < H; ++o)
        for (size_t k = 0; k < H; ++k) out[i * H + o] += static_cast<double>(x[i * H + k]) * W[o * H + k];
    return out;
  };
  const std::vector<double> Q = project(queries, B * NQ, "W_q"), K = project(keys, B * NK, "W_k"),
                            V = project(keys, B * NK, "W_v");
  const std::vector<float> W_o = r.values("W_o");
  for (size_t b = 0; b < B; ++b)
    for (size_t q = 0; q < NQ; ++q) {
      std::vector<double> joined(H);  // the heads' outputs side by side
      for (size_t i = 0; i < h; ++i) {
        std::vector<double> a(lens[b]);
        for (size_t k = 0; k < lens[b]; ++k) {
          for (size_t f = i * d; f < (i + 1) * d; ++f) a[k] += Q[(b * NQ + q) * H + f] * K[(b * NK + k) * H + f];
          a[k] /= std::sqrt(static_cast<double>(d));
        }
        const double largest = *std::max_element(a.begin(), a.end());
        double total = 0;
        for (double& v : a) total += v = std::exp(v - largest);
        for (size_t k = 0; k < NK; ++k) {
          const double expected = k < lens[b] ? a[k] / total : 0.0;
          CHECK(weights[((b * h + i) * NQ + q) * NK + k] == doctest::Approx(expected).epsilon(1e-4));
        }
        for (size_t f = i * d; f < (i + 1) * d; ++f)
          for (size_t k = 0; k < lens[b]; ++k) joined[f] += a[k] / total * V[(b * NK + k) * H + f];
      }
      for (size_t o = 0; o < H; ++o) {
        double y = 0;
        for (size_t f = 0; f < H; ++f) y += joined[f] * W_o[o * H + f];
        CHECK(output[(b * NQ + q) * H + o] == doctest::Approx(y).epsilon(1e-4));
      }
    }
}
