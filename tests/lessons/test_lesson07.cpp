// Lesson 07 (the notes' SelfAttention module) checked from its results.json
// alone: from the sentences and the three projections it saved, 002's
// forward written out here in plain loops (Q = X W_qᵀ + b_q, …, scores
// Q Kᵀ, a softmax per row, the probabilities times V) gives back the
// scores, probabilities and output it printed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "run_lesson.hpp"

TEST_CASE("lessons/07_self_attention: scores and output from the saved sentences and projections") {
  qkv::lesson_test::LessonRun r("07_self_attention");
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  constexpr size_t B = 2, T = 4, D = 10;
  const std::vector<float> X = r.values("sents"), scores = r.values("scores"), probs = r.values("probs"),
                           output = r.values("output");
  REQUIRE(X.size() == B * T * D);
  REQUIRE(scores.size() == B * T * T);
  REQUIRE(output.size() == B * T * D);
  // nn.Linear: y = x Wᵀ + b, W (out, in).
  auto project = [&](const std::string& name) {
    const std::vector<float> W = r.values(name + "_weight"), b = r.values(name + "_bias");
    REQUIRE(W.size() == D * D);
    REQUIRE(b.size() == D);
    std::vector<double> out(B * T * D);
    for (size_t bt = 0; bt < B * T; ++bt)
      for (size_t o = 0; o < D; ++o) {
        double s = b[o];
        for (size_t k = 0; k < D; ++k) s += static_cast<double>(X[bt * D + k]) * W[o * D + k];
        out[bt * D + o] = s;
      }
    return out;
  };
  const std::vector<double> Q = project("QueryW"), K = project("KeyW"), V = project("ValueW");
  for (size_t b = 0; b < B; ++b)
    for (size_t i = 0; i < T; ++i) {
      std::vector<double> s(T);
      for (size_t j = 0; j < T; ++j) {
        for (size_t o = 0; o < D; ++o) s[j] += Q[(b * T + i) * D + o] * K[(b * T + j) * D + o];
        CHECK(scores[(b * T + i) * T + j] == doctest::Approx(s[j]).epsilon(1e-4));
      }
      const double largest = *std::max_element(s.begin(), s.end());
      double total = 0;
      for (double& v : s) total += v = std::exp(v - largest);
      for (size_t o = 0; o < D; ++o) {
        double out = 0;
        for (size_t j = 0; j < T; ++j) out += s[j] / total * V[(b * T + j) * D + o];
        CHECK(output[(b * T + i) * D + o] == doctest::Approx(out).epsilon(1e-4));
      }
      for (size_t j = 0; j < T; ++j) CHECK(probs[(b * T + i) * T + j] == doctest::Approx(s[j] / total).epsilon(1e-4));
    }
}
