// Lesson 02 (Nadaraya–Watson kernel regression) checked from its results.json
// alone: the training points it saved give back, through 001 注意力汇聚 §2's
// formula written out here in plain loops, its weights, its prediction and
// the test MSE it claims.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "run_lesson.hpp"

TEST_CASE("lessons/02_nadaraya_watson: weights, prediction and test MSE from the saved training points") {
  qkv::lesson_test::LessonRun r("02_nadaraya_watson");
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  const std::vector<float> x = r.values("x_train"), y = r.values("y_train"), weights = r.values("weights"),
                           prediction = r.values("prediction");
  REQUIRE(x.size() == 50);
  REQUIRE(y.size() == 50);
  REQUIRE(weights.size() == 50 * 50);
  REQUIRE(prediction.size() == 50);
  // f(x) = Σᵢ softmax(-(x - xᵢ)²/2) yᵢ at the queries x = 0, 0.1, …, 4.9, against d2l's
  // noiseless 2 sin(x) + x^0.8.
  double mse = 0;
  for (size_t q = 0; q < 50; ++q) {
    const double query = 0.1 * static_cast<double>(q);
    double largest = -1e300;
    for (float xi : x) largest = std::max(largest, -(query - xi) * (query - xi) / 2);
    double total = 0, weighted = 0;
    std::vector<double> e(50);
    for (size_t i = 0; i < 50; ++i) {
      e[i] = std::exp(-(query - x[i]) * (query - x[i]) / 2 - largest);
      total += e[i];
      weighted += e[i] * y[i];
    }
    for (size_t i = 0; i < 50; ++i) CHECK(weights[q * 50 + i] == doctest::Approx(e[i] / total).epsilon(1e-4));
    const double f = weighted / total;
    CHECK(prediction[q] == doctest::Approx(f).epsilon(1e-4));
    mse += std::pow(f - (2 * std::sin(query) + std::pow(query, 0.8)), 2) / 50;
  }
  CHECK(r.results().at("test_mse").get<double>() == doctest::Approx(mse).epsilon(1e-4));
  // Lesson 01's average pooling, which the lesson prints beside it: the mean of y everywhere.
  double mean = 0, average_mse = 0;
  for (float v : y) mean += v / 50.0;
  for (size_t q = 0; q < 50; ++q) {
    const double query = 0.1 * static_cast<double>(q);
    average_mse += std::pow(mean - (2 * std::sin(query) + std::pow(query, 0.8)), 2) / 50;
  }
  CHECK(r.results().at("average_pooling_test_mse").get<double>() == doctest::Approx(average_mse).epsilon(1e-4));
}
