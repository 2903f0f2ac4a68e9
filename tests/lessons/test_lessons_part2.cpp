// The lessons of the course's second part, run at their defaults as a user
// runs them, and checked from the numbers they write to results.json (not
// from their prose). Expected values come from the mathematics, as each
// check says.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <pugixml.hpp>

#include <qkv/data/text_classification.hpp>

#include "run_lesson.hpp"

using qkv::lesson_test::check_ran;
using qkv::lesson_test::LessonRun;

namespace {}  // namespace

TEST_CASE("lessons/09_multi_head_attention") {
  LessonRun r("09_multi_head_attention");
  check_ran(r, {"多头注意力机制", "transpose_qkv", "Erratum: 004 2.1"}, {"head_weights.svg"});
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

TEST_CASE("lessons/12_attention_classifier") {
  LessonRun r("12_attention_classifier");
  check_ran(r, {"1.简介", "3.1 概览", "3.2 模型实现", "对输入进行嵌入", "Erratum: 004 3.2"},
            {"training.svg", "attention_sentence_0.svg"});
  // The notes' Linear((10 + 5)·5, 10·5) on cat([embedded, embedded], -1), which has 2·5 features, is refused.
  std::string error = r.results().at("notes_model_error").get<std::string>();
  CHECK(error.find("10 features") != std::string::npos);
  CHECK(error.find("expects 75") != std::string::npos);

  // The held-out sentences, read here: which words are negations, and how long each sentence is.
  qkv::data::LabeledText test = qkv::data::read_text_classification(std::string(QKV_DATA_DIR) + "/sentiment/test.txt");
  const std::vector<std::string> negations = {"not", "never", "no", "nobody", "nothing", "none", "neither", "nor"};
  auto is_negation = [&](const std::string& w) {
    return std::find(negations.begin(), negations.end(), w) != negations.end() || w.ends_with("n't");
  };
  for (int seed : {0, 1, 2}) {
    INFO("seed " << seed);
    LessonRun run("12_attention_classifier", fmt::format("--seed {}", seed));
    INFO(run.run.output);
    REQUIRE(run.run.status == 0);
    const nlohmann::json& res = run.json.at("results");
    CHECK(res.at("test_accuracy").get<double>() >= 0.9);
    std::vector<double> losses = res.at("losses").get<std::vector<double>>();
    REQUIRE(!losses.empty());
    CHECK(losses.back() < losses.front() / 4);
    // The weights (N, T): each row a softmax over the sentence's valid words, zero on the padding.
    std::vector<int64_t> shape = res.at("test_weights").at("shape").get<std::vector<int64_t>>();
    REQUIRE(shape.size() == 2);
    REQUIRE(shape[0] == static_cast<int64_t>(test.tokens.size()));
    const size_t T = static_cast<size_t>(shape[1]);
    std::vector<float> w = res.at("test_weights").at("values").get<std::vector<float>>();
    // The negation word's mean share over the negated sentences, recomputed from the weights, against
    // 1/length: the share of each word if attention were uniform.
    double share = 0, uniform = 0;
    int64_t negated = 0;
    for (size_t i = 0; i < test.tokens.size(); ++i) {
      const size_t len = std::min(test.tokens[i].size(), T);
      double row = 0, on_negation = 0;
      int64_t count = 0;
      for (size_t t = 0; t < T; ++t) {
        float p = w[i * T + t];
        if (t >= len) CHECK(p == 0.0f);
        row += p;
        if (t < len && is_negation(test.tokens[i][t])) {
          on_negation += p;
          ++count;
        }
      }
      CHECK(row == doctest::Approx(1).epsilon(1e-5));
      if (count == 0) continue;
      share += on_negation / static_cast<double>(count);
      uniform += 1.0 / static_cast<double>(len);
      ++negated;
    }
    REQUIRE(negated > 0);
    share /= static_cast<double>(negated);
    uniform /= static_cast<double>(negated);
    CHECK(res.at("negated_sentences").get<int64_t>() == negated);
    CHECK(res.at("negation_share").get<double>() == doctest::Approx(share).epsilon(1e-4));
    CHECK(res.at("uniform_share").get<double>() == doctest::Approx(uniform).epsilon(1e-6));
    CHECK(share >= 2 * uniform);
  }
}
