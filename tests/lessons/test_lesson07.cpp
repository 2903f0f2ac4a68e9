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

// The reference here is note 002 itself: the score matrix and the softmax it
// printed under its module (4 decimals), typed in from the note. Lesson 07
// runs the note's printed sentences without projections and must give them
// back to within the rounding of its input (4 decimals: about 1e-4).
TEST_CASE("lessons/07_self_attention: the projection-free case gives 002's printed scores and softmax") {
  qkv::lesson_test::LessonRun r("07_self_attention");
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  const std::vector<float> note_scores = {1.0000f, 0.8921f, 0.9020f, 0.6954f, 0.8921f, 1.0000f, 0.7390f, 0.7076f,
                                          0.9020f, 0.7390f, 1.0000f, 0.7453f, 0.6954f, 0.7076f, 0.7453f, 1.0000f,
                                          1.0000f, 0.8352f, 0.7078f, 0.9250f, 0.8352f, 1.0000f, 0.5001f, 0.7811f,
                                          0.7078f, 0.5001f, 1.0000f, 0.6655f, 0.9250f, 0.7811f, 0.6655f, 1.0000f};
  const std::vector<float> note_probs = {0.2823f, 0.2535f, 0.2560f, 0.2082f, 0.2629f, 0.2929f, 0.2256f, 0.2186f,
                                         0.2626f, 0.2231f, 0.2897f, 0.2245f, 0.2263f, 0.2290f, 0.2378f, 0.3068f,
                                         0.2839f, 0.2408f, 0.2120f, 0.2634f, 0.2603f, 0.3069f, 0.1862f, 0.2466f,
                                         0.2433f, 0.1977f, 0.3259f, 0.2332f, 0.2692f, 0.2331f, 0.2076f, 0.2901f};
  const std::vector<float> scores = r.values("free_scores"), probs = r.values("free_probs");
  REQUIRE(scores.size() == note_scores.size());
  REQUIRE(probs.size() == note_probs.size());
  double score_gap = 0, prob_gap = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    INFO(i);
    CHECK(std::abs(scores[i] - note_scores[i]) <= 1e-4f);
    CHECK(std::abs(probs[i] - note_probs[i]) <= 1e-4f);
    score_gap = std::max(score_gap, double(std::abs(scores[i] - note_scores[i])));
    prob_gap = std::max(prob_gap, double(std::abs(probs[i] - note_probs[i])));
  }
  // The gaps the lesson prints are these.
  CHECK(r.results().at("note_score_gap").get<double>() == doctest::Approx(score_gap).epsilon(1e-3));
  CHECK(r.results().at("note_prob_gap").get<double>() == doctest::Approx(prob_gap).epsilon(1e-3));
  // The input is 002's first printed vector, made unit length again.
  const std::vector<float> X = r.values("sents");
  const std::vector<double> first = {0.1696, 0.0125, 0.1379, 0.3478, 0.3790, 0.2276, 0.4528, 0.2270, 0.4609, 0.4082};
  double norm = 0;
  for (double v : first) norm += v * v;
  for (size_t k = 0; k < first.size(); ++k) CHECK(X[k] == doctest::Approx(first[k] / std::sqrt(norm)).epsilon(1e-5));
  // The errata of §2 and §3 are said.
  const std::string transcript = qkv::lesson_test::read_text(r.out / "transcript.txt");
  CHECK(transcript.find("no 1/√d") != std::string::npos);
  CHECK(transcript.find("cut") != std::string::npos);
  CHECK(transcript.find("projection-free case") != std::string::npos);
}
