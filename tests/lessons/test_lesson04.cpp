// Lesson 04 (similarity and scoring functions): its claimed figures
// recomputed from results.json alone, in plain loops (not with qkv's ops):
// the MLP scores from the saved W_q, W_k, w_v, query and keys; the softmax
// weights from the saved scores; the weighted sums from the weights and the
// values. The √d measurements are checked against the mathematics: for
// independent components of mean 0 and variance σ², Var(q·k) = σ⁴·d.
#include <doctest/doctest.h>

#include <cmath>

#include "run_lesson.hpp"

using qkv::lesson_test::LessonRun;

namespace {

const LessonRun& lesson04() {
  static const LessonRun run("04_scoring_functions");
  return run;
}

// (rows, cols) row-major matrix times vector: y[r] = Σ_c m[r][c] x[c].
std::vector<double> matvec(const std::vector<float>& m, size_t rows, const std::vector<double>& x) {
  const size_t cols = x.size();
  std::vector<double> y(rows, 0.0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) y[r] += static_cast<double>(m[r * cols + c]) * x[c];
  return y;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace

TEST_CASE("lessons/04_scoring_functions: the figures recomputed from results.json") {
  const LessonRun& r = lesson04();
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  qkv::lesson_test::check_ran(r,
                              {"Erratum: 004 2.1 says each row of K", "Erratum: 001 加性注意力",
                               "Erratum: 001 缩放点积注意力", "why the dot product is divided by √d"},
                              {"sqrt_d_scaling.svg"});

  const std::vector<float> query = r.values("query"), keys = r.values("keys"), values = r.values("values");
  REQUIRE(r.shape("keys") == std::vector<int64_t>{3, 4});
  REQUIRE(r.shape("values") == std::vector<int64_t>{3, 2});
  REQUIRE(r.shape("mlp_W_q") == std::vector<int64_t>{8, 4});
  REQUIRE(r.shape("mlp_W_k") == std::vector<int64_t>{8, 4});
  REQUIRE(r.shape("mlp_w_v") == std::vector<int64_t>{1, 8});

  SUBCASE("the MLP score w_vᵀ tanh(W_q q + W_k k) of each key") {
    const std::vector<double> Wq_q = matvec(r.values("mlp_W_q"), 8, to_double(query));
    const std::vector<float> w_v = r.values("mlp_w_v"), mlp = r.values("similarity_mlp");
    REQUIRE(mlp.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      const std::vector<double> key(keys.begin() + static_cast<long>(4 * i),
                                    keys.begin() + static_cast<long>(4 * i + 4));
      const std::vector<double> Wk_k = matvec(r.values("mlp_W_k"), 8, key);
      double score = 0;
      for (size_t h = 0; h < 8; ++h) score += w_v[h] * std::tanh(Wq_q[h] + Wk_k[h]);
      CHECK(mlp[i] == doctest::Approx(score).epsilon(1e-5));
    }
  }

  SUBCASE("the dot and cosine scores, their softmax weights and the weighted sums Σᵢ aᵢ·Valueᵢ") {
    const std::vector<double> dot = matvec(keys, 3, to_double(query));
    double qq = 0;
    for (float q : query) qq += double(q) * q;
    std::vector<double> cosine(3);
    for (size_t i = 0; i < 3; ++i) {
      double kk = 0;
      for (size_t j = 0; j < 4; ++j) kk += double(keys[4 * i + j]) * keys[4 * i + j];
      cosine[i] = dot[i] / (std::sqrt(qq) * std::sqrt(kk));
      CHECK(r.values("similarity_dot")[i] == doctest::Approx(dot[i]).epsilon(1e-5));
      CHECK(r.values("similarity_cosine")[i] == doctest::Approx(cosine[i]).epsilon(1e-5));
    }
    const std::vector<float> mlp = r.values("similarity_mlp");
    const std::vector<std::vector<double>> scores = {dot, cosine, {mlp[0], mlp[1], mlp[2]}};
    const std::vector<float> weights = r.values("similarity_weights"), sums = r.values("weighted_sums");
    REQUIRE(weights.size() == 9);
    REQUIRE(sums.size() == 6);
    for (size_t rule = 0; rule < 3; ++rule) {
      double z = 0;
      for (double s : scores[rule]) z += std::exp(s);
      std::vector<double> a(3);
      for (size_t i = 0; i < 3; ++i) {
        a[i] = std::exp(scores[rule][i]) / z;
        CHECK(weights[rule * 3 + i] == doctest::Approx(a[i]).epsilon(1e-5));
      }
      for (size_t c = 0; c < 2; ++c) {
        double s = 0;
        for (size_t i = 0; i < 3; ++i) s += a[i] * values[i * 2 + c];
        CHECK(sums[rule * 2 + c] == doctest::Approx(s).epsilon(1e-5));
      }
    }
    // Two queries against three keys: one row of A per query, one column per key.
    CHECK(r.shape("attention_matrix_shape") == std::vector<int64_t>{2, 3});
  }

  SUBCASE("Var(q·k) = d for unit-variance components, 1 after dividing by √d; σ⁴·d for σ = 2") {
    const auto& res = r.results();
    const std::vector<double> ds = res.at("scaling_d").get<std::vector<double>>();
    REQUIRE(ds == std::vector<double>{4, 64, 512});
    const std::vector<double> var = res.at("scaling_variance").get<std::vector<double>>();
    const std::vector<double> var_scaled = res.at("scaling_variance_scaled").get<std::vector<double>>();
    // With n samples of X = q·k (E X⁴ = 3d² + 6d), the sample variance has relative standard deviation
    // about √(2/n) (plus the small correlation between the keys that share a query): 0.014 for
    // n = 10000. Allow 6 of them.
    const double n = res.at("scaling_samples").get<double>();
    const double tolerance = 6 * std::sqrt(2 / n);
    for (size_t i = 0; i < ds.size(); ++i) {
      INFO("d = " << ds[i]);
      CHECK(std::abs(var[i] / ds[i] - 1) < tolerance);
      CHECK(std::abs(var_scaled[i] - 1) < tolerance);
      CHECK(var_scaled[i] == doctest::Approx(var[i] / ds[i]).epsilon(1e-3));
    }
    CHECK(std::abs(res.at("scaling_variance_sigma2_d64").get<double>() / (16 * 64) - 1) < tolerance);
    CHECK(std::abs(res.at("scaling_variance_scaled_sigma2_d64").get<double>() / 16 - 1) < tolerance);
    // Unscaled, the softmax sharpens as d grows (larger top weight, lower entropy); scaled, it does not
    // depend on d, and it is always sharper unscaled once d > 1. Entropies lie in [0, ln 10].
    const std::vector<double> top = res.at("scaling_largest_weight").get<std::vector<double>>();
    const std::vector<double> top_scaled = res.at("scaling_largest_weight_scaled").get<std::vector<double>>();
    const std::vector<double> h = res.at("scaling_entropy").get<std::vector<double>>();
    const std::vector<double> h_scaled = res.at("scaling_entropy_scaled").get<std::vector<double>>();
    for (size_t i = 0; i < ds.size(); ++i) {
      CHECK(top[i] > top_scaled[i]);
      CHECK(h[i] < h_scaled[i]);
      CHECK((h[i] >= 0 && h_scaled[i] <= std::log(10.0)));
      CHECK(std::abs(h_scaled[i] - h_scaled[0]) < 0.1);
    }
    CHECK(top[0] < top[1]);
    CHECK(top[1] < top[2]);
    CHECK(h[2] < h[1]);
    CHECK(h[1] < h[0]);
  }
}

// 001 计算过程's figure is drawn from the numbers the lesson saved: the query,
// the three keys, the dot scores, the dot row of the softmax weights, the
// values, and their weighted sum (the figure prints vectors to 2 decimals,
// scores and weights to 3). The weighted sum is recomputed here from the
// weights and values.
TEST_CASE("lessons/04_scoring_functions: the 计算过程 figure shows the run's own numbers") {
  qkv::lesson_test::LessonRun r("04_scoring_functions");
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  pugi::xml_document svg;
  REQUIRE(svg.load_file((r.out / "computation.svg").c_str()));
  const auto texts = [&](const char* cls) {
    std::vector<std::string> out;
    for (const pugi::xpath_node& n : svg.select_nodes(fmt::format("//*[@class='{}']", cls).c_str()))
      out.emplace_back(n.node().child_value());
    return out;
  };
  const auto vec = [](const float* v, size_t n) {
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) s += fmt::format("{}{:.2f}", i ? ", " : "", v[i]);
    return s + "]";
  };
  const std::vector<float> query = r.values("query"), keys = r.values("keys"), dot = r.values("similarity_dot"),
                           weights = r.values("similarity_weights"), values = r.values("values");
  REQUIRE(query.size() == 4);
  REQUIRE(keys.size() == 12);
  REQUIRE(values.size() == 6);
  CHECK(texts("query") == std::vector<std::string>{vec(query.data(), 4)});
  CHECK(texts("key") ==
        std::vector<std::string>{vec(keys.data(), 4), vec(keys.data() + 4, 4), vec(keys.data() + 8, 4)});
  CHECK(texts("value") ==
        std::vector<std::string>{vec(values.data(), 2), vec(values.data() + 2, 2), vec(values.data() + 4, 2)});
  std::vector<std::string> scores, shown_weights;
  double out[2] = {0, 0};
  for (size_t i = 0; i < 3; ++i) {
    scores.push_back(fmt::format("s{} = {:.3f}", i, dot[i]));
    shown_weights.push_back(fmt::format("a{} = {:.3f}", i, weights[i]));  // the dot row of the weights
    for (size_t j = 0; j < 2; ++j) out[j] += static_cast<double>(weights[i]) * values[i * 2 + j];
  }
  CHECK(texts("score") == scores);
  CHECK(texts("weight") == shown_weights);
  CHECK(texts("output") == std::vector<std::string>{fmt::format("[{:.2f}, {:.2f}]", out[0], out[1])});
  // 003 注意力评分函数's figure: the same pipeline for the MLP row (row 2 of the weights).
  pugi::xml_document scoring;
  REQUIRE(scoring.load_file((r.out / "scoring_function.svg").c_str()));
  const std::vector<float> mlp = r.values("similarity_mlp");
  std::vector<std::string> mlp_scores, mlp_weights, shown_scores, shown_mlp_weights;
  for (size_t i = 0; i < 3; ++i) {
    mlp_scores.push_back(fmt::format("a{} = {:.3f}", i, mlp[i]));  // 003's letters: a the score, α the weight
    mlp_weights.push_back(fmt::format("α{} = {:.3f}", i, weights[6 + i]));
  }
  for (const pugi::xpath_node& n : scoring.select_nodes("//*[@class='score']"))
    shown_scores.emplace_back(n.node().child_value());
  for (const pugi::xpath_node& n : scoring.select_nodes("//*[@class='weight']"))
    shown_mlp_weights.emplace_back(n.node().child_value());
  CHECK(shown_scores == mlp_scores);
  CHECK(shown_mlp_weights == mlp_weights);
  // The transcript shows the values beside the weighted sums.
  const std::string transcript = qkv::lesson_test::read_text(r.out / "transcript.txt");
  CHECK(transcript.find("values (3, 2), Valueᵢ the row of key i:") != std::string::npos);
  // 001's α(q, k) = qᵀk/√d is flagged: the score is a, α the weight after the softmax.
  CHECK(transcript.find("Erratum: 001 缩放点积注意力 writes the score as α(q, k) = qᵀk/√d") != std::string::npos);
}
