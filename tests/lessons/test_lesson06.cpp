// Lesson 06 (the Attn module): its output recomputed from results.json alone,
// in plain loops, from the saved Q, K, V and the two Linear layers' weights,
// following 000 §3.3's three steps as the notes state them:
//   1. weights = softmax(attn(cat(Q[0], K[0]))), applied = weights · V[0]
//   2. cat(Q[0], applied)
//   3. attn_combine of that
#include <doctest/doctest.h>

#include <cmath>

#include "run_lesson.hpp"

using qkv::lesson_test::LessonRun;

namespace {

// y = W x + b for W (out, in) row-major.
std::vector<double> linear(const std::vector<float>& W, const std::vector<float>& b, const std::vector<double>& x) {
  std::vector<double> y(b.size());
  for (size_t o = 0; o < b.size(); ++o) {
    double s = b[o];
    for (size_t i = 0; i < x.size(); ++i) s += static_cast<double>(W[o * x.size() + i]) * x[i];
    y[o] = s;
  }
  return y;
}

}  // namespace

TEST_CASE("lessons/06_attn_module: the output recomputed from results.json") {
  LessonRun r("06_attn_module");
  INFO(r.run.output);
  qkv::lesson_test::check_ran(r, {"3.3 第二步, the other branch", "no concatenation"}, {"attention_weights.svg"});
  REQUIRE(r.shape("Q") == std::vector<int64_t>{1, 1, 32});
  REQUIRE(r.shape("K") == std::vector<int64_t>{1, 1, 32});
  REQUIRE(r.shape("V") == std::vector<int64_t>{1, 32, 64});
  REQUIRE(r.shape("attn_weight") == std::vector<int64_t>{32, 64});
  REQUIRE(r.shape("attn_combine_weight") == std::vector<int64_t>{64, 96});
  const std::vector<float> Q = r.values("Q"), K = r.values("K"), V = r.values("V");

  // Step 1: rule 1 on cat(Q, K) (64 features) -> 32 scores -> softmax -> weights · V (32 x 64).
  std::vector<double> qk(Q.begin(), Q.end());
  qk.insert(qk.end(), K.begin(), K.end());
  std::vector<double> scores = linear(r.values("attn_weight"), r.values("attn_bias"), qk);
  double z = 0;
  for (double s : scores) z += std::exp(s);
  std::vector<double> weights(32), applied(64, 0.0);
  for (size_t i = 0; i < 32; ++i) {
    weights[i] = std::exp(scores[i]) / z;
    for (size_t c = 0; c < 64; ++c) applied[c] += weights[i] * V[i * 64 + c];
  }
  const std::vector<float> saved_weights = r.values("weights");
  REQUIRE(saved_weights.size() == 32);
  for (size_t i = 0; i < 32; ++i) CHECK(saved_weights[i] == doctest::Approx(weights[i]).epsilon(1e-5));

  // Step 2: Q joined to step 1's result (32 + 64 = 96); step 3: attn_combine -> 64.
  std::vector<double> joined(Q.begin(), Q.end());
  joined.insert(joined.end(), applied.begin(), applied.end());
  std::vector<double> output = linear(r.values("attn_combine_weight"), r.values("attn_combine_bias"), joined);
  const std::vector<float> saved = r.values("output");
  REQUIRE(r.shape("output") == std::vector<int64_t>{1, 1, 64});
  for (size_t c = 0; c < 64; ++c) CHECK(saved[c] == doctest::Approx(output[c]).epsilon(1e-4));

  // The dot-product branch: its final Linear reads the attention's D = 32 features alone, Attn's reads
  // the query joined to them, 32 + 64.
  CHECK(r.results().at("dot_branch_combine_in_features").get<int64_t>() == 32);
  CHECK(r.results().at("attn_combine_in_features").get<int64_t>() == 96);
  CHECK(r.shape("dot_branch_output_shape") == std::vector<int64_t>{1, 5, 64});
}

// The weights picture is one row high: its row is named beside it in full
// ("the query Q"), and no label of the picture is cut short with "…".
TEST_CASE("lessons/06_attn_module: the weights picture names its one row in full") {
  LessonRun r("06_attn_module");
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  pugi::xml_document svg;
  REQUIRE(svg.load_file((r.out / "attention_weights.svg").c_str()));
  bool named = false;
  for (const pugi::xpath_node& t : svg.select_nodes("//text")) {
    const std::string text = t.node().child_value();
    INFO(text);
    CHECK(text.find("…") == std::string::npos);
    named = named || text == "the query Q";
  }
  CHECK(named);
}
