// The live panels (panels.hpp says what each shows and why), then run_panel:
// the JSON request read and checked field by field, the answer written.
#include "panels.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "toy_data.hpp"

namespace qkv::web {

namespace {

constexpr uint64_t kLessonSeed = 0;  // every lesson's default --seed

// -Σ p log p of one row of weights; a weight of 0 adds 0 (the limit of p log p).
double row_entropy(const float* p, int64_t n) {
  double h = 0;
  for (int64_t j = 0; j < n; ++j)
    if (p[j] > 0) h -= static_cast<double>(p[j]) * std::log(static_cast<double>(p[j]));
  return h;
}

std::vector<std::string> numbered(const std::string& stem, int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(fmt::format("{}{}", stem, i));
  return out;
}

}  // namespace

// ---- kernel ------------------------------------------------------------------------

KernelPanel kernel_panel(double w) {
  if (!std::isfinite(w) || w <= 0 || w > kKernelMaxW)
    fail("kernel: w must be a number in (0, {}] (the kernel's width is 1/w), got {}", kKernelMaxW, w);
  NoGradGuard no_grad;
  Generator gen(kLessonSeed);
  lesson::ToyData data = lesson::toy_data(50, gen);  // lesson 02's points: same count, same seed
  const int64_t n_test = data.x_test.size(0), n_train = data.x_train.size(0);

  KernelPanel p{.w = w, .width = 1 / w};
  p.x_train = data.x_train, p.y_train = data.y_train, p.x_test = data.x_test, p.y_truth = data.y_truth;
  Tensor queries = data.x_test.reshape({n_test, 1});         // (50, 1)
  Tensor keys = data.x_train.reshape({1, n_train});          // (1, n)
  Tensor d = (queries - keys) * static_cast<float>(w);       // (50, n): (x - xᵢ)·w, broadcast
  p.weights = (-(d * d) / 2).softmax(-1);                    // (50, n), each row sums to 1
  p.prediction = p.weights.matmul(data.y_train);             // (50, n) x (n,) -> (50,)
  p.test_mse = mse_loss(p.prediction, data.y_truth).item();  // against the noiseless f(x_test)
  p.mean_row_entropy = 0;
  for (int64_t q = 0; q < n_test; ++q) p.mean_row_entropy += row_entropy(p.weights.data() + q * n_train, n_train);
  p.mean_row_entropy /= static_cast<double>(n_test);

  const std::string setting = fmt::format("w = {:.3g}, width 1/w = {:.3g}", w, 1 / w);
  p.weights_svg = viz::heatmap_svg(p.weights, {.title = fmt::format("Nadaraya–Watson attention weights ({})", setting),
                                               .xlabel = "training inputs x_i (keys, sorted)",
                                               .ylabel = "test inputs x (queries)"});
  p.prediction_svg = viz::line_plot_svg(
      {{"truth f(x)", data.x_test.to_vector(), data.y_truth.to_vector()},
       {"Nadaraya–Watson", data.x_test.to_vector(), p.prediction.to_vector()},
       {"training points", data.x_train.to_vector(), data.y_train.to_vector(), /*points=*/true}},
      {.title = fmt::format("The prediction against the truth ({})", setting), .xlabel = "x", .ylabel = "y"});
  return p;
}

// ---- scoring -----------------------------------------------------------------------

ScoringSetup scoring_setup() {
  Generator gen(kLessonSeed);
  ScoringSetup s;
  s.query = randn({4}, gen);    // lesson 04 draws the query first …
  s.keys = randn({3, 4}, gen);  // … then the three keys, from the same generator
  s.values = tensor({1, 0, 0, 1, 1, 1}, {3, 2});
  return s;
}

ScoringPanel scoring_panel(const Tensor& queries, int64_t valid_len, bool scale) {
  const ScoringSetup setup = scoring_setup();
  const int64_t K = setup.keys.size(0), d = setup.keys.size(1);
  if (!queries.defined() || queries.dim() < 1 || queries.dim() > 2 || queries.size(-1) != d)
    fail("scoring: query must be {} numbers, or a list of queries of {} numbers each, got shape {}", d, d,
         queries.defined() ? queries.shape() : Shape{});
  const int64_t Q = queries.dim() == 1 ? 1 : queries.size(0);
  if (Q < 1 || Q > kScoringMaxQueries) fail("scoring: 1 to {} queries, got {}", kScoringMaxQueries, Q);
  for (float v : queries.to_vector())
    if (!std::isfinite(v) || std::abs(v) > kScoringMaxEntry)
      fail("scoring: every query entry must be a number in [-{0}, {0}], got {1}", kScoringMaxEntry, v);
  if (valid_len < 1 || valid_len > K)
    fail("scoring: valid_len must be 1 to {} (the number of keys), got {}", K, valid_len);
  NoGradGuard no_grad;

  ScoringPanel p{.queries = queries.reshape({Q, d}), .valid_len = valid_len, .scale = scale};
  p.scores = p.queries.matmul(transpose(setup.keys, 0, 1));                              // (Q, d) x (d, K) -> (Q, K)
  if (scale) p.scores = p.scores / std::sqrt(static_cast<float>(d));                     // q·k / √d
  Tensor masked = masked_softmax(p.scores.reshape({1, Q, K}), int_tensor({valid_len}));  // keys past valid_len: 0
  p.weights = masked.reshape({Q, K});                                                    // (1, Q, K) -> (Q, K)
  p.output = p.weights.matmul(setup.values);                                             // (Q, K) x (K, 2) -> (Q, 2)
  for (int64_t q = 0; q < Q; ++q) {
    const float* row = p.weights.data() + q * K;
    p.largest.push_back(*std::max_element(row, row + K));
    p.entropy.push_back(row_entropy(row, K));
  }
  p.weights_svg = viz::heatmap_svg(
      p.weights, {.title = fmt::format("Softmax weights of {} (valid_len {})", scale ? "q·k/√d" : "q·k", valid_len),
                  .xlabel = "keys",
                  // No axis label beside the rows: one or two rows are too short to hold "queries"
                  // upright, so each row says it is a query.
                  .row_labels = Q == 1 ? std::vector<std::string>{"query"} : numbered("query ", Q),
                  .col_labels = numbered("k", K),
                  .vmin = 0,
                  .vmax = 1});  // a fixed scale: the colours mean the same as the knobs move
  return p;
}

// ---- heads -------------------------------------------------------------------------

HeadsPanel heads_panel(int64_t num_heads) {
  const int64_t B = 2, Q = 4, K = 6, H = kHeadsNumHiddens;  // lesson 09's sizes
  const std::vector<int64_t> lens = {3, 2};
  if (num_heads < 1 || num_heads > kHeadsMax || H % num_heads != 0)
    fail("heads: num_heads must divide num_hiddens {} and be at most {} (1, 2, 4, 5, 10, 20 or 25), got {}", H,
         kHeadsMax, num_heads);
  NoGradGuard no_grad;
  Generator gen(kLessonSeed);
  // Drawn in lesson 09's order: the four Linear(100, 100) maps, then the queries and keys.
  // Their sizes do not depend on h, so every h splits the same projections.
  nn::MultiHeadAttention attention(H, num_heads, 0.5f, /*bias=*/false, gen);
  attention.eval();                        // dropout off, as in the lesson
  Tensor queries = randn({B, Q, H}, gen);  // (2, 4, 100)
  Tensor keys = randn({B, K, H}, gen);     // (2, 6, 100): keys = values
  attention(queries, keys, keys, int_tensor(lens));

  HeadsPanel p{.num_heads = num_heads, .weights = attention.attention_weights_per_head()};  // (B, h, Q, K)
  p.max_row_sum_error = 0, p.max_weight_on_padding = 0;
  const float* w = p.weights.data();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t row = 0; row < num_heads * Q; ++row) {  // the rows of every head of example b
      const float* r = w + (b * num_heads * Q + row) * K;
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        sum += r[k];
        if (k >= lens[static_cast<size_t>(b)])
          p.max_weight_on_padding = std::max<double>(p.max_weight_on_padding, r[k]);
      }
      p.max_row_sum_error = std::max(p.max_row_sum_error, std::abs(sum - 1));
    }
  // One row of the grid per head, one column per example: the grid grows downwards
  // with the heads and stays two subplots wide, so that 25 heads (or 5 on a
  // phone's narrow screen) keep labels large enough to read.
  p.weights_svg = viz::heatmap_grid_svg(
      transpose(p.weights, 0, 1),  // (B, h, Q, K) -> (h, B, Q, K): a copy
      // A short title: the picture is as wide as its widest part, and a phone shrinks it to its screen.
      {.title = fmt::format("{} head{} × {} features", num_heads, num_heads == 1 ? "" : "s", H / num_heads),
       .row_titles = numbered("head ", num_heads),
       .col_titles = numbered("example ", B),
       .cell = {.xlabel = "keys",
                .ylabel = "queries",
                .row_labels = numbered("q", Q),
                .col_labels = numbered("k", K),
                .vmin = 0,
                .vmax = 1}});
  return p;
}

// ---- positional --------------------------------------------------------------------

PositionalPanel positional_panel(int64_t positions, int64_t dims, int64_t shift) {
  if (positions < 1 || positions > kPositionalMaxPositions)
    fail("positional: positions must be 1 to {}, got {}", kPositionalMaxPositions, positions);
  if (dims < 2 || dims > kPositionalMaxDims || dims % 2 != 0)
    fail("positional: dims must be even, 2 to {} (a sine and a cosine per pair), got {}", kPositionalMaxDims, dims);
  if (positions * dims > kPositionalMaxCells)
    fail("positional: positions × dims = {} × {} = {} is past the cap of {} entries (one heatmap cell each)", positions,
         dims, positions * dims, kPositionalMaxCells);
  if (shift < 0 || shift >= positions)
    fail("positional: shift must be 0 to positions - 1 = {}, got {}", positions - 1, shift);
  Generator gen(kLessonSeed);  // PositionalEncoding's dropout takes one; P itself is a fixed table
  nn::PositionalEncoding pe(dims, 0, positions, gen);
  PositionalPanel p{.positions = positions, .dims = dims, .shift = shift, .P = pe.P.reshape({positions, dims})};

  // R(δ) is block-diagonal, one 2 × 2 rotation per column pair (2j, 2j+1) by the angle ω_j·δ:
  //   [sin ω_j(i+δ)]   [ cos ω_jδ   sin ω_jδ ] [sin ω_j i]
  //   [cos ω_j(i+δ)] = [-sin ω_jδ   cos ω_jδ ] [cos ω_j i]      (the angle-sum formulas)
  // so R(δ)·P[i] is each pair rotated, O(d) per row rather than a (d, d) product.
  const float* P = p.P.data();
  p.relative_max_error = 0;
  std::vector<float> rotated(static_cast<size_t>((positions - shift) * dims));
  for (int64_t col = 0; col < dims; col += 2) {
    const double omega = 1 / std::pow(10000.0, static_cast<double>(col) / static_cast<double>(dims));
    const double c = std::cos(omega * static_cast<double>(shift)), s = std::sin(omega * static_cast<double>(shift));
    for (int64_t i = 0; i + shift < positions; ++i) {
      const double sin_i = P[i * dims + col], cos_i = P[i * dims + col + 1];
      const double sin_moved = c * sin_i + s * cos_i, cos_moved = -s * sin_i + c * cos_i;  // R(δ)·P[i], pair j
      const float* target = P + (i + shift) * dims + col;                                  // P[i+δ], pair j
      rotated[static_cast<size_t>(i * dims + col)] = static_cast<float>(sin_moved);
      rotated[static_cast<size_t>(i * dims + col + 1)] = static_cast<float>(cos_moved);
      p.relative_max_error =
          std::max({p.relative_max_error, std::abs(sin_moved - target[0]), std::abs(cos_moved - target[1])});
    }
  }
  p.encoding_svg =
      viz::heatmap_svg(p.P, {.title = fmt::format("Positional encoding P ({} positions × {} dims)", positions, dims),
                             .xlabel = "encoding dimension",
                             .ylabel = "position i",
                             .vmin = -1,
                             .vmax = 1});  // sin and cos: the full range, whatever the knobs
  p.rotated = tensor(rotated, {positions - shift, dims});

  // What δ does, on row i = 0: P[0] = (sin 0, cos 0, …) = (0, 1, 0, 1, …) turned by R(δ), pair by
  // pair, lands on P[δ] (the points sit on the line); P[0] is drawn too, to see how far it moved.
  std::vector<float> dim_index(static_cast<size_t>(dims));
  std::iota(dim_index.begin(), dim_index.end(), 0.0f);
  const auto row = [&](const float* r) { return std::vector<float>(r, r + dims); };
  p.shift_svg =
      viz::line_plot_svg({{"P[0]", dim_index, row(P)},
                          {fmt::format("P[0+δ] = P[{}]", shift), dim_index, row(P + shift * dims)},
                          {fmt::format("R({})·P[0]", shift), dim_index, row(rotated.data()), /*points=*/true}},
                         {.title = fmt::format("The shift δ = {}: R(δ)·P[i] lands on P[i+δ] (row i = 0)", shift),
                          .xlabel = "encoding dimension",
                          .ylabel = "value"});
  return p;
}

// ---- run_panel: JSON in, JSON out --------------------------------------------------

namespace {

using nlohmann::json;

// A tensor as nested lists, row-major: (3) -> [a, b, c], (2, 3) -> [[…], […]], and so on.
json nested(const float* v, const Shape& shape, int64_t dim) {
  if (dim == shape.ndim()) return json(*v);
  json out = json::array();
  int64_t stride = 1;
  for (int64_t k = dim + 1; k < shape.ndim(); ++k) stride *= shape[k];
  for (int64_t i = 0; i < shape[dim]; ++i) out.push_back(nested(v + i * stride, shape, dim + 1));
  return out;
}
json nested(const Tensor& t) { return nested(t.data(), t.shape(), 0); }

// The request's fields, read by name: each knob absent (the lesson's value),
// or of the right type and then checked by the panel itself.
class Request {
 public:
  Request(const json& j, std::string panel) : j_(j), panel_(std::move(panel)) {}

  double number(const std::string& field, double fallback) {
    used_.push_back(field);
    if (!j_.contains(field)) return fallback;
    const json& v = j_.at(field);
    if (!v.is_number()) fail("{}: {} must be a number, got {}", panel_, field, v.dump());
    return v.get<double>();
  }
  int64_t integer(const std::string& field, int64_t fallback) {
    used_.push_back(field);
    if (!j_.contains(field)) return fallback;
    const json& v = j_.at(field);
    if (v.is_number_integer()) return v.get<int64_t>();
    // JavaScript has one number type: 2.0 is 2; 2.5 and 1e300 are not integers.
    if (v.is_number_float() && std::abs(v.get<double>()) < 1e15 && std::trunc(v.get<double>()) == v.get<double>())
      return static_cast<int64_t>(v.get<double>());
    fail("{}: {} must be a whole number, got {}", panel_, field, v.dump());
  }
  bool boolean(const std::string& field, bool fallback) {
    used_.push_back(field);
    if (!j_.contains(field)) return fallback;
    const json& v = j_.at(field);
    if (!v.is_boolean()) fail("{}: {} must be true or false, got {}", panel_, field, v.dump());
    return v.get<bool>();
  }
  // A list of numbers, or a list of such lists (all of one length): (n) or (rows, n).
  Tensor numbers(const std::string& field, const Tensor& fallback) {
    used_.push_back(field);
    if (!j_.contains(field)) return fallback;
    const json& v = j_.at(field);
    const std::string bad = fmt::format("{}: {} must be a list of numbers or a list of such lists, got {}", panel_,
                                        field, v.dump().substr(0, 200));
    if (!v.is_array() || v.empty()) fail("{}", bad);
    std::vector<float> out;
    if (!v.front().is_array()) {
      for (const json& x : v) {
        if (!x.is_number()) fail("{}", bad);
        out.push_back(x.get<float>());
      }
      return tensor(out, {static_cast<int64_t>(out.size())});
    }
    for (const json& row : v) {
      if (!row.is_array() || row.size() != v.front().size()) fail("{}", bad);
      for (const json& x : row) {
        if (!x.is_number()) fail("{}", bad);
        out.push_back(x.get<float>());
      }
    }
    const auto rows = static_cast<int64_t>(v.size()), cols = static_cast<int64_t>(v.front().size());
    if (cols == 0) fail("{}", bad);
    return tensor(out, {rows, cols});
  }
  // A field the panel does not read is a typo (say "valid_length"): named, not ignored.
  void no_other_fields() const {
    for (const auto& [key, value] : j_.items())
      if (key != "panel" && std::find(used_.begin(), used_.end(), key) == used_.end())
        fail("{}: unknown field \"{}\" (the fields are {})", panel_, key, fmt::join(used_, ", "));
  }

 private:
  const json& j_;
  std::string panel_;
  std::vector<std::string> used_;
};

json kernel_answer(Request& r) {
  const double w = r.number("w", 1.0);
  r.no_other_fields();
  const KernelPanel p = kernel_panel(w);
  return {{"request", {{"w", w}}},
          {"svg", {{"prediction", p.prediction_svg}, {"weights", p.weights_svg}}},
          {"values",
           {{"width", p.width},
            {"test_mse", p.test_mse},
            {"mean_row_entropy", p.mean_row_entropy},
            {"x_test", nested(p.x_test)},
            {"prediction", nested(p.prediction)}}}};
}

json scoring_answer(Request& r) {
  const ScoringSetup setup = scoring_setup();
  const Tensor queries = r.numbers("query", setup.query);
  const int64_t valid_len = r.integer("valid_len", setup.keys.size(0));
  const bool scale = r.boolean("scale", true);
  r.no_other_fields();
  const ScoringPanel p = scoring_panel(queries, valid_len, scale);
  return {{"request", {{"query", nested(queries)}, {"valid_len", valid_len}, {"scale", scale}}},
          {"svg", {{"weights", p.weights_svg}}},
          {"values",
           {{"keys", nested(setup.keys)},
            {"values", nested(setup.values)},
            {"scores", nested(p.scores)},
            {"weights", nested(p.weights)},
            {"output", nested(p.output)},
            {"largest", p.largest},
            {"entropy", p.entropy}}}};
}

json heads_answer(Request& r) {
  const int64_t num_heads = r.integer("num_heads", 5);
  r.no_other_fields();
  const HeadsPanel p = heads_panel(num_heads);
  return {{"request", {{"num_heads", num_heads}}},
          {"svg", {{"weights", p.weights_svg}}},
          {"values",
           {{"num_hiddens", kHeadsNumHiddens},
            {"head_features", kHeadsNumHiddens / num_heads},
            {"weights", nested(p.weights)},
            {"max_row_sum_error", p.max_row_sum_error},
            {"max_weight_on_padding", p.max_weight_on_padding}}}};
}

json positional_answer(Request& r) {
  const int64_t positions = r.integer("positions", 60), dims = r.integer("dims", 32), shift = r.integer("shift", 1);
  r.no_other_fields();
  const PositionalPanel p = positional_panel(positions, dims, shift);
  return {{"request", {{"positions", positions}, {"dims", dims}, {"shift", shift}}},
          {"svg", {{"encoding", p.encoding_svg}, {"shift", p.shift_svg}}},
          {"values", {{"relative_max_error", p.relative_max_error}}}};
}

}  // namespace

std::string run_panel(const std::string& request_json) {
  try {
    const json j = json::parse(request_json, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) fail("run_panel: the request is not JSON: {}", request_json.substr(0, 200));
    if (!j.is_object()) fail("run_panel: the request must be a JSON object, got {}", j.dump().substr(0, 200));
    if (!j.contains("panel") || !j.at("panel").is_string())
      fail("run_panel: the request needs \"panel\": one of \"kernel\", \"scoring\", \"heads\", \"positional\"");
    const std::string panel = j.at("panel").get<std::string>();
    Request r(j, panel);
    json answer;
    if (panel == "kernel")
      answer = kernel_answer(r);
    else if (panel == "scoring")
      answer = scoring_answer(r);
    else if (panel == "heads")
      answer = heads_answer(r);
    else if (panel == "positional")
      answer = positional_answer(r);
    else
      fail("run_panel: unknown panel \"{}\" (the panels are kernel, scoring, heads, positional)", panel);
    answer["panel"] = panel;
    return answer.dump();
  } catch (const std::exception& e) {
    return json{{"error", e.what()}}.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (...) {
    return R"({"error": "run_panel: an unexpected error"})";
  }
}

}  // namespace qkv::web
