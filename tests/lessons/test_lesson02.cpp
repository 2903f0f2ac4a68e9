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

// d2l's comparison of kernels and widths, recomputed from the saved training
// points with each kernel written out here (d = x - xᵢ):
//   Gaussian exp(-d²/2), boxcar 1 if |d| < 1, constant 1, Epanechnikov (d2l's) max(0, 1 - |d|),
//   and the Gaussian of width σ, exp(-d²/(2σ²)) for σ = 0.1, 0.2, 0.5, 1;
// α = K / Σ K, f(x) = Σ α yᵢ, test MSE against 2 sin(x) + x^0.8 at x = 0, 0.1, …, 4.9.
namespace {
double nw_test_mse(const std::vector<float>& x, const std::vector<float>& y, double (*K)(double, double),
                   double sigma) {
  double mse = 0;
  for (size_t q = 0; q < 50; ++q) {
    const double query = 0.1 * static_cast<double>(q);
    double total = 0, weighted = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double k = K(query - x[i], sigma);
      total += k;
      weighted += k * y[i];
    }
    mse += std::pow(weighted / total - (2 * std::sin(query) + std::pow(query, 0.8)), 2) / 50;
  }
  return mse;
}
double gaussian(double d, double sigma) { return std::exp(-d * d / (2 * sigma * sigma)); }
double boxcar(double d, double) { return std::abs(d) < 1 ? 1 : 0; }
double constant(double, double) { return 1; }
double epanechnikov(double d, double) { return std::max(0.0, 1 - std::abs(d)); }
}  // namespace

TEST_CASE("lessons/02_nadaraya_watson: d2l's kernels and widths, their test MSE at seeds 0, 1, 2") {
  for (int seed = 0; seed < 3; ++seed) {
    CAPTURE(seed);
    qkv::lesson_test::LessonRun r("02_nadaraya_watson", fmt::format("--seed {}", seed));
    INFO(r.run.output);
    REQUIRE(r.run.status == 0);
    const std::vector<float> x = r.values("x_train"), y = r.values("y_train");
    const auto kernel_mse = r.results().at("kernel_test_mse").get<std::vector<double>>();
    REQUIRE(kernel_mse.size() == 4);
    CHECK(kernel_mse[0] == doctest::Approx(nw_test_mse(x, y, gaussian, 1)).epsilon(1e-4));
    CHECK(kernel_mse[1] == doctest::Approx(nw_test_mse(x, y, boxcar, 1)).epsilon(1e-4));
    CHECK(kernel_mse[2] == doctest::Approx(nw_test_mse(x, y, constant, 1)).epsilon(1e-4));
    CHECK(kernel_mse[3] == doctest::Approx(nw_test_mse(x, y, epanechnikov, 1)).epsilon(1e-4));
    // The Gaussian row is §2's softmax form; the constant kernel is lesson 01's average pooling.
    CHECK(kernel_mse[0] == doctest::Approx(r.results().at("test_mse").get<double>()).epsilon(1e-4));
    CHECK(kernel_mse[2] == doctest::Approx(r.results().at("average_pooling_test_mse").get<double>()).epsilon(1e-4));
    const auto widths = r.results().at("widths").get<std::vector<double>>();
    const auto width_mse = r.results().at("width_test_mse").get<std::vector<double>>();
    REQUIRE(widths == std::vector<double>{0.1, 0.2, 0.5, 1.0});
    REQUIRE(width_mse.size() == 4);
    for (size_t i = 0; i < 4; ++i)
      CHECK(width_mse[i] == doctest::Approx(nw_test_mse(x, y, gaussian, widths[i])).epsilon(1e-4));
    // Each picture names what it compares: every kernel and every width is in its legend.
    // (A pair, not a structured binding: clang 14 refuses a binding inside INFO's lambda.)
    for (const auto& picture : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"kernels_predictions.svg", {"Gaussian", "boxcar", "constant", "Epanechnikov", "truth f(x)"}},
             {"kernels_weights.svg", {"Gaussian", "boxcar", "constant", "Epanechnikov"}},
             {"widths_predictions.svg", {"σ = 0.1", "σ = 0.2", "σ = 0.5", "σ = 1"}},
             {"widths_weights.svg", {"σ = 0.1", "σ = 0.2", "σ = 0.5", "σ = 1"}}}) {
      const std::string& file = picture.first;
      const std::vector<std::string>& names = picture.second;
      INFO(file);
      pugi::xml_document svg;
      REQUIRE(svg.load_file((r.out / file).c_str()));
      std::vector<std::string> texts;
      for (const pugi::xpath_node& t : svg.select_nodes("//text")) texts.emplace_back(t.node().child_value());
      for (const std::string& name : names) {
        INFO(name);
        CHECK(std::find(texts.begin(), texts.end(), name) != texts.end());
      }
    }
  }
}
