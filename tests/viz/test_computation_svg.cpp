// Tests for src/viz/computation_svg.cpp: 001's 计算过程 figure drawn from
// numbers. The file is parsed back with pugixml; every number the figure
// shows is found in its text, formatted as the header promises (vectors to 2
// decimals, scores and weights to 3), and no two texts overlap.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>
#include <qkv/viz/computation.hpp>

#include <string>
#include <vector>

#include "viz/viz_test_util.hpp"

using namespace qkv;

namespace {

std::vector<std::string> texts_of(const pugi::xml_document& doc, const std::string& cls) {
  std::vector<std::string> out;
  for (pugi::xml_node n : test::with_class(doc, cls)) out.emplace_back(n.child_value());
  return out;
}

}  // namespace

TEST_CASE("viz/computation_svg: query, keys, scores, weights, values and output, each where it belongs") {
  // Hand-made numbers: a query of 2, three keys, the dot scores 1, 0, -1 and their softmax.
  const Tensor query = tensor({1.0f, 0.0f});
  const Tensor keys = tensor({1.0f, 0.5f, 0.0f, 1.0f, -1.0f, 0.25f}, {3, 2});
  const Tensor scores = tensor({1.0f, 0.0f, -1.0f});
  const Tensor weights = tensor({0.6652f, 0.2447f, 0.0901f});
  const Tensor values = tensor({1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f}, {3, 2});
  const Tensor output = tensor({0.7553f, 0.3348f});  // weights · values
  test::TempDir dir("computation_svg");
  const auto file = dir.path / "computation.svg";
  viz::save_computation_svg(file, {.title = "one query, three keys",
                                   .score_name = "Query · Keyᵢ",
                                   .query = query,
                                   .keys = keys,
                                   .scores = scores,
                                   .weights = weights,
                                   .values = values,
                                   .output = output});
  pugi::xml_document doc = test::load_svg(file);
  CHECK(texts_of(doc, "query") == std::vector<std::string>{"[1.00, 0.00]"});
  CHECK(texts_of(doc, "key") == std::vector<std::string>{"[1.00, 0.50]", "[0.00, 1.00]", "[-1.00, 0.25]"});
  CHECK(texts_of(doc, "score") == std::vector<std::string>{"s0 = 1.000", "s1 = 0.000", "s2 = -1.000"});
  CHECK(texts_of(doc, "weight") == std::vector<std::string>{"a0 = 0.665", "a1 = 0.245", "a2 = 0.090"});
  CHECK(texts_of(doc, "value") == std::vector<std::string>{"[1.00, 0.00]", "[0.00, 1.00]", "[1.00, 1.00]"});
  CHECK(texts_of(doc, "output") == std::vector<std::string>{"[0.76, 0.33]"});
  CHECK(test::has_text(doc, "one query, three keys"));
  CHECK(test::has_text(doc, "stage 1: score Query · Keyᵢ"));
  CHECK(test::has_text(doc, "stage 2: softmax"));
  CHECK(test::has_text(doc, "stage 3: Σ aᵢ · Valueᵢ"));
  // Each weight's bar is as long as the weight, in one unit for all three.
  std::vector<pugi::xml_node> bars = test::with_class(doc, "weight-bar");
  REQUIRE(bars.size() == 3);
  const double unit = bars[0].attribute("width").as_double() / 0.6652;
  CHECK(bars[1].attribute("width").as_double() == doctest::Approx(0.2447 * unit).epsilon(1e-2));
  CHECK(bars[2].attribute("width").as_double() == doctest::Approx(0.0901 * unit).epsilon(2e-2));
  test::check_text_layout(doc);
  CHECK(viz::computation_svg({.title = "one query, three keys",
                              .score_name = "Query · Keyᵢ",
                              .query = query,
                              .keys = keys,
                              .scores = scores,
                              .weights = weights,
                              .values = values,
                              .output = output}) == test::read_bytes(file));
}

TEST_CASE("viz/computation_svg: 003's letters and a long score name stay inside the picture, apart") {
  const Tensor keys = tensor({1.0f, 0.5f, 0.0f, 1.0f}, {2, 2});
  pugi::xml_document doc;
  const std::string svg = viz::computation_svg({.title = "a",
                                                .score_name = "a(q, kᵢ) = w_vᵀ tanh(W_q q + W_k kᵢ), a long name",
                                                .score_symbol = "a",
                                                .weight_symbol = "α",
                                                .query = tensor({1.0f, 0.0f}),
                                                .keys = keys,
                                                .scores = tensor({0.5f, -0.5f}),
                                                .weights = tensor({0.731f, 0.269f}),
                                                .values = keys,
                                                .output = tensor({0.731f, 0.635f})});
  REQUIRE(doc.load_string(svg.c_str()));
  CHECK(texts_of(doc, "score") == std::vector<std::string>{"a0 = 0.500", "a1 = -0.500"});
  CHECK(texts_of(doc, "weight") == std::vector<std::string>{"α0 = 0.731", "α1 = 0.269"});
  CHECK(test::has_text(doc, "stage 3: Σ αᵢ · Valueᵢ"));
  test::check_text_layout(doc);
}
