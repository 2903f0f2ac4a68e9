// Lesson 01 (attention cues and average pooling): d2l's attention cues and
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
  qkv::lesson_test::check_ran(r, {"003 注意力机制产生的原因", "d2l's desk"}, {"attention_cues.svg", "prediction.svg"});

  // The cues over five objects, from the saved keys (5, 3) and query (3):
  // row 0 softmax_i ‖kᵢ - mean(k)‖² (salience alone), row 1 softmax_i q·kᵢ.
  REQUIRE(r.shape("attention_cues") == std::vector<int64_t>{2, 5});
  const std::vector<float> cues = r.values("attention_cues"), k = r.values("cue_keys"), q = r.values("cue_query");
  REQUIRE(k.size() == 15);
  REQUIRE(q.size() == 3);
  std::vector<double> salience(5), relevance(5);
  for (size_t i = 0; i < 5; ++i)
    for (size_t f = 0; f < 3; ++f) {
      const double mean_f = (k[f] + k[3 + f] + k[6 + f] + k[9 + f] + k[12 + f]) / 5.0;
      salience[i] += std::pow(k[i * 3 + f] - mean_f, 2);
      relevance[i] += static_cast<double>(q[f]) * k[i * 3 + f];
    }
  const std::vector<std::string> objects = {"newspaper", "research paper", "notebook", "book", "coffee cup"};
  for (size_t row = 0; row < 2; ++row) {
    const std::vector<double>& s = row == 0 ? salience : relevance;
    double z = 0;
    for (double v : s) z += std::exp(v);
    for (size_t i = 0; i < 5; ++i) CHECK(cues[row * 5 + i] == doctest::Approx(std::exp(s[i]) / z).epsilon(1e-5));
    const size_t top = static_cast<size_t>(std::max_element(s.begin(), s.end()) - s.begin());
    CHECK(r.results().at(row == 0 ? "cue_salient_object" : "cue_queried_object").get<std::string>() == objects[top]);
  }
  // The two cues choose different objects over the same five.
  CHECK(r.results().at("cue_salient_object") != r.results().at("cue_queried_object"));
  // The picture names both kinds of cue and every object.
  pugi::xml_document svg;
  REQUIRE(svg.load_file((r.out / "attention_cues.svg").c_str()));
  std::string texts;
  for (const pugi::xpath_node& t : svg.select_nodes("//text")) texts += std::string(t.node().child_value()) + "\n";
  for (const char* label :
       {"salience only", "query: a book", "newspaper", "research paper", "notebook", "book", "coffee cup"}) {
    INFO(label);
    CHECK(texts.find(label) != std::string::npos);
  }

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
  for (size_t j = 0; j < 3; ++j) {
    double z = 0, s = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = std::exp(-0.5 * std::pow(queries[j] - x[i], 2));
      z += e;
      s += e * y[i];
    }
    CHECK(attention[j] == doctest::Approx(s / z).epsilon(1e-5));
  }
  CHECK(attention[0] != attention[1]);
  CHECK(attention[1] != attention[2]);
}
