// computation_svg and save_computation_svg: 001's 计算过程 figure from numbers (see computation.hpp).
//
// Layout, left to right, one row per key i:
//   Keyᵢ | sᵢ | softmax (spanning the rows) | aᵢ + bar | × Valueᵢ | Σ -> output
// The Query box stands above the scores: a line runs down from it past the
// keys and branches into every score, beside that key's own arrow. The three
// stages are titled above their columns, in a staircase so they never overlap.
#include <qkv/viz/computation.hpp>

#include <qkv/core/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "viz/svg.hpp"

namespace qkv::viz {
namespace {

constexpr double ROW = 44, TOP = 146, MARGIN = 16, BOX_H = 28;

// A vector as "[0.12, -0.50, …]", 2 decimals.
std::string vec(const std::vector<float>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{:.2f}", i ? ", " : "", v[i]);
  return s + "]";
}

// Row i of a 2-D tensor.
std::vector<float> row(const Tensor& m, int64_t i) {
  std::vector<float> all = m.to_vector();
  const auto w = static_cast<size_t>(m.size(1));
  return {all.begin() + static_cast<long>(static_cast<size_t>(i) * w),
          all.begin() + static_cast<long>(static_cast<size_t>(i + 1) * w)};
}

std::string box(double x, double y, double w, double h, const char* fill) {
  return fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"4\" fill=\"{}\" "
      "stroke=\"#555\"/>\n",
      x, y, w, h, fill);
}

std::string arrow(double x1, double y1, double x2, double y2) {
  return fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#555\" "
      "marker-end=\"url(#arrow)\"/>\n",
      x1, y1, x2, y2);
}

void check(const ComputationFigure& f, const char* op) {
  const auto shape_of = [](const Tensor& t) { return t.defined() ? fmt::format("{}", t.shape()) : "none"; };
  const auto fail_shapes = [&](const std::string& why) {
    throw Error(fmt::format("{}: {}: query {}, keys {}, scores {}, weights {}, values {}, output {}", op, why,
                            shape_of(f.query), shape_of(f.keys), shape_of(f.scores), shape_of(f.weights),
                            shape_of(f.values), shape_of(f.output)));
  };
  for (const Tensor* t : {&f.query, &f.keys, &f.scores, &f.weights, &f.values, &f.output})
    if (!t->defined()) fail_shapes("every tensor must be given");
  if (f.query.dim() != 1 || f.keys.dim() != 2 || f.values.dim() != 2 || f.scores.dim() != 1 || f.weights.dim() != 1 ||
      f.output.dim() != 1)
    fail_shapes("want query (d), keys (n, d), scores (n), weights (n), values (n, dv), output (dv)");
  const int64_t n = f.keys.size(0);
  if (n < 1 || f.query.size(0) < 1) fail_shapes("no keys, or an empty query");
  if (f.keys.size(1) != f.query.size(0)) fail_shapes("the keys' size differs from the query's");
  if (f.scores.size(0) != n || f.weights.size(0) != n || f.values.size(0) != n)
    fail_shapes("scores, weights and values need one entry per key");
  if (f.output.size(0) != f.values.size(1)) fail_shapes("the output's size differs from the values'");
}

std::string picture(const ComputationFigure& f, const char* op) {
  check(f, op);
  const int64_t n = f.keys.size(0);
  const std::vector<float> scores = f.scores.to_vector(), weights = f.weights.to_vector();
  std::vector<std::string> keys, values;
  double key_w = 0, value_w = 0;
  for (int64_t i = 0; i < n; ++i) {
    keys.push_back(vec(row(f.keys, i)));
    values.push_back(vec(row(f.values, i)));
    key_w = std::max(key_w, detail::text_extent(keys.back(), 11));
    value_w = std::max(value_w, detail::text_extent(values.back(), 11));
  }
  const std::string query = vec(f.query.to_vector()), output = vec(f.output.to_vector());
  const double query_w = detail::text_extent("Query ") + detail::text_extent(query, 11) + 16;
  key_w += 12 + 48;  // "Key i " and the numbers
  value_w += 12 + 60;
  const double rows_h = static_cast<double>(n) * ROW, mid = TOP + rows_h / 2;
  // Column positions: the query's line runs down at x_bus, between the keys and the scores.
  const double x_key = MARGIN, x_bus = x_key + key_w + 18, x_score = x_bus + 24;
  const double score_w = 86, x_soft = x_score + score_w + 30, soft_w = 70, x_weight = x_soft + soft_w + 30;
  const double weight_w = 150, x_value = x_weight + weight_w + 30, x_sum = x_value + value_w + 36;
  const double out_w = std::max(detail::text_extent(output, 11), 90.0) + 12, x_out = x_sum + 40;
  const double x_query = std::max(MARGIN, x_bus - query_w / 2), y_query = TOP - 56;
  const std::string stage1 = "stage 1: score " + f.score_name;
  const double width = std::max({x_out + out_w + MARGIN, x_key + detail::text_extent(stage1) + MARGIN,
                                 x_query + query_w + MARGIN, detail::text_extent(f.title, 14) + 2 * MARGIN});
  const double height = TOP + rows_h + 40;

  std::string body = detail::svg_begin(width, height);
  body +=
      "<defs><marker id=\"arrow\" markerWidth=\"8\" markerHeight=\"8\" refX=\"7\" refY=\"4\" orient=\"auto\">"
      "<path d=\"M0,0 L8,4 L0,8 z\" fill=\"#555\"/></marker></defs>\n";
  body += detail::svg_text(width / 2, 22, f.title, {.size = 14, .cls = "title"});
  body += detail::svg_text(x_key, 46, stage1, {.anchor = "start", .cls = "stage"});
  body += detail::svg_text(x_soft, 64, "stage 2: softmax", {.anchor = "start", .cls = "stage"});
  body += detail::svg_text(x_value, 82, fmt::format("stage 3: Σ {}ᵢ · Valueᵢ", f.weight_symbol),
                           {.anchor = "start", .cls = "stage"});

  body += box(x_query, y_query, query_w, 30, "#fde9c9");
  body += detail::svg_text(x_query + 8, y_query + 19, "Query", {.anchor = "start", .cls = "label"});
  body += detail::svg_text(x_query + 8 + detail::text_extent("Query "), y_query + 19, query,
                           {.anchor = "start", .size = 11, .cls = "query"});
  const double last_cy = TOP + static_cast<double>(n - 1) * ROW + ROW / 2;
  body += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#555\"/>\n", x_bus,
                      y_query + 30, last_cy - 6);
  body += box(x_soft, TOP + 4, soft_w, rows_h - 8, "#e4ecf7");
  body += detail::svg_text(x_soft + soft_w / 2, mid + 4, "softmax", {.cls = "label"});
  body += box(x_out, mid - 30, out_w, 60, "#d9f0d3");
  body += detail::svg_text(x_out + out_w / 2, mid - 8, "Attention value", {.cls = "label"});
  body += detail::svg_text(x_out + out_w / 2, mid + 12, output, {.size = 11, .cls = "output"});
  body += "<circle cx=\"" + fmt::format("{:.1f}", x_sum + 14) + "\" cy=\"" + fmt::format("{:.1f}", mid) +
          "\" r=\"14\" fill=\"white\" stroke=\"#555\"/>\n";
  body += detail::svg_text(x_sum + 14, mid + 5, "Σ", {.size = 14, .cls = "label"});
  body += arrow(x_sum + 28, mid, x_out - 2, mid);

  for (int64_t i = 0; i < n; ++i) {
    const double y = TOP + static_cast<double>(i) * ROW + (ROW - BOX_H) / 2, cy = y + BOX_H / 2;
    const auto k = static_cast<size_t>(i);
    body += box(x_key, y, key_w, BOX_H, "#f3f3f3");
    body += detail::svg_text(x_key + 6, cy + 4, fmt::format("Key {}", i), {.anchor = "start", .cls = "label"});
    body += detail::svg_text(x_key + 54, cy + 4, keys[k], {.anchor = "start", .size = 11, .cls = "key"});
    body += arrow(x_bus, cy - 6, x_score - 2, cy - 6);          // the query
    body += arrow(x_key + key_w, cy + 6, x_score - 2, cy + 6);  // key i
    body += box(x_score, y, score_w, BOX_H, "white");
    body += detail::svg_text(x_score + score_w / 2, cy + 4, fmt::format("{}{} = {:.3f}", f.score_symbol, i, scores[k]),
                             {.size = 11, .cls = "score"});
    body += arrow(x_score + score_w, cy, x_soft - 2, cy);
    body += arrow(x_soft + soft_w, cy, x_weight - 2, cy);
    const double bar = std::clamp(static_cast<double>(weights[k]), 0.0, 1.0) * (weight_w - 76);
    body += fmt::format(
        "<rect class=\"weight-bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"10\" "
        "fill=\"#3b75af\"/>\n",
        x_weight + 70, cy - 5, bar);
    body += detail::svg_text(x_weight, cy + 4, fmt::format("{}{} = {:.3f}", f.weight_symbol, i, weights[k]),
                             {.anchor = "start", .size = 11, .cls = "weight"});
    body += box(x_value, y, value_w, BOX_H, "#f3f3f3");
    body += detail::svg_text(x_value + 6, cy + 4, fmt::format("× Value {}", i), {.anchor = "start", .cls = "label"});
    body += detail::svg_text(x_value + 72, cy + 4, values[k], {.anchor = "start", .size = 11, .cls = "value"});
    body += arrow(x_value + value_w, cy, x_sum + 2, mid);
  }
  return body + detail::svg_end();
}

}  // namespace

std::string computation_svg(const ComputationFigure& f) { return picture(f, "computation_svg"); }

void save_computation_svg(const std::filesystem::path& file, const ComputationFigure& f) {
  const char* op = "save_computation_svg";
  detail::write_file(file, picture(f, op), op);
}

}  // namespace qkv::viz
