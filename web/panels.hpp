// The course page's live panels: a knob the learner turns, and the picture
// of one lesson recomputed at once. Each panel is a plain function of typed
// knobs that returns tensors, numbers and SVG text (the tests call these),
// and run_panel takes a request as JSON and answers in JSON (the browser
// calls that, through a wasm export the page wraps around it).
//
// Every panel starts from its lesson's data at the lesson's seed (0), so at
// the lesson's setting it shows what the lesson showed. Each runs in a few
// milliseconds natively: the knobs are capped (kMax… below) so that the
// browser's single-threaded scalar build stays well under a second.
//
// kernel (lessons 02–03, 001 注意力汇聚 §2–3): Nadaraya–Watson regression on
//   the lessons' toy data, f(x) = Σᵢ αᵢ(x) yᵢ with
//     αᵢ(x) = softmax over i of -((x - xᵢ)·w)²/2.
//   The knob w sets the kernel's width 1/w: w = 1 is lesson 02, lesson 03
//   learns w ≈ 23 at seed 0 (its results.json). A larger w narrows the band of
//   weights along the diagonal; the curve then follows the noise of the
//   nearest points, a smaller one averages over far ones. Shows the
//   prediction against the truth, the 50 × 50 weights, the test MSE.
//
// scoring (lesson 04, 001 打分函数): one or more queries q (4 numbers each)
//   scored against lesson 04's three keys kⱼ, then the masked softmax:
//     score(q, kⱼ) = q·kⱼ / √d  (or q·kⱼ with scale off),
//     α(q, kⱼ) = softmax over the first valid_len keys, 0 for the others.
//   Why: the learner sees the weights follow the query, the masked keys
//   get exactly 0, and without the scale a long query makes the softmax
//   nearly one-hot (largest weight → 1, entropy → 0).
//
// heads (lesson 09, 004 §2.1): d2l's multi-head attention with
//   num_hiddens H = 100 on lesson 09's queries (2, 4, 100) and keys = values
//   (2, 6, 100), valid lengths [3, 2]. The knob is the number of heads h,
//   a divisor of 100 (each head scores with H/h features of the same
//   projections: W_q, W_k do not depend on h). Shows every head's
//   weights as a grid (rows = heads, cols = examples): each row sums to 1,
//   the padded keys weigh 0, and the heads differ.
//
// positional (lesson 10, 001 位置编码): the sinusoidal encoding
//     P[i, 2j] = sin(i / 10000^(2j/d)),  P[i, 2j+1] = cos(i / 10000^(2j/d))
//   for the knobs' positions n and dims d, and the relative-position check
//   of 相对位置信息: P[i+δ] = R(δ)·P[i], with R(δ) a rotation of each column
//   pair by the angle δ/10000^(2j/d) whatever i is; the panel reports the
//   largest |R(δ)·P[i] - P[i+δ]| over i (float rounding, ~1e-7), and draws
//   what δ does on one row: R(δ)·P[0] as points on the line of P[δ], beside P[0].
//
// Bad knobs throw a qkv::Error naming the knob and its value; run_panel
// answers {"error": "…"} instead and never throws.
#pragma once
#include <qkv/qkv.hpp>

#include <string>
#include <vector>

namespace qkv::web {

// (Every field has an initialiser, so that a panel is built with designated initialisers.)

// ---- kernel ------------------------------------------------------------------------
constexpr double kKernelMaxW = 1000;  // width 1/w = 0.001, far below the spacing of the 50 training points

struct KernelPanel {
  double w = 0, width = 0;      // the knob, and the kernel's width 1/w
  Tensor x_train{}, y_train{};  // (n), (n): keys and values, lesson 02's 50 points
  Tensor x_test{}, y_truth{};   // (50), (50): queries 0, 0.1, …, 4.9 and the noiseless f(x)
  Tensor weights{};             // (50, n): test queries × training keys, rows sum to 1
  Tensor prediction{};          // (50): f(x_test)
  double test_mse = 0;          // mean (prediction - y_truth)²
  double mean_row_entropy = 0;  // mean over rows of -Σ α log α (lower = sharper)
  std::string prediction_svg{}, weights_svg{};
};
KernelPanel kernel_panel(double w);

// ---- scoring -----------------------------------------------------------------------
constexpr int64_t kScoringMaxQueries = 8;  // rows of the heatmap
constexpr double kScoringMaxEntry = 100;   // |query entries|: q·k stays far from float's range

struct ScoringSetup {
  Tensor query{};   // (4): lesson 04's query (the panel's default)
  Tensor keys{};    // (3, 4): lesson 04's keys
  Tensor values{};  // (3, 2): lesson 04's values
};
ScoringSetup scoring_setup();

struct ScoringPanel {
  Tensor queries{};               // (Q, 4): the knob
  int64_t valid_len = 0;          // keys 0 … valid_len-1 count
  bool scale = true;              // scores divided by √d
  Tensor scores{};                // (Q, 3): q·kⱼ (/√d), before the mask
  Tensor weights{};               // (Q, 3): masked softmax of the scores
  Tensor output{};                // (Q, 2): weights · values
  std::vector<double> largest{};  // per row: the largest weight
  std::vector<double> entropy{};  // per row: -Σ α log α
  std::string weights_svg{};
};
// queries (4) or (Q, 4), Q ≤ kScoringMaxQueries.
ScoringPanel scoring_panel(const Tensor& queries, int64_t valid_len, bool scale);

// ---- heads -------------------------------------------------------------------------
constexpr int64_t kHeadsNumHiddens = 100;  // lesson 09's num_hiddens: 1, 2, 4, 5, 10, 20, 25, 50, 100 divide it
constexpr int64_t kHeadsMax = 25;          // a grid of 50 or 100 heads is too wide to read

struct HeadsPanel {
  int64_t num_heads = 0;
  Tensor weights{};                  // (B, h, Q, K) = (2, h, 4, 6)
  double max_row_sum_error = 0;      // largest |Σ_k weight - 1| over every (example, head, query)
  double max_weight_on_padding = 0;  // largest weight on a key past the example's valid length
  std::string weights_svg{};         // the grid: rows = examples, cols = heads
};
HeadsPanel heads_panel(int64_t num_heads);

// ---- positional --------------------------------------------------------------------
// The heatmap has a cell per entry of P, and drawing one takes a few µs:
// positions × dims is capped at 4096 (64 × 64, 128 × 32; lesson 10 draws 60 × 32).
constexpr int64_t kPositionalMaxPositions = 1000;
constexpr int64_t kPositionalMaxDims = 512;
constexpr int64_t kPositionalMaxCells = 4096;

struct PositionalPanel {
  int64_t positions = 0, dims = 0, shift = 0;
  Tensor P{};                     // (positions, dims)
  Tensor rotated{};               // (positions - shift, dims): row i is R(δ)·P[i], which should be P[i+δ]
  double relative_max_error = 0;  // largest |R(δ)·P[i] - P[i+δ]| over i = 0 … positions-1-δ
  std::string encoding_svg{};
  std::string shift_svg{};  // row 0: P[0], P[δ] and R(δ)·P[0] against the dimension
};
PositionalPanel positional_panel(int64_t positions, int64_t dims, int64_t shift);

// ---- the browser's entry point -----------------------------------------------------
// A request such as {"panel": "scoring", "query": [1, 0.5, 0, 0], "valid_len": 2, "scale": true};
// every knob may be left out (the lesson's setting). The answer:
// {"panel": …, "request": {every knob as used}, "svg": {name: "<svg …>"}, "values": {…}},
// or {"error": "…"} naming the field and the value. Never throws.
std::string run_panel(const std::string& request_json);

}  // namespace qkv::web
