// Tests for web/panels.cpp, the course page's live panels. Every expected
// number comes from the mathematics written out here in plain loops (the
// softmax, the masked softmax, the sinusoidal encoding), or from the lesson
// programs' own results.json at the lesson's setting; the SVGs are parsed
// back as XML; run_panel's answers are parsed back as JSON.
#include <doctest/doctest.h>
#include <pugixml.hpp>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lessons/run_lesson.hpp"
#include "panels.hpp"

using namespace qkv;
using nlohmann::json;

namespace {

// softmax of s over its first `valid` entries, 0 past them, in double.
std::vector<double> masked_softmax_ref(const std::vector<double>& s, size_t valid) {
  double largest = -1e300, total = 0;
  for (size_t j = 0; j < valid; ++j) largest = std::max(largest, s[j]);
  std::vector<double> p(s.size(), 0.0);
  for (size_t j = 0; j < valid; ++j) total += p[j] = std::exp(s[j] - largest);
  for (size_t j = 0; j < valid; ++j) p[j] /= total;
  return p;
}

// The SVG parses as XML with an <svg> root, and its title (class "title") is `title`.
void check_svg(const std::string& svg, const std::string& title) {
  pugi::xml_document doc;
  pugi::xml_parse_result parsed = doc.load_string(svg.c_str());
  INFO(parsed.description());
  REQUIRE(parsed);
  CHECK(std::string(doc.document_element().name()) == "svg");
  pugi::xpath_node found = doc.select_node("//*[@class='title']");
  REQUIRE(found);
  CHECK(std::string(found.node().child_value()) == title);
}

// How many elements of the SVG have class `cls`.
size_t count_class(const std::string& svg, const std::string& cls) {
  pugi::xml_document doc;
  doc.load_string(svg.c_str());
  return doc.select_nodes(("//*[@class='" + cls + "']").c_str()).size();
}

}  // namespace

// ---- kernel ------------------------------------------------------------------------

TEST_CASE("web/kernel: Nadaraya–Watson weights, prediction and MSE from the formula") {
  for (double w : {0.5, 1.0, 3.0, 20.0}) {
    CAPTURE(w);
    const web::KernelPanel p = web::kernel_panel(w);
    const std::vector<float> x = p.x_train.to_vector(), y = p.y_train.to_vector(), a = p.weights.to_vector(),
                             pred = p.prediction.to_vector();
    REQUIRE(x.size() == 50);
    REQUIRE(a.size() == 50 * 50);
    CHECK(p.width == doctest::Approx(1 / w));
    double mse = 0, entropy = 0;
    for (size_t q = 0; q < 50; ++q) {
      const double query = 0.1 * static_cast<double>(q);  // the test inputs 0, 0.1, …, 4.9
      CHECK(p.x_test.at({static_cast<int64_t>(q)}) == doctest::Approx(query));
      std::vector<double> s(50);  // -((x - xᵢ)·w)²/2
      for (size_t i = 0; i < 50; ++i) s[i] = -std::pow((query - x[i]) * w, 2) / 2;
      const std::vector<double> alpha = masked_softmax_ref(s, 50);
      double f = 0, row_sum = 0;
      for (size_t i = 0; i < 50; ++i) {
        CHECK(a[q * 50 + i] == doctest::Approx(alpha[i]).epsilon(1e-4).scale(1e-6));
        f += alpha[i] * y[i];
        row_sum += a[q * 50 + i];
        if (alpha[i] > 0) entropy -= alpha[i] * std::log(alpha[i]) / 50;
      }
      CHECK(row_sum == doctest::Approx(1).epsilon(1e-5));
      CHECK(pred[q] == doctest::Approx(f).epsilon(1e-4));
      mse += std::pow(f - (2 * std::sin(query) + std::pow(query, 0.8)), 2) / 50;  // the noiseless truth
    }
    CHECK(p.test_mse == doctest::Approx(mse).epsilon(1e-4));
    CHECK(p.mean_row_entropy == doctest::Approx(entropy).epsilon(1e-4));
    check_svg(p.weights_svg,
              fmt::format("Nadaraya–Watson attention weights (w = {:.3g}, width 1/w = {:.3g})", w, 1 / w));
    check_svg(p.prediction_svg,
              fmt::format("The prediction against the truth (w = {:.3g}, width 1/w = {:.3g})", w, 1 / w));
  }
}

TEST_CASE("web/kernel: at w = 1 it is lesson 02, at lesson 03's learned w it is lesson 03") {
  const web::KernelPanel p = web::kernel_panel(1.0);
  lesson_test::LessonRun l02("02_nadaraya_watson");
  INFO(l02.run.output);
  REQUIRE(l02.run.status == 0);
  CHECK(p.x_train.to_vector() == l02.values("x_train"));  // the same points: same seed, same draws
  CHECK(p.y_train.to_vector() == l02.values("y_train"));
  const std::vector<float> weights = l02.values("weights"), mine = p.weights.to_vector();
  REQUIRE(weights.size() == mine.size());
  for (size_t k = 0; k < mine.size(); ++k) CHECK(mine[k] == doctest::Approx(weights[k]).epsilon(1e-6).scale(1e-9));
  CHECK(p.test_mse == doctest::Approx(l02.results().at("test_mse").get<double>()).epsilon(1e-5));

  lesson_test::LessonRun l03("03_parametric_pooling");
  INFO(l03.run.output);
  REQUIRE(l03.run.status == 0);
  const double learned = l03.results().at("w").get<double>();
  const web::KernelPanel q = web::kernel_panel(learned);
  CHECK(q.test_mse == doctest::Approx(l03.results().at("test_mse").get<double>()).epsilon(1e-4));
  CHECK(q.mean_row_entropy == doctest::Approx(l03.results().at("mean_row_entropy").get<double>()).epsilon(1e-4));
  CHECK(p.mean_row_entropy ==
        doctest::Approx(l03.results().at("mean_row_entropy_lesson02").get<double>()).epsilon(1e-4));
}

// ---- scoring -----------------------------------------------------------------------

TEST_CASE("web/scoring: the masked softmax of q·k (/√d) written out") {
  const web::ScoringSetup setup = web::scoring_setup();
  REQUIRE(setup.keys.shape() == Shape{3, 4});
  const std::vector<float> k = setup.keys.to_vector(), v = setup.values.to_vector();
  const std::vector<std::vector<double>> queries = {{1, 0.5, -2, 3}, {0, 0, 0, 0}, {10, -10, 5, 5}};
  Tensor q = tensor({1, 0.5f, -2, 3, 0, 0, 0, 0, 10, -10, 5, 5}, {3, 4});
  for (int64_t valid_len = 1; valid_len <= 3; ++valid_len)
    for (bool scale : {true, false}) {
      CAPTURE(valid_len);
      CAPTURE(scale);
      const web::ScoringPanel p = web::scoring_panel(q, valid_len, scale);
      REQUIRE(p.weights.shape() == Shape{3, 3});
      for (size_t r = 0; r < 3; ++r) {
        std::vector<double> s(3);
        for (size_t j = 0; j < 3; ++j) {
          for (size_t c = 0; c < 4; ++c) s[j] += queries[r][c] * k[j * 4 + c];
          if (scale) s[j] /= 2;  // √d = √4
          CHECK(p.scores.at({static_cast<int64_t>(r), static_cast<int64_t>(j)}) == doctest::Approx(s[j]).epsilon(1e-5));
        }
        const std::vector<double> alpha = masked_softmax_ref(s, static_cast<size_t>(valid_len));
        double row_sum = 0, largest = 0, entropy = 0;
        for (size_t j = 0; j < 3; ++j) {
          const float got = p.weights.at({static_cast<int64_t>(r), static_cast<int64_t>(j)});
          if (j >= static_cast<size_t>(valid_len)) CHECK(got == 0.0f);  // a masked key weighs exactly 0
          CHECK(got == doctest::Approx(alpha[j]).epsilon(1e-5).scale(1e-7));
          row_sum += got;
          largest = std::max(largest, alpha[j]);
          if (alpha[j] > 0) entropy -= alpha[j] * std::log(alpha[j]);
        }
        CHECK(row_sum == doctest::Approx(1).epsilon(1e-6));
        CHECK(p.largest[r] == doctest::Approx(largest).epsilon(1e-5));
        // The panel's entropy is of float32 weights: a weight of 1e-8 carries ~1e-7 of -α log α, so
        // near 0 the two agree to ~1e-7 absolute.
        CHECK(std::abs(p.entropy[r] - entropy) <= 1e-4 * entropy + 1e-6);
        for (size_t c = 0; c < 2; ++c) {  // the output Σⱼ αⱼ vⱼ
          double out = 0;
          for (size_t j = 0; j < 3; ++j) out += alpha[j] * v[j * 2 + c];
          CHECK(p.output.at({static_cast<int64_t>(r), static_cast<int64_t>(c)}) == doctest::Approx(out).epsilon(1e-5));
        }
      }
      check_svg(p.weights_svg,
                fmt::format("Softmax weights of {} (valid_len {})", scale ? "q·k/√d" : "q·k", valid_len));
      CHECK(count_class(p.weights_svg, "cell") == 9);
    }
  // The zero query scores 0 against every key: uniform over the valid keys, entropy log(valid_len).
  const web::ScoringPanel zero = web::scoring_panel(zeros({4}), 2, true);
  CHECK(zero.entropy[0] == doctest::Approx(std::log(2.0)));
}

TEST_CASE("web/scoring: lesson 04's query and keys, and its weights at its setting") {
  lesson_test::LessonRun l04("04_scoring_functions");
  INFO(l04.run.output);
  REQUIRE(l04.run.status == 0);
  const web::ScoringSetup setup = web::scoring_setup();
  CHECK(setup.query.to_vector() == l04.values("query"));
  CHECK(setup.keys.to_vector() == l04.values("keys"));
  CHECK(setup.values.to_vector() == l04.values("values"));
  // Lesson 04's row "dot" of its similarity weights is softmax(q·k) over the three keys: scale off, no mask.
  const web::ScoringPanel unscaled = web::scoring_panel(setup.query, 3, false);
  const std::vector<float> lesson_weights = l04.values("similarity_weights");  // (3 rules, 3 keys), row 0 = dot
  for (int64_t j = 0; j < 3; ++j)
    CHECK(unscaled.weights.at({0, j}) == doctest::Approx(lesson_weights[static_cast<size_t>(j)]).epsilon(1e-6));
  // With the scale: the softmax of the lesson's similarity_scaled_dot.
  const web::ScoringPanel scaled = web::scoring_panel(setup.query, 3, true);
  const std::vector<float> scaled_dot = l04.values("similarity_scaled_dot");
  const std::vector<double> alpha = masked_softmax_ref({scaled_dot[0], scaled_dot[1], scaled_dot[2]}, 3);
  for (int64_t j = 0; j < 3; ++j)
    CHECK(scaled.weights.at({0, j}) == doctest::Approx(alpha[static_cast<size_t>(j)]).epsilon(1e-5));
}

// ---- heads -------------------------------------------------------------------------

TEST_CASE("web/heads: every divisor of 100 up to 25; rows sum to 1, padding weighs 0, one panel per head") {
  for (int64_t h : {1, 2, 4, 5, 10, 20, 25}) {
    CAPTURE(h);
    const web::HeadsPanel p = web::heads_panel(h);
    REQUIRE(p.weights.shape() == Shape{2, h, 4, 6});
    const std::vector<int64_t> lens = {3, 2};
    double worst_sum = 0, padding = 0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t q = 0; q < 4; ++q) {
          double sum = 0;
          for (int64_t k = 0; k < 6; ++k) {
            const float a = p.weights.at({b, i, q, k});
            sum += a;
            if (k >= lens[static_cast<size_t>(b)]) padding = std::max<double>(padding, a);
          }
          worst_sum = std::max(worst_sum, std::abs(sum - 1));
        }
    CHECK(worst_sum < 1e-6);
    CHECK(padding == 0);
    CHECK(p.max_row_sum_error == doctest::Approx(worst_sum).scale(1e-9));
    CHECK(p.max_weight_on_padding == 0);
    check_svg(p.weights_svg, fmt::format("{} head{} × {} features", h, h == 1 ? "" : "s", 100 / h));
    CHECK(count_class(p.weights_svg, "subplot") == static_cast<size_t>(2 * h));
    CHECK(count_class(p.weights_svg, "row-title") == static_cast<size_t>(h));  // a row of the grid per head
    CHECK(count_class(p.weights_svg, "col-title") == 2);                       // a column per example
  }
}

// Head i of example b: softmax over the valid keys of (q W_qᵀ)[:, i·s : (i+1)·s] · (k W_kᵀ)[…]ᵀ / √s,
// s = 100/h features, from lesson 09's saved inputs and projections (which do not depend on h).
TEST_CASE("web/heads: lesson 09's weights at 5 heads, and every head from its saved projections") {
  lesson_test::LessonRun l09("09_multi_head_attention");
  INFO(l09.run.output);
  REQUIRE(l09.run.status == 0);
  const std::vector<float> lesson_weights = l09.values("weights"), mine = web::heads_panel(5).weights.to_vector();
  REQUIRE(lesson_weights.size() == mine.size());
  for (size_t k = 0; k < mine.size(); ++k) CHECK(mine[k] == doctest::Approx(lesson_weights[k]).epsilon(1e-6));

  const std::vector<float> queries = l09.values("queries"), keys = l09.values("keys"), Wq = l09.values("W_q"),
                           Wk = l09.values("W_k");  // (2, 4, 100), (2, 6, 100), (100, 100) each
  auto project = [](const std::vector<float>& x, const std::vector<float>& W, size_t rows) {  // x Wᵀ, (rows, 100)
    std::vector<double> out(rows * 100, 0.0);
    for (size_t r = 0; r < rows; ++r)
      for (size_t o = 0; o < 100; ++o)
        for (size_t c = 0; c < 100; ++c) out[r * 100 + o] += static_cast<double>(x[r * 100 + c]) * W[o * 100 + c];
    return out;
  };
  const std::vector<double> qp = project(queries, Wq, 8), kp = project(keys, Wk, 12);
  for (int64_t h : {2, 4, 20}) {
    CAPTURE(h);
    const web::HeadsPanel p = web::heads_panel(h);
    const auto s = static_cast<size_t>(100 / h);
    for (size_t b = 0; b < 2; ++b)
      for (size_t i = 0; i < static_cast<size_t>(h); ++i)
        for (size_t q = 0; q < 4; ++q) {
          std::vector<double> score(6, 0.0);
          for (size_t k = 0; k < 6; ++k) {
            for (size_t f = i * s; f < (i + 1) * s; ++f)
              score[k] += qp[(b * 4 + q) * 100 + f] * kp[(b * 6 + k) * 100 + f];
            score[k] /= std::sqrt(static_cast<double>(s));
          }
          const std::vector<double> alpha = masked_softmax_ref(score, b == 0 ? 3 : 2);
          for (size_t k = 0; k < 6; ++k)
            CHECK(p.weights.at({static_cast<int64_t>(b), static_cast<int64_t>(i), static_cast<int64_t>(q),
                                static_cast<int64_t>(k)}) == doctest::Approx(alpha[k]).epsilon(1e-4).scale(1e-6));
        }
  }
}

// ---- positional --------------------------------------------------------------------

TEST_CASE("web/positional: P from the formula, and R(δ)·P[i] = P[i+δ] for every δ") {
  for (const auto& size : std::vector<std::pair<int64_t, int64_t>>{{60, 32}, {64, 64}, {1000, 4}, {7, 2}}) {
    // Not a structured binding: CAPTURE takes n and d into a lambda, which clang 14 refuses.
    const int64_t n = size.first, d = size.second;
    CAPTURE(n);
    CAPTURE(d);
    for (int64_t shift = 0; shift < n; shift += (n > 100 ? 97 : 1)) {
      const web::PositionalPanel p = web::positional_panel(n, d, shift);
      CAPTURE(shift);
      CHECK(p.relative_max_error < 1e-6);  // float rounding of P's entries, each within 2⁻²⁴ of |sin|, |cos| ≤ 1
      // Row i of R(δ)·P is P's formula at position i + δ (the angle-sum formulas), drawn on row 0:
      // to within 1e-6 absolute, the float rounding of the P[i] it turns (entries ≤ 1 in size).
      REQUIRE(p.rotated.shape() == Shape{n - shift, d});
      for (int64_t i = 0; i < n - shift; i += (n > 100 ? 101 : 1))
        for (int64_t j = 0; 2 * j < d; ++j) {
          const double angle =
              static_cast<double>(i + shift) / std::pow(10000.0, static_cast<double>(2 * j) / static_cast<double>(d));
          CHECK(p.rotated.at({i, 2 * j}) == doctest::Approx(std::sin(angle)).epsilon(1e-6).scale(1));
          CHECK(p.rotated.at({i, 2 * j + 1}) == doctest::Approx(std::cos(angle)).epsilon(1e-6).scale(1));
        }
      check_svg(p.shift_svg, fmt::format("The shift δ = {}: R(δ)·P[i] lands on P[i+δ] (row i = 0)", shift));
      if (shift > 1) continue;
      REQUIRE(p.P.shape() == Shape{n, d});
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; 2 * j < d; ++j) {
          const double angle =
              static_cast<double>(i) / std::pow(10000.0, static_cast<double>(2 * j) / static_cast<double>(d));
          CHECK(p.P.at({i, 2 * j}) == doctest::Approx(std::sin(angle)).epsilon(1e-6).scale(1e-6));
          CHECK(p.P.at({i, 2 * j + 1}) == doctest::Approx(std::cos(angle)).epsilon(1e-6).scale(1e-6));
        }
      check_svg(p.encoding_svg, fmt::format("Positional encoding P ({} positions × {} dims)", n, d));
    }
  }
}

TEST_CASE("web/positional: lesson 10's P at 60 positions × 32 dims") {
  lesson_test::LessonRun l10("10_positional_encoding", "--reps 1");
  INFO(l10.run.output);
  REQUIRE(l10.run.status == 0);
  CHECK(web::positional_panel(60, 32, 1).P.to_vector() == l10.values("pe"));
}

// ---- run_panel ---------------------------------------------------------------------

TEST_CASE("web/run_panel: answers parse as JSON and carry the typed panels' numbers") {
  SUBCASE("kernel") {
    const json a = json::parse(web::run_panel(R"({"panel": "kernel", "w": 2.5})"));
    const web::KernelPanel p = web::kernel_panel(2.5);
    CHECK(a.at("panel") == "kernel");
    CHECK(a.at("request").at("w") == 2.5);
    CHECK(a.at("values").at("test_mse").get<double>() == p.test_mse);
    CHECK(a.at("values").at("prediction").get<std::vector<float>>() == p.prediction.to_vector());
    CHECK(a.at("svg").at("weights").get<std::string>() == p.weights_svg);
    CHECK(a.at("svg").at("prediction").get<std::string>() == p.prediction_svg);
  }
  SUBCASE("scoring, one query and the defaults") {
    const json a = json::parse(
        web::run_panel(R"({"panel": "scoring", "query": [1, 0.5, -2, 3], "valid_len": 2, "scale": false})"));
    const web::ScoringPanel p = web::scoring_panel(tensor({1, 0.5f, -2, 3}), 2, false);
    CHECK(a.at("values").at("weights").get<std::vector<std::vector<float>>>().at(0) == p.weights.to_vector());
    CHECK(a.at("values").at("entropy").get<std::vector<double>>() == p.entropy);
    CHECK(a.at("request").at("valid_len") == 2);
    CHECK(a.at("svg").at("weights").get<std::string>() == p.weights_svg);
    // Every knob left out: the lesson's query, all three keys, scaled.
    const json d = json::parse(web::run_panel(R"({"panel": "scoring"})"));
    CHECK(d.at("request").at("query").get<std::vector<float>>() == web::scoring_setup().query.to_vector());
    CHECK(d.at("request").at("valid_len") == 3);
    CHECK(d.at("request").at("scale") == true);
  }
  SUBCASE("scoring, two queries") {
    const json a = json::parse(web::run_panel(R"({"panel": "scoring", "query": [[1, 0, 0, 0], [0, 1, 0, 0]]})"));
    CHECK(a.at("values").at("weights").size() == 2);
  }
  SUBCASE("heads") {
    const json a = json::parse(web::run_panel(R"({"panel": "heads", "num_heads": 4.0})"));  // 4.0 is 4 (JavaScript)
    CHECK(a.at("request").at("num_heads") == 4);
    CHECK(a.at("values").at("head_features") == 25);
    CHECK(a.at("values").at("weights").at(0).size() == 4);
  }
  SUBCASE("positional") {
    const json a = json::parse(web::run_panel(R"({"panel": "positional", "positions": 20, "dims": 8, "shift": 3})"));
    CHECK(a.at("values").at("relative_max_error").get<double>() == web::positional_panel(20, 8, 3).relative_max_error);
    CHECK(a.at("svg").at("encoding").get<std::string>().starts_with("<?xml"));
  }
}

TEST_CASE("web/run_panel: every bad request is an {\"error\"} naming the field and the value") {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"not json", "run_panel: the request is not JSON: not json"},
      {"[1, 2]", "run_panel: the request must be a JSON object, got [1,2]"},
      {R"({"w": 1})", "run_panel: the request needs \"panel\""},
      {R"({"panel": 3})", "run_panel: the request needs \"panel\""},
      {R"({"panel": "attention"})", "run_panel: unknown panel \"attention\""},
      {R"({"panel": "kernel", "w": "wide"})", "kernel: w must be a number, got \"wide\""},
      {R"({"panel": "kernel", "w": 0})", "kernel: w must be a number in (0, 1000] (the kernel's width is 1/w), got 0"},
      {R"({"panel": "kernel", "w": -1})", "got -1"},
      {R"({"panel": "kernel", "w": 1e300})", "got 1e+300"},
      {R"({"panel": "kernel", "width": 2})", "kernel: unknown field \"width\" (the fields are w)"},
      {R"({"panel": "scoring", "valid_len": 0})", "scoring: valid_len must be 1 to 3 (the number of keys), got 0"},
      {R"({"panel": "scoring", "valid_len": 4})", "got 4"},
      {R"({"panel": "scoring", "valid_len": 2.5})", "scoring: valid_len must be a whole number, got 2.5"},
      {R"({"panel": "scoring", "scale": 1})", "scoring: scale must be true or false, got 1"},
      {R"({"panel": "scoring", "query": [1, 0.5]})",
       "scoring: query must be 4 numbers, or a list of queries of 4 numbers each, got shape (2)"},
      {R"({"panel": "scoring", "query": [1, "a", 0, 0]})", "scoring: query must be a list of numbers"},
      {R"({"panel": "scoring", "query": [[1, 0, 0, 0], [1, 0]]})", "scoring: query must be a list of numbers"},
      {R"({"panel": "scoring", "query": []})", "scoring: query must be a list of numbers"},
      {R"({"panel": "scoring", "query": [1, 0, 0, 1000]})",
       "every query entry must be a number in [-100, 100], got 1000"},
      {R"({"panel": "scoring", "query": [[1,0,0,0],[1,0,0,0],[1,0,0,0],[1,0,0,0],[1,0,0,0],[1,0,0,0],[1,0,0,0],[1,0,0,0],[1,0,0,0]]})",
       "scoring: 1 to 8 queries, got 9"},
      {R"({"panel": "scoring", "valid_length": 2})", "scoring: unknown field \"valid_length\""},
      {R"({"panel": "heads", "num_heads": 3})",
       "heads: num_heads must divide num_hiddens 100 and be at most 25 (1, 2, 4, 5, 10, 20 or 25), got 3"},
      {R"({"panel": "heads", "num_heads": 50})", "got 50"},
      {R"({"panel": "heads", "num_heads": 0})", "got 0"},
      {R"({"panel": "heads", "num_heads": null})", "heads: num_heads must be a whole number, got null"},
      {R"({"panel": "positional", "dims": 31})",
       "positional: dims must be even, 2 to 512 (a sine and a cosine per pair), got 31"},
      {R"({"panel": "positional", "dims": 1024})", "got 1024"},
      {R"({"panel": "positional", "positions": 0})", "positional: positions must be 1 to 1000, got 0"},
      {R"({"panel": "positional", "positions": 1000, "dims": 32})",
       "positional: positions × dims = 1000 × 32 = 32000 is past the cap of 4096 entries"},
      {R"({"panel": "positional", "shift": 60})", "positional: shift must be 0 to positions - 1 = 59, got 60"},
      {R"({"panel": "positional", "shift": -1})", "got -1"},
  };
  for (const auto& row : rows) {
    const std::string &request = row.first, &fragment = row.second;  // CAPTURE takes request into a lambda (clang 14)
    CAPTURE(request);
    json answer;
    REQUIRE_NOTHROW(answer = json::parse(web::run_panel(request)));
    REQUIRE(answer.contains("error"));
    CHECK(answer.size() == 1);
    const std::string error = answer.at("error").get<std::string>();
    CAPTURE(error);
    CHECK(error.find(fragment) != std::string::npos);
  }
}

TEST_CASE("web/panels: the typed panels throw a qkv::Error naming the knob") {
  CHECK_THROWS_WITH_AS(web::kernel_panel(std::nan("")), doctest::Contains("kernel: w must be"), Error);
  CHECK_THROWS_WITH_AS(web::scoring_panel(Tensor(), 1, true), doctest::Contains("scoring: query must be"), Error);
  CHECK_THROWS_WITH_AS(web::scoring_panel(tensor({NAN, 0, 0, 0}), 1, true),
                       doctest::Contains("every query entry must be a number"), Error);
  CHECK_THROWS_WITH_AS(web::heads_panel(100), doctest::Contains("got 100"), Error);
  CHECK_THROWS_WITH_AS(web::positional_panel(10, 0, 0), doctest::Contains("dims must be even"), Error);
}
