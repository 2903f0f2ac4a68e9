// Lesson 01 (attention cues and average pooling): d2l's eye(10) picture and
// 003's contrast of attention with fully connected and pooling layers,
// recomputed from results.json alone in plain loops: the fully connected
// output from its saved weights, max and average pooling from the saved y,
// attention's Σᵢ softmax_i(-(x - xᵢ)²/2) yᵢ from the saved x and y.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "run_lesson.hpp"

using qkv::lesson_test::LessonRun;

TEST_CASE("lessons/01_average_pooling: the attention cues and the contrast with pooling, recomputed") {
  LessonRun r("01_average_pooling");
  INFO(r.run.output);
  qkv::lesson_test::check_ran(r, {"003 注意力机制产生的原因", "show_heatmaps(eye(10))"},
                              {"attention_cues.svg", "prediction.svg"});

  // eye(10): query i's whole weight on key i.
  REQUIRE(r.shape("attention_cues") == std::vector<int64_t>{10, 10});
  const std::vector<float> cues = r.values("attention_cues");
  for (size_t i = 0; i < 10; ++i)
    for (size_t j = 0; j < 10; ++j) CHECK(cues[i * 10 + j] == (i == j ? 1.0f : 0.0f));

  const std::vector<float> x = r.values("x_train"), y = r.values("y_train");
  REQUIRE(x.size() == y.size());
  const auto& res = r.results();
  // The three layers without a query: one number each.
  const std::vector<float> w = r.values("contrast_fc_weight"), b = r.values("contrast_fc_bias");
  REQUIRE(w.size() == y.size());
  REQUIRE(b.size() == 1);
  double fc = b[0];
  for (size_t i = 0; i < y.size(); ++i) fc += static_cast<double>(w[i]) * y[i];
  CHECK(res.at("contrast_fully_connected").get<double>() == doctest::Approx(fc).epsilon(1e-5));
  CHECK(res.at("contrast_max_pooling").get<double>() == *std::max_element(y.begin(), y.end()));
  const double mean = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(y.size());
  CHECK(res.at("contrast_average_pooling").get<double>() == doctest::Approx(mean).epsilon(1e-5));

  // Attention, one output per query, and different for different queries.
  const std::vector<float> queries = r.values("contrast_queries"), attention = r.values("contrast_attention");
  REQUIRE(queries.size() == 3);
  REQUIRE(attention.size() == 3);
  for (size_t q = 0; q < 3; ++q) {
    double z = 0, s = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = std::exp(-0.5 * std::pow(queries[q] - x[i], 2));
      z += e;
      s += e * y[i];
    }
    CHECK(attention[q] == doctest::Approx(s / z).epsilon(1e-5));
  }
  CHECK(attention[0] != attention[1]);
  CHECK(attention[1] != attention[2]);
}
