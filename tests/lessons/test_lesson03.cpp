// Lesson 03 (parametric attention pooling) checked from its results.json
// alone: from the training points and the w it saved, 001 注意力汇聚 §3's
// formula written out here in plain loops gives back the first epoch's loss
// (from the starting w), the loss of the learned w, the test MSE and the mean row entropy of the
// learned weights, and lesson 02's entropy (w = 1).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "run_lesson.hpp"

namespace {

// softmax over i of -((query - keys[i]) w)²/2, leaving out key `skip` (none when skip >= keys.size()).
std::vector<double> kernel(double query, const std::vector<float>& keys, double w, size_t skip) {
  std::vector<double> e(keys.size(), 0.0);
  double largest = -1e300, total = 0;
  for (size_t i = 0; i < keys.size(); ++i)
    if (i != skip) largest = std::max(largest, -std::pow((query - keys[i]) * w, 2) / 2);
  for (size_t i = 0; i < keys.size(); ++i)
    if (i != skip) total += e[i] = std::exp(-std::pow((query - keys[i]) * w, 2) / 2 - largest);
  for (double& v : e) v /= total;
  return e;
}

double f(double x) { return 2 * std::sin(x) + std::pow(x, 0.8); }  // d2l's noiseless function

}  // namespace

TEST_CASE("lessons/03_parametric_pooling: loss, test MSE and entropy from the saved points and w") {
  qkv::lesson_test::LessonRun r("03_parametric_pooling");
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  const std::vector<float> x = r.values("x_train"), y = r.values("y_train");
  REQUIRE(x.size() == 50);
  const double w_start = r.results().at("w_start").get<double>(), w = r.results().at("w").get<double>();

  // The training loss at a w: each training point a query over the other 49, squared errors summed.
  const auto training_loss = [&](double at_w) {
    double loss = 0;
    for (size_t q = 0; q < 50; ++q) {
      std::vector<double> a = kernel(x[q], x, at_w, q);
      double y_hat = 0;
      for (size_t i = 0; i < 50; ++i) y_hat += a[i] * y[i];
      loss += std::pow(y_hat - y[q], 2);
    }
    return loss;
  };
  // Epoch 1's loss is at w_start; the loss the summary ends on is the learned w's, after the last update.
  CHECK(r.results().at("losses").at(0).get<double>() == doctest::Approx(training_loss(w_start)).epsilon(1e-4));
  CHECK(r.results().at("final_loss").get<double>() == doctest::Approx(training_loss(w)).epsilon(1e-4));
  CHECK(r.results().at("final_loss").get<double>() < r.results().at("losses").back().get<double>());
  const std::string transcript = qkv::lesson_test::read_text(r.out / "transcript.txt");
  CHECK(transcript.find(fmt::format("to {:.4f} in 5 epochs", r.results().at("final_loss").get<double>())) !=
        std::string::npos);

  // The test queries 0, 0.1, …, 4.9 over all 50 points, at the learned w and at lesson 02's w = 1.
  double mse = 0, entropy = 0, entropy_02 = 0;
  for (size_t q = 0; q < 50; ++q) {
    const double query = 0.1 * static_cast<double>(q);
    std::vector<double> a = kernel(query, x, w, 50), a02 = kernel(query, x, 1.0, 50);
    double y_hat = 0;
    for (size_t i = 0; i < 50; ++i) {
      y_hat += a[i] * y[i];
      if (a[i] > 0) entropy -= a[i] * std::log(a[i]) / 50;
      if (a02[i] > 0) entropy_02 -= a02[i] * std::log(a02[i]) / 50;
    }
    mse += std::pow(y_hat - f(query), 2) / 50;
  }
  CHECK(r.results().at("test_mse").get<double>() == doctest::Approx(mse).epsilon(1e-3));
  CHECK(r.results().at("mean_row_entropy").get<double>() == doctest::Approx(entropy).epsilon(1e-3));
  CHECK(r.results().at("mean_row_entropy_lesson02").get<double>() == doctest::Approx(entropy_02).epsilon(1e-4));
}

// Both panels of the weights picture are visible: each query's weights are
// drawn divided by its largest, on a scale fixed at 0 to 1, so every row of
// each 50 × 50 panel (lesson 02's w = 1 first, then the learned w) holds a
// cell at the top of the scale, viridis(1) = #fde725 (matplotlib's).
TEST_CASE("lessons/03_parametric_pooling: both panels of the weights picture reach the top of the scale") {
  qkv::lesson_test::LessonRun r("03_parametric_pooling");
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  pugi::xml_document svg;
  REQUIRE(svg.load_file((r.out / "attention_weights.svg").c_str()));
  std::vector<std::string> fills;
  for (const pugi::xpath_node& cell : svg.select_nodes("//*[@class='cell']"))
    fills.emplace_back(cell.node().attribute("fill").value());
  REQUIRE(fills.size() == 2 * 50 * 50);
  for (size_t panel = 0; panel < 2; ++panel)
    for (size_t row = 0; row < 50; ++row) {
      CAPTURE(panel);
      CAPTURE(row);
      const auto first = fills.begin() + static_cast<long>(panel * 2500 + row * 50);
      CHECK(std::find(first, first + 50, "#fde725") != first + 50);
    }
}

// What the summary claims, at seeds 0, 1 and 2: the loss of the learned w is
// below every epoch's (the last update helped too), w grew past lesson 02's 1,
// and the learned attention is sharper (lower mean row entropy).
TEST_CASE("lessons/03_parametric_pooling: the summary's claims at seeds 0, 1, 2") {
  for (int seed = 0; seed < 3; ++seed) {
    CAPTURE(seed);
    qkv::lesson_test::LessonRun r("03_parametric_pooling", fmt::format("--seed {}", seed));
    INFO(r.run.output);
    REQUIRE(r.run.status == 0);
    const auto losses = r.results().at("losses").get<std::vector<double>>();
    REQUIRE(losses.size() == 5);
    CHECK(r.results().at("final_loss").get<double>() < losses.back());
    CHECK(r.results().at("w").get<double>() > 1);
    CHECK(r.results().at("mean_row_entropy").get<double>() < r.results().at("mean_row_entropy_lesson02").get<double>());
  }
}
