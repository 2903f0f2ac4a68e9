// The lessons of the course's second part, run at their defaults as a user
// runs them, and checked from the numbers they write to results.json (not
// from their prose). Expected values come from the mathematics, as each
// check says.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <pugixml.hpp>

#include "run_lesson.hpp"

using qkv::lesson_test::check_ran;
using qkv::lesson_test::LessonRun;

namespace {}  // namespace

TEST_CASE("lessons/09_multi_head_attention") {
  LessonRun r("09_multi_head_attention");
  check_ran(
      r,
      {"What this lesson shows", "多头注意力机制", "transpose_qkv", "Erratum: 004 2.1", "上下文", "What to remember"},
      {"head_weights.svg"});
  // d2l 11.5: queries (2, 4, 100) -> output (2, 4, 100); 5 heads of 100/5 = 20 features in the batch dim.
  CHECK(r.shape("output_shape") == std::vector<int64_t>{2, 4, 100});
  CHECK(r.shape("projected_shape") == std::vector<int64_t>{2, 4, 100});
  CHECK(r.shape("transposed_shape") == std::vector<int64_t>{10, 4, 20});
  CHECK(r.shape("round_trip_shape") == std::vector<int64_t>{2, 4, 100});
  // transpose_qkv and transpose_output only move numbers: exact.
  CHECK(r.results().at("layout_max_diff").get<double>() == 0.0);
  CHECK(r.results().at("round_trip_max_diff").get<double>() == 0.0);
  // The weights (B, h, Q, K) = (2, 5, 4, 6), recomputed here: each row sums to 1, the keys at or past
  // valid_lens [3, 2] get zero weight (a masked score of -1e6 underflows to 0 in exp), the others some.
  CHECK(r.shape("weights") == std::vector<int64_t>{2, 5, 4, 6});
  std::vector<float> w = r.values("weights");
  REQUIRE(w.size() == 2 * 5 * 4 * 6);
  const int lens[2] = {3, 2};
  for (size_t b = 0; b < 2; ++b)
    for (size_t row = 0; row < 5 * 4; ++row) {
      double s = 0;
      for (size_t k = 0; k < 6; ++k) {
        float p = w[((b * 20) + row) * 6 + k];
        if (static_cast<int>(k) >= lens[b])
          CHECK(p == 0.0f);
        else
          CHECK(p > 0.0f);
        s += p;
      }
      CHECK(s == doctest::Approx(1).epsilon(1e-5));
    }
  CHECK(r.results().at("max_weight_on_padding").get<double>() == 0.0);
  CHECK(r.results().at("max_row_sum_error").get<double>() <= 1e-5);
}

TEST_CASE("lessons/13_your_own_layer") {
  LessonRun r("13_your_own_layer");
  check_ran(r, {"forward and backward side by side", "qkv::gradcheck", "SwishMLP", "Training with Adam"},
            {"swish.svg", "loss.svg", "decision_surface.svg"});
  // The op against its definition: swish(x) = x·σ(x), d swish/dx = σ(x)(1 + x(1 − σ(x))).
  std::vector<float> x = r.values("x"), y = r.values("swish"), dy = r.values("derivative");
  REQUIRE(x.size() == 9);
  REQUIRE(y.size() == 9);
  REQUIRE(dy.size() == 9);
  for (size_t i = 0; i < x.size(); ++i) {
    double s = 1 / (1 + std::exp(-static_cast<double>(x[i])));
    CHECK(y[i] == doctest::Approx(x[i] * s).epsilon(1e-5));
    CHECK(dy[i] == doctest::Approx(s * (1 + x[i] * (1 - s))).epsilon(1e-4));
  }
  // gradcheck passes the right backward and fails the one without the product rule's second term,
  // saying where and with which numbers.
  CHECK(r.results().at("gradcheck_ok").get<bool>());
  CHECK(!r.results().at("gradcheck_wrong_ok").get<bool>());
  std::string message = r.results().at("gradcheck_wrong_message").get<std::string>();
  CHECK(message.find("element") != std::string::npos);
  CHECK(message.find("finite differences") != std::string::npos);
  // The wrong backward's largest error is the forgotten term |x·σ(x)(1 − σ(x))| at the worst input,
  // the largest over the checked inputs, and never above the term's maximum 0.2239 (at x = ±1.543).
  std::vector<float> inputs = r.values("gradcheck_input");
  double largest = 0;
  for (float v : inputs) {
    double s = 1 / (1 + std::exp(-static_cast<double>(v)));
    largest = std::max(largest, std::abs(v * s * (1 - s)));
  }
  CHECK(r.results().at("wrong_backward_max_error").get<double>() == doctest::Approx(largest).epsilon(1e-4));
  CHECK(largest <= 0.2239);
  // Training: the loss of two balanced classes starts near ln 2 (an untrained net is close to 50/50)
  // and falls far below it; the two moons are then separated on points the net never saw.
  std::vector<double> losses = r.results().at("losses").get<std::vector<double>>();
  REQUIRE(losses.size() == 300);
  CHECK(losses.front() == doctest::Approx(std::log(2.0)).epsilon(0.15));
  CHECK(losses.back() < losses.front() / 10);
  CHECK(r.results().at("train_accuracy").get<double>() >= 0.95);
  CHECK(r.results().at("test_accuracy").get<double>() >= 0.95);
}
