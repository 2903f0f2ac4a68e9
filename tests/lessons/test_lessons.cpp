// Every lesson of the course, run at its defaults as a user runs it, and
// checked from the numbers it writes to results.json (not from its prose).
// Expected values come from the mathematics, as each check says.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <pugixml.hpp>

#include "run_lesson.hpp"

using qkv::lesson_test::check_ran;
using qkv::lesson_test::LessonRun;

namespace {

// Each row of the (rows, n) matrix `m` sums to 1: softmax weights.
void check_rows_sum_to_one(const std::vector<float>& m, size_t n) {
  REQUIRE(m.size() % n == 0);
  for (size_t row = 0; row < m.size() / n; ++row) {
    double s =
        std::accumulate(m.begin() + static_cast<long>(row * n), m.begin() + static_cast<long>((row + 1) * n), 0.0);
    CHECK(s == doctest::Approx(1).epsilon(1e-5));
  }
}

double f(double x) { return 2 * std::sin(x) + std::pow(x, 0.8); }  // d2l's toy function

}  // namespace

TEST_CASE("lessons/01_average_pooling") {
  LessonRun r("01_average_pooling");
  check_ran(r, {"1、平均汇聚", "注意力提示"}, {"prediction.svg"});
  // Average pooling predicts the mean of the training y everywhere (001 1、平均汇聚: f(x) = (1/n) Σ yᵢ),
  // and its MSE is measured against the noiseless f at x = 0, 0.1, …, 4.9: recomputed here.
  std::vector<float> y = r.values("y_train"), prediction = r.values("prediction");
  REQUIRE(y.size() == 50);
  REQUIRE(prediction.size() == 50);
  double y_mean = std::accumulate(y.begin(), y.end(), 0.0) / 50;
  double mse = 0;
  for (size_t i = 0; i < 50; ++i) {
    CHECK(prediction[i] == doctest::Approx(y_mean).epsilon(1e-5));
    mse += std::pow(prediction[i] - f(0.1 * static_cast<double>(i)), 2) / 50;
  }
  CHECK(r.results().at("test_mse").get<double>() == doctest::Approx(mse).epsilon(1e-4));
  std::vector<float> x = r.values("x_train");  // sorted draws from [0, 5)
  CHECK(std::is_sorted(x.begin(), x.end()));
  CHECK(x.front() >= 0);
  CHECK(x.back() < 5);
}

TEST_CASE("lessons/02_nadaraya_watson") {
  LessonRun r("02_nadaraya_watson"), r1("01_average_pooling");
  check_ran(r, {"2、非参数注意力汇聚"}, {"attention_weights.svg", "prediction.svg"});
  REQUIRE(r1.run.status == 0);
  // Attention pooling with a Gaussian kernel fits the curve better than the flat mean of lesson 01.
  double nw = r.results().at("test_mse").get<double>(), average = r1.results().at("test_mse").get<double>();
  CHECK(nw < average);
  CHECK(r.shape("weights") == std::vector<int64_t>{50, 50});
  check_rows_sum_to_one(r.values("weights"), 50);
}

TEST_CASE("lessons/03_parametric_pooling") {
  LessonRun r("03_parametric_pooling"), r2("02_nadaraya_watson");
  check_ran(r, {"3、带参数注意力汇聚"}, {"attention_weights.svg", "prediction.svg", "loss.svg", "loss_graph.dot"});
  REQUIRE(r2.run.status == 0);
  // d2l trains w for 5 epochs; its loss falls each epoch.
  std::vector<double> losses = r.results().at("losses").get<std::vector<double>>();
  REQUIRE(losses.size() == 5);
  for (size_t i = 1; i < losses.size(); ++i) CHECK(losses[i] < losses[i - 1]);
  // A learned w > 1 narrows the kernel: sharper weights, lower mean row entropy than lesson 02's w = 1,
  // whose entropy lesson 03 computes itself (checked here against lesson 02's own weights).
  CHECK(r.results().at("w").get<double>() > 1);
  double entropy = r.results().at("mean_row_entropy").get<double>();
  double entropy_02 = r.results().at("mean_row_entropy_lesson02").get<double>();
  CHECK(entropy < entropy_02);
  std::vector<float> w02 = r2.values("weights");
  double h = 0;
  for (float p : w02) h -= p > 0 ? p * std::log(static_cast<double>(p)) : 0;
  CHECK(entropy_02 == doctest::Approx(h / 50).epsilon(1e-3));
  check_rows_sum_to_one(r.values("weights"), 50);
  // The loss graph was drawn before backward(): it holds the ops of the forward pass.
  std::string dot = qkv::lesson_test::read_text(r.out / "loss_graph.dot");
  for (const char* op : {"SoftmaxBackward", "BmmBackward", "MulBackward"}) CHECK(dot.find(op) != std::string::npos);
}

TEST_CASE("lessons/04_scoring_functions") {
  LessonRun r("04_scoring_functions");
  check_ran(r, {"Erratum: 004 2.1", "屏蔽 softmax", "加性注意力", "缩放点积注意力", "注意力的输出", "计算过程"},
            {"similarity_weights.svg", "masked_softmax.svg", "additive_attention_weights.svg",
             "dot_product_attention_weights.svg"});
  // d2l's example: all keys equal, so the weights are uniform over the valid keys and each output is
  // the mean of the first valid_len rows of arange(40) as (10, 4): rows 0–1 -> [2, 3, 4, 5],
  // rows 0–5 -> [10, 11, 12, 13].
  const std::vector<float> expected = {2, 3, 4, 5, 10, 11, 12, 13};
  for (const char* key : {"additive_output", "dot_product_output"}) {
    INFO(key);
    CHECK(r.shape(key) == std::vector<int64_t>{2, 1, 4});
    std::vector<float> got = r.values(key);
    REQUIRE(got.size() == 8);
    for (size_t i = 0; i < 8; ++i) CHECK(std::abs(got[i] - expected[i]) <= 1e-5f);
  }
  // The masked softmax: zero weight past each valid length, the rest sums to 1.
  auto check_masked = [](const std::vector<float>& m, const std::vector<int>& lens) {
    REQUIRE(m.size() == 16);  // (2, 2, 4): 4 rows of 4
    for (size_t row = 0; row < 4; ++row) {
      double s = 0;
      for (size_t k = 0; k < 4; ++k) {
        float p = m[row * 4 + k];
        if (static_cast<int>(k) >= lens[row])
          CHECK(p == 0.0f);
        else
          CHECK(p > 0.0f);
        s += p;
      }
      CHECK(s == doctest::Approx(1).epsilon(1e-5));
    }
  };
  check_masked(r.values("masked_softmax_1d"), {2, 2, 3, 3});  // [2, 3]: one length per batch, both rows
  check_masked(r.values("masked_softmax_2d"), {1, 3, 2, 4});  // [[1, 3], [2, 4]]: one per row
  // The erratum: QKᵀ/√d is the dot product over √d = 2 here, not the cosine.
  std::vector<float> dot = r.values("similarity_dot"), scaled = r.values("similarity_scaled_dot"),
                     cosine = r.values("similarity_cosine");
  REQUIRE(dot.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(scaled[i] == doctest::Approx(dot[i] / 2).epsilon(1e-5));
    CHECK(std::abs(cosine[i]) <= 1.0f + 1e-6f);
  }
  CHECK(scaled != cosine);
}

TEST_CASE("lessons/05_attention_rules") {
  LessonRun r("05_attention_rules");
  check_ran(r, {"Rule 1", "Rule 2", "Rule 3", "BMM"}, {"attention_weights.svg"});
  for (const char* key : {"rule1_output_shape", "rule2_output_shape", "rule3_output_shape"}) {
    INFO(key);
    CHECK(r.shape(key) == std::vector<int64_t>{2, 1, 3});  // (B, 1, Dv)
  }
  for (const char* key : {"rule1_weights", "rule2_weights", "rule3_weights"}) check_rows_sum_to_one(r.values(key), 5);
  CHECK(r.shape("bmm_shape") == std::vector<int64_t>{10, 3, 5});  // (10, 3, 4) x (10, 4, 5)
  CHECK(r.results().at("bmm_max_diff_from_matmul").get<double>() <= 1e-5);
}

TEST_CASE("lessons/06_attn_module") {
  LessonRun r("06_attn_module");
  check_ran(r, {"3.3.注意力机制的实现步骤", "4.注意力机制的代码分析", "Erratum: 000 3.2", "解码器端"},
            {"attention_weights.svg"});
  CHECK(r.shape("output_shape") == std::vector<int64_t>{1, 1, 64});
  CHECK(r.shape("weights_shape") == std::vector<int64_t>{1, 32});
  check_rows_sum_to_one(r.values("weights"), 32);
  // Linear(64, 32) and Linear(96, 64), each with a bias.
  CHECK(r.results().at("num_parameters").get<int64_t>() == 64 * 32 + 32 + 96 * 64 + 64);
}

TEST_CASE("lessons/07_self_attention") {
  LessonRun r("07_self_attention");
  check_ran(r, {"Attention核心思想", "Without projections", "Erratum: 002"}, {"attention_weights.svg"});
  CHECK(r.shape("output_shape") == std::vector<int64_t>{2, 4, 10});
  check_rows_sum_to_one(r.values("probs"), 4);
  check_rows_sum_to_one(r.values("free_probs"), 4);
  // X Xᵀ of unit vectors: symmetric (xᵢ·xⱼ = xⱼ·xᵢ) with xᵢ·xᵢ = 1 on the diagonal.
  std::vector<float> s = r.values("free_scores"), p = r.values("scores");
  REQUIRE(s.size() == 32);
  double asymmetry_projected = 0;
  for (size_t b = 0; b < 2; ++b)
    for (size_t i = 0; i < 4; ++i) {
      CHECK(s[b * 16 + i * 4 + i] == doctest::Approx(1).epsilon(1e-5));
      for (size_t j = 0; j < 4; ++j) {
        CHECK(std::abs(s[b * 16 + i * 4 + j] - s[b * 16 + j * 4 + i]) <= 1e-6f);
        asymmetry_projected =
            std::max(asymmetry_projected, std::abs(double(p[b * 16 + i * 4 + j]) - p[b * 16 + j * 4 + i]));
      }
    }
  // The erratum: with random projections Q Kᵀ is not symmetric, so the notes' printed matrix is X Xᵀ.
  CHECK(asymmetry_projected > 1e-3);
}

TEST_CASE("lessons/the excerpt of lesson 07 in docs/course.md is what lesson 07 prints") {
  LessonRun r("07_self_attention");
  REQUIRE(r.run.status == 0);
  std::string transcript = qkv::lesson_test::read_text(r.out / "transcript.txt");
  std::string page = qkv::lesson_test::read_text(std::filesystem::path(QKV_SOURCE_DIR) / "docs" / "course.md");
  size_t start = page.find("```text\n== 3. Without projections");
  REQUIRE(start != std::string::npos);
  start += 8;
  std::string excerpt = page.substr(start, page.find("```", start) - start);
  // Each run of lines between the "…" marks appears in the transcript as it stands.
  size_t from = 0;
  while (from < excerpt.size()) {
    size_t mark = excerpt.find("…\n", from);
    std::string block = excerpt.substr(from, mark == std::string::npos ? std::string::npos : mark - from);
    INFO(block);
    CHECK(transcript.find(block) != std::string::npos);
    if (mark == std::string::npos) break;
    from = mark + std::string("…\n").size();
  }
}

TEST_CASE("lessons/03_parametric_pooling without Graphviz says how to draw its graph") {
  qkv::lesson_test::TempDir dir("lesson03_no_dot");
  // An empty PATH: the lesson is run by its full path, but `dot` cannot be found.
  qkv::lesson_test::Run r = qkv::lesson_test::run_program(
      "03_parametric_pooling", fmt::format("--out '{}'", (dir.path / "out").string()), dir.path, "PATH=/nonexistent");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(std::filesystem::exists(dir.path / "out" / "loss_graph.dot"));
  CHECK(!std::filesystem::exists(dir.path / "out" / "loss_graph.svg"));
  std::string transcript = qkv::lesson_test::read_text(dir.path / "out" / "transcript.txt");
  CHECK(transcript.find("apt-get install graphviz") != std::string::npos);
  CHECK(transcript.find("dot -Tsvg") != std::string::npos);
}
