// Lesson 10 · self-attention and positional encoding
//
// Walks through:
//   001 自注意力 简介          yᵢ = f(xᵢ, (x₁, x₁), …, (xₙ, xₙ)): every xᵢ is query, key and value
//   001 位置编码, 位置编码矩阵  P[i, 2j] = sin(i / 10000^(2j/d)), P[i, 2j+1] = cos(i / 10000^(2j/d)); input X + P
//   001 绝对位置信息            the binary counter: higher dims change more slowly, like higher bits
//   001 相对位置信息            P[i+δ] is a fixed linear map (a rotation per column pair) of P[i]
//   001 对比                    CNN, RNN and self-attention: compute, sequential operations, longest path
//   004 2.2 位置编码            the same formula, and its errata: what attention "consists of",
//                               PE(pos, i) called "一行" (it is one element), "非线性信息", and
//                               "位置编码越靠近某个时间步，它的作用就越小"; 001's "自编码输入" and
//                               "位置于计δ处" are flagged where 001 comes up
//
// The learner sees that self-attention without positions is blind to order
// (permuting the inputs only permutes the outputs), the 60 × 32 encoding
// matrix as a heatmap and four of its columns as curves, the bits of 0…7
// beside the sign changes of the encoding's columns, the rotation that moves
// every row δ positions on (its largest error over 1000 positions, computed),
// the rows' equal lengths and P[i]·P[i+δ] depending on δ alone,
// and the 对比 table measured: the engine's own Conv1d, RNN and scaled
// dot-product attention timed as n and d grow, with log-log slopes beside
// the formulas, FLOPs counted from the shapes, sequential steps and path
// lengths counted from each layer's structure.
//
// Letters: B batch, n positions (sequence length), d features, k kernel size.
//
// Run: build/release/lessons/10_positional_encoding [--seed S] [--reps R] [--out DIR]
#include <qkv/qkv.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "lesson.hpp"

using namespace qkv;

namespace {

// --- helpers this lesson needs (not in the support library) -------------------

// This process's CPU time in milliseconds. The layers run on one thread, so
// it is the time they took, without the time other programs held the cores
// (a wall clock counts that too, and on a shared machine it dominates).
// Where there is no CPU clock (a WebAssembly page), the wall clock.
double cpu_ms() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// The median CPU time, in milliseconds, of at least `reps` calls of fn, after
// one untimed warm-up call (which pays for first-touch allocation). Fast
// calls are repeated until they have run for 25 ms in all (at most 200
// times), so that a small size's median is not one unlucky measurement.
double median_ms(const std::function<void()>& fn, int64_t reps) {
  fn();
  std::vector<double> ms;
  double total = 0;
  while (static_cast<int64_t>(ms.size()) < reps || (total < 25 && ms.size() < 200)) {
    const double start = cpu_ms();
    fn();
    ms.push_back(cpu_ms() - start);
    total += ms.back();
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The least-squares slope of log2 y against log2 x: time ~ size^slope.
double loglog_slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double m = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double lx = std::log2(x[i]), ly = std::log2(y[i]);
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
  }
  return (m * sxy - sx * sy) / (m * sxx - sx * sx);
}

std::vector<float> log2_of(const std::vector<double>& v) {
  std::vector<float> out;
  for (double x : v) out.push_back(static_cast<float>(std::log2(x)));
  return out;
}

// The rotation that moves a row of the encoding δ positions on:
//   R (d, d) block-diagonal, one 2 × 2 block per column pair (2j, 2j+1), ω_j = 1/10000^(2j/d):
//     [ cos ω_jδ   sin ω_jδ ]   [sin ω_j i]   [sin ω_j(i+δ)]
//     [-sin ω_jδ   cos ω_jδ ] · [cos ω_j i] = [cos ω_j(i+δ)]     (the angle-sum formulas)
// R depends on δ alone, not on i: P[i+δ] = R·P[i] for every position i.
Tensor rotation(int64_t d, int64_t delta) {
  Tensor R = zeros({d, d});
  float* r = R.data();
  for (int64_t col = 0; col + 1 < d; col += 2) {
    double w = 1.0 / std::pow(10000.0, static_cast<double>(col) / static_cast<double>(d));
    float c = static_cast<float>(std::cos(w * static_cast<double>(delta)));
    float s = static_cast<float>(std::sin(w * static_cast<double>(delta)));
    r[col * d + col] = c, r[col * d + col + 1] = s;
    r[(col + 1) * d + col] = -s, r[(col + 1) * d + col + 1] = c;
  }
  return R;
}

std::vector<float> column(const Tensor& m, int64_t c) { return slice(m, 1, c, c + 1).to_vector(); }

// How many times the sign of v changes along it.
int64_t sign_changes(const std::vector<float>& v) {
  int64_t changes = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if ((v[i] >= 0) != (v[i - 1] >= 0)) ++changes;
  return changes;
}

// The longest path between positions 0 and n-1 through stacked Conv1d layers
// of kernel k (padding (k-1)/2 keeps the length): the fewest layers L after
// which some position sees both ends. Measured with the engine's Conv1d of
// ones on two one-hot inputs, whose supports grow by k-1 positions a layer.
int64_t conv_path_length(int64_t n, int64_t k, Generator& gen) {
  nn::Conv1d conv(1, 1, k, 1, (k - 1) / 2, 1, false, gen);
  NoGradGuard no_grad;
  nn::init::ones_(conv.weight);
  std::vector<float> x(static_cast<size_t>(2 * n), 0.0f);  // (2, 1, n): row 0 one-hot at 0, row 1 at n-1
  x[0] = 1, x[static_cast<size_t>(2 * n - 1)] = 1;
  for (int64_t layers = 1;; ++layers) {
    std::vector<float> y = conv(tensor(x, {2, 1, n})).to_vector();
    for (float& v : y) v = v > 0 ? 1.0f : 0.0f;  // keep the support only (values would grow as k^L)
    for (int64_t t = 0; t < n; ++t)
      if (y[static_cast<size_t>(t)] > 0 && y[static_cast<size_t>(n + t)] > 0) return layers;
    x = y;
  }
}

struct Timing {
  std::vector<double> cnn, rnn, attention;  // median ms at each size
  std::vector<double> cnn_flops, rnn_flops, attention_flops;
  std::vector<double> cnn_steps, rnn_steps, attention_steps;  // sequential operations
};

// One size point: the three layers on the same (B, n, d) input, forward only
// (no graph recorded). FLOPs are counted from the shapes each layer used:
//   Conv1d      out (B, d, n), each entry a dot of length C·k           2·numel(out)·C·k      = 2Bnkd²
//   RNN         each of n steps multiplies x_t (B, d) by W_ih (d, d)
//               and h (B, d) by W_hh (d, d)                             steps·2B·(|W_ih|+|W_hh|) = 4Bnd²
//   attention   scores (B, n, n), each a dot of length d; output
//               (B, n, d), each a sum of n weighted values              2Bn²d + 2Bn²d         = 4Bn²d
// (Each multiply-add counts 2; biases, tanh and softmax are O(nd) or O(n²) and left out.)
void time_point(int64_t B, int64_t n, int64_t d, int64_t k, int64_t reps, Generator& gen, Timing& t) {
  nn::Conv1d conv(d, d, k, 1, (k - 1) / 2, 1, true, gen);
  nn::RNN rnn(d, d, 1, true, false, 0, gen);
  nn::DotProductAttention attention(0, gen);
  Tensor X = randn({B, n, d}, gen);    // (B, n, d)
  Tensor X_conv = transpose(X, 1, 2);  // (B, d, n): channels first
  Tensor X_rnn = transpose(X, 0, 1);   // (n, B, d): steps first
  NoGradGuard no_grad;

  Tensor conv_out = conv(X_conv);                             // (B, d, n)
  nn::RNNOutput rnn_out = rnn(X_rnn);                         // output (n, B, d)
  Tensor attention_out = attention(X, X, X);                  // (B, n, n)·(B, n, d) -> (B, n, d)
  const Shape& scores = attention.attention_weights.shape();  // (B, n, n)
  const double C = static_cast<double>(conv.weight.size(1)), K = static_cast<double>(conv.weight.size(2));
  const double steps = static_cast<double>(rnn_out.output.size(0));
  t.cnn_flops.push_back(2 * static_cast<double>(conv_out.numel()) * C * K);
  t.rnn_flops.push_back(steps * 2 * static_cast<double>(B) *
                        static_cast<double>(rnn.weight_ih[0].numel() + rnn.weight_hh[0].numel()));
  t.attention_flops.push_back(2 * static_cast<double>(scores.numel()) * static_cast<double>(d) +
                              2 * static_cast<double>(attention_out.numel()) * static_cast<double>(scores[2]));
  // Sequential operations: the conv reads every window in one im2col and one
  // GEMM, attention every pair in one batched GEMM; no position waits for
  // another. The RNN's step t needs h_{t-1}: one cell call per step.
  t.cnn_steps.push_back(1);
  t.rnn_steps.push_back(steps);
  t.attention_steps.push_back(1);

  t.cnn.push_back(median_ms([&] { conv(X_conv); }, reps));
  t.rnn.push_back(median_ms([&] { rnn(X_rnn); }, reps));
  t.attention.push_back(median_ms([&] { attention(X, X, X); }, reps));
}

// ---- 简介 --------------------------------------------------------------------------
// Self-attention with Q = K = V = X is blind to order: a reordering of the positions only reorders the
// outputs, until a positional encoding is added.
void introduction(lesson::Lesson& lesson, Generator& gen) {
  lesson.section("自注意力 简介: every xᵢ is query, key and value");
  lesson.print(
      "yᵢ = f(xᵢ, (x₁, x₁), …, (xₙ, xₙ)): attention pooling where the sequence attends to itself.\n"
      "Scaled dot-product attention with Q = K = V = X (B, n, d) -> (B, n, d), no projections.\n");
  nn::DotProductAttention self_attention(0, gen);
  Tensor X = randn({1, 6, 8}, gen);                      // (B, n, d) = (1, 6, 8)
  IntTensor perm = int_tensor({5, 3, 0, 1, 4, 2}, {6});  // a reordering of the 6 positions
  Tensor Y = self_attention(X, X, X);                    // (1, 6, 8)
  Tensor Xp = index_select(X, 1, perm);                  // the same tokens in another order
  double equivariance = max(abs(self_attention(Xp, Xp, Xp) - index_select(Y, 1, perm))).item();
  lesson.print("Y = f(X) {}; reorder the positions of X by {}:\n", Y.shape(), perm);
  lesson.print("  largest |f(X reordered) - f(X) reordered| = {:.2e}\n", equivariance);
  lesson.print("Reordering the input only reorders the output: self-attention does not see positions.\n");

  nn::PositionalEncoding encoding(8, 0, 1000, gen);
  Tensor XP = encoding(X), XpP = encoding(Xp);  // X + P[:6], with P added at the positions after reordering
  double with_positions =
      max(abs(self_attention(XpP, XpP, XpP) - index_select(self_attention(XP, XP, XP), 1, perm))).item();
  lesson.print("With a positional encoding added (X + P, 001 位置编码), the same reordering changes the output:\n");
  lesson.print("  largest |f(X reordered + P) - f(X + P) reordered| = {:.3f}\n", with_positions);
  lesson.result("permutation_error", equivariance);
  lesson.result("permutation_change_with_pe", with_positions);
}

// ---- 位置编码矩阵 ---------------------------------------------------------------------
// d2l's picture: 60 positions × 32 dims. Returns P (60, 32).
Tensor encoding_matrix(lesson::Lesson& lesson, Generator& gen) {
  lesson.section("位置编码矩阵: P[i, 2j] = sin(i/10000^(2j/d)), P[i, 2j+1] = cos(i/10000^(2j/d))");
  const int64_t n_pe = 60, d_pe = 32;
  nn::PositionalEncoding pe(d_pe, 0, n_pe, gen);
  Tensor P = pe.P.reshape({n_pe, d_pe});  // (1, n, d) -> (n, d)
  lesson.print(
      "nn::PositionalEncoding(num_hiddens = {}, max_len = {}): P {} is a fixed table with no parameters;\n"
      "the input of the first attention layer is X + P.\n",
      d_pe, n_pe, P.shape());
  lesson.print("The first 4 positions, first 8 dims:\n{}\n", slice(slice(P, 0, 0, 4), 1, 0, 8));
  lesson.heatmap("positional_encoding.svg", P,
                 {.title = "Positional encoding P (60 positions × 32 dims)",
                  .xlabel = "encoding dimension",
                  .ylabel = "position i"});
  std::vector<float> positions;
  for (int64_t i = 0; i < n_pe; ++i) positions.push_back(static_cast<float>(i));
  std::vector<viz::Series> curves;
  for (int64_t c = 6; c < 10; ++c) curves.push_back({fmt::format("col {}", c), positions, column(P, c)});
  lesson.line_plot("pe_columns.svg", curves,
                   {.title = "Columns 6 to 9 of P: sine and cosine, each pair slower than the last",
                    .xlabel = "position i",
                    .ylabel = "P[i, col]"});
  lesson.erratum(
      "004 §2.2 says Scaled Dot-Product Attention \"由两部分组成\": scaled dot-product attention and positional\n"
      "encoding. It does not: scaled dot-product attention is softmax(QKᵀ/√d_k)·V alone. Positional\n"
      "encoding is a separate step on the input, X + P, done once before the first attention layer\n"
      "(nn::PositionalEncoding here; the attention above ran without it).");
  lesson.erratum(fmt::format(
      "004 §2.2 says PE(pos, i) \"是位置编码矩阵的一行\" (is a row of the matrix). PE(pos, i) is one element,\n"
      "row pos and column i: P[1, 0] = sin(1) = {:.4f} above. A row is PE(pos, ·), the {} numbers of one position.",
      P.at({1, 0}), d_pe));
  lesson.erratum(
      "004 §2.2 says positional encoding gives the model \"非线性信息\" (nonlinear information) about\n"
      "positions. P is a fixed table added to the input, X + P: nothing about it is a nonlinearity of the\n"
      "model. Its entries are sines and cosines of the position, and what it gives is the position itself,\n"
      "in a code where moving δ on is a linear map (the rotation in 相对位置信息 below).");
  lesson.erratum(
      "001 位置编码 calls X + P \"自编码输入\" (an auto-encoded input). Nothing is auto-encoded: X + P is\n"
      "the input with its positions added, which self-attention reads as queries, keys and values.");
  lesson.result("pe_shape", P.shape());
  lesson.result("pe", P);
  return P;
}

// ---- 绝对位置信息 ---------------------------------------------------------------------
void absolute_position(lesson::Lesson& lesson, const Tensor& P) {
  lesson.section("绝对位置信息: like a binary counter, higher dims change more slowly");
  const int64_t n_pe = P.size(0), d_pe = P.size(1);
  lesson.print(" i  bits (b2 b1 b0)   P[i,0]  P[i,2]  P[i,4]  P[i,6]   (sine columns of pairs j = 0…3)\n");
  for (int64_t i = 0; i < 8; ++i) {
    lesson.print("{:2}  {}  {}  {}        ", i, (i >> 2) & 1, (i >> 1) & 1, i & 1);
    for (int64_t c = 0; c < 8; c += 2) lesson.print(" {:+.3f}", P.at({i, c}));
    lesson.print("\n");
  }
  lesson.print("Over positions 0…{}: how often each bit flips, and how often each sine column changes sign:\n",
               n_pe - 1);
  std::vector<double> bit_flips, pe_sign_changes;
  for (int64_t bit = 0; bit < 4; ++bit) {
    int64_t flips = 0;
    for (int64_t i = 1; i < n_pe; ++i) flips += ((i >> bit) & 1) != (((i - 1) >> bit) & 1);
    bit_flips.push_back(static_cast<double>(flips));
    lesson.print("  bit {}: period {:2} positions, {:2} flips\n", bit, 2 << bit, flips);
  }
  for (int64_t col = 0; col < 16; col += 2) {
    double wavelength = 2 * std::numbers::pi * std::pow(10000.0, static_cast<double>(col) / static_cast<double>(d_pe));
    int64_t changes = sign_changes(column(P, col));
    pe_sign_changes.push_back(static_cast<double>(changes));
    lesson.print("  column {:2} (j = {:2}): wavelength {:8.1f} positions, {:2} sign changes\n", col, col / 2,
                 wavelength, changes);
  }
  lesson.print(
      "A bit k flips every 2^k steps; column pair j turns with frequency 1/10000^(2j/d). Each row is a\n"
      "unique code of its position, with smooth sin/cos in place of the bits' 0/1 jumps.\n");
  lesson.result("bit_flips", bit_flips);
  lesson.result("pe_sign_changes", pe_sign_changes);
}

// ---- 相对位置信息 ---------------------------------------------------------------------
// Returns the largest |R(δ)·P[i] - P[i+δ]|.
double relative_position(lesson::Lesson& lesson, Generator& gen) {
  lesson.section("相对位置信息: P[i+δ] = R(δ)·P[i], one rotation for every i");
  const int64_t n_rel = 1000, d_pe = 32;
  nn::PositionalEncoding pe_long(d_pe, 0, n_rel, gen);
  Tensor P_long = pe_long.P.reshape({n_rel, d_pe});  // (1000, 32)
  lesson.print("R(1), its first two 2 × 2 blocks (column pairs j = 0, 1):\n{}\n",
               slice(slice(rotation(d_pe, 1), 0, 0, 4), 1, 0, 4));
  double relative_error = 0;
  for (int64_t delta : {1, 2, 5, 10, 100}) {
    Tensor R = rotation(d_pe, delta);                                               // (d, d)
    Tensor moved = matmul(slice(P_long, 0, 0, n_rel - delta), transpose(R, 0, 1));  // rows P[i]·Rᵀ = (R·P[i])ᵀ
    double err = max(abs(moved - slice(P_long, 0, delta, n_rel))).item();           // against P[i+δ], i = 0 … 999-δ
    relative_error = std::max(relative_error, err);
    lesson.print("  δ = {:3}: largest |R(δ)·P[i] - P[i+δ]| over i = 0…{} is {:.2e}\n", delta, n_rel - 1 - delta, err);
  }
  lesson.print(
      "R(δ) depends on δ alone (an angle ω_j·δ per pair), so a layer can learn to attend \"δ positions back\"\n"
      "with one linear map, wherever it is in the sequence. (The error is float32 rounding.)\n");
  lesson.erratum(
      "001 相对位置信息 writes \"位置于计δ处的位置编码\", which is garbled: it means the encoding at position\n"
      "i + δ, which a linear projection of the encoding at position i gives, R(δ)·P[i], as computed above.");
  lesson.result("relative_max_error", relative_error);

  // What can be said of P and distance: every row has the same length, Σⱼ sin² + cos² = d/2, and
  // P[i]·P[i+δ] = Σⱼ cos(ω_j δ) depends on δ alone, largest at δ = 0.
  Tensor norms = sqrt(sum(P_long * P_long, 1));  // (1000,)
  const double norm_spread = max(norms).item() - min(norms).item();
  lesson.print("\nEvery row of P has length √(d/2) = {:.4f}: measured {:.4f} … {:.4f} over the {} positions.\n",
               std::sqrt(d_pe / 2.0), min(norms).item(), max(norms).item(), n_rel);
  lesson.print("P[i]·P[i+δ], the same at every i:\n     δ │ i = 0    i = 100  i = 500\n");
  std::vector<double> similarity;  // at i = 0, for each δ
  for (int64_t delta : {0, 1, 2, 5, 10, 20, 50}) {
    lesson.print("{:6} │", delta);
    for (int64_t i : {0, 100, 500}) {
      const double dot = sum(slice(P_long, 0, i, i + 1) * slice(P_long, 0, i + delta, i + delta + 1)).item();
      if (i == 0) similarity.push_back(dot);
      lesson.print(" {:8.4f}", dot);
    }
    lesson.print("\n");
  }
  lesson.erratum(
      "004 §2.2 says \"位置编码越靠近某个时间步，它的作用就越小\" (the closer a positional encoding is to a time\n"
      "step, the smaller its effect). That has no meaning as written: P has no strength that varies with\n"
      "position (every row has the same length, above), and its effect on attention comes through dot\n"
      "products such as P[i]·P[i+δ], which depend on the distance δ alone and are largest at δ = 0.");
  lesson.result("pe_row_norm_spread", norm_spread);
  lesson.result("pe_similarity_by_distance", similarity);
  return relative_error;
}

// ---- 对比 ---------------------------------------------------------------------------
struct Comparison {
  int64_t B = 8, k = 3, d_fixed = 64, n_fixed = 128;
  std::vector<double> n_sizes = {64, 128, 256, 512, 1024}, d_sizes = {32, 64, 128, 256, 512};
  Timing by_n, by_d;
  std::vector<double> cnn_path, rnn_path, attention_path;  // at each n
};

// The three layers timed at every size, and the longest paths counted.
Comparison measure_comparison(lesson::Lesson& lesson, int64_t reps, Generator& gen) {
  Comparison c;
  auto bar = lesson.progress("size", static_cast<int64_t>(c.n_sizes.size() + c.d_sizes.size()));
  int64_t done = 0;
  for (double n : c.n_sizes) {
    time_point(c.B, static_cast<int64_t>(n), c.d_fixed, c.k, reps, gen, c.by_n);
    bar.update(++done, {{"n", n}});
  }
  for (double d : c.d_sizes) {
    time_point(c.B, c.n_fixed, static_cast<int64_t>(d), c.k, reps, gen, c.by_d);
    bar.update(++done, {{"d", d}});
  }
  bar.finish();
  nn::DotProductAttention self_attention(0, gen);
  for (double n : c.n_sizes) {
    const int64_t ni = static_cast<int64_t>(n);
    c.cnn_path.push_back(static_cast<double>(conv_path_length(ni, c.k, gen)));
    // The RNN's only link between steps is h: x₀ reaches y_{n-1} through n-1 products by W_hh.
    c.rnn_path.push_back(n - 1);
    // One attention layer: y_{n-1} reads x₀ directly (one weight of one softmax). Checked: its gradient is not 0.
    Tensor Xa = randn({1, ni, 4}, gen).requires_grad_();
    sum(slice(self_attention(Xa, Xa, Xa), 1, ni - 1, ni)).backward();  // d y_{n-1} / d X
    c.attention_path.push_back(max(abs(slice(Xa.grad(), 1, 0, 1))).item() > 0 ? 1 : -1);
  }
  return c;
}

struct Slopes {
  double cnn_n, rnn_n, attention_n, cnn_d, rnn_d, attention_d;  // time ~ size^slope
  int64_t d_fixed;                                              // the d of the slopes against n
};

// The log-log slopes against the formulas' exponents, and the two plots.
Slopes comparison_slopes(lesson::Lesson& lesson, const Comparison& c) {
  const Timing &by_n = c.by_n, &by_d = c.by_d;
  const double slope_cnn_n = loglog_slope(c.n_sizes, by_n.cnn), slope_rnn_n = loglog_slope(c.n_sizes, by_n.rnn);
  const double slope_attention_n = loglog_slope(c.n_sizes, by_n.attention);
  const double slope_cnn_d = loglog_slope(c.d_sizes, by_d.cnn), slope_rnn_d = loglog_slope(c.d_sizes, by_d.rnn);
  const double slope_attention_d = loglog_slope(c.d_sizes, by_d.attention);
  lesson.print("\nFitted log-log slopes (time ~ size^slope), measured against the formula's exponent:\n");
  lesson.print("                  vs n (formula)   vs d (formula)\n");
  lesson.print("  CNN             {:5.2f}  (1)       {:5.2f}  (2)      O(knd²)\n", slope_cnn_n, slope_cnn_d);
  lesson.print("  RNN             {:5.2f}  (1)       {:5.2f}  (2)      O(nd²)\n", slope_rnn_n, slope_rnn_d);
  lesson.print("  self-attention  {:5.2f}  (2)       {:5.2f}  (1)      O(n²d)\n", slope_attention_n, slope_attention_d);
  lesson.print(
      "NOTE: the slopes are measured on this machine. They approach the formula only where the work\n"
      "dominates the overhead: at small sizes a layer's time is mostly fixed costs (allocation, the\n"
      "RNN's n small per-step products of B × d by d × d), which pull the slope toward 0 or bend it;\n"
      "caches push it either way (attention's (B, n, n) scores take 32 MB at n = 1024, past the cache,\n"
      "so its last point is slower than n² alone predicts). CPU time leaves out other programs' turns on\n"
      "the cores, not their use of the caches: run it again, or with --reps 15, to see how much slopes move.\n");

  std::vector<float> log_n = log2_of(c.n_sizes), log_d = log2_of(c.d_sizes);
  lesson.line_plot("time_vs_n.svg",
                   {{"CNN", log_n, log2_of(by_n.cnn)},
                    {"RNN", log_n, log2_of(by_n.rnn)},
                    {"self-attention", log_n, log2_of(by_n.attention)}},
                   {.title = fmt::format("Forward time as n grows (d = {}, B = {}), log-log", c.d_fixed, c.B),
                    .xlabel = "log2 n",
                    .ylabel = "log2 ms"});
  lesson.line_plot("time_vs_d.svg",
                   {{"CNN", log_d, log2_of(by_d.cnn)},
                    {"RNN", log_d, log2_of(by_d.rnn)},
                    {"self-attention", log_d, log2_of(by_d.attention)}},
                   {.title = fmt::format("Forward time as d grows (n = {}, B = {}), log-log", c.n_fixed, c.B),
                    .xlabel = "log2 d",
                    .ylabel = "log2 ms"});
  lesson.result("slope_cnn_n", slope_cnn_n);
  lesson.result("slope_rnn_n", slope_rnn_n);
  lesson.result("slope_attention_n", slope_attention_n);
  lesson.result("slope_cnn_d", slope_cnn_d);
  lesson.result("slope_rnn_d", slope_rnn_d);
  lesson.result("slope_attention_d", slope_attention_d);
  return {slope_cnn_n, slope_rnn_n, slope_attention_n, slope_cnn_d, slope_rnn_d, slope_attention_d, c.d_fixed};
}

void comparison_results(lesson::Lesson& lesson, const Comparison& c) {
  lesson.result("B", c.B);
  lesson.result("k", c.k);
  lesson.result("d_fixed", c.d_fixed);
  lesson.result("n_fixed", c.n_fixed);
  lesson.result("n_sizes", c.n_sizes);
  lesson.result("d_sizes", c.d_sizes);
  lesson.result("flops_cnn_n", c.by_n.cnn_flops);
  lesson.result("flops_rnn_n", c.by_n.rnn_flops);
  lesson.result("flops_attention_n", c.by_n.attention_flops);
  lesson.result("flops_cnn_d", c.by_d.cnn_flops);
  lesson.result("flops_rnn_d", c.by_d.rnn_flops);
  lesson.result("flops_attention_d", c.by_d.attention_flops);
  lesson.result("steps_cnn", c.by_n.cnn_steps);
  lesson.result("steps_rnn", c.by_n.rnn_steps);
  lesson.result("steps_attention", c.by_n.attention_steps);
  lesson.result("path_cnn", c.cnn_path);
  lesson.result("path_rnn", c.rnn_path);
  lesson.result("path_attention", c.attention_path);
  lesson.result("ms_cnn_n", c.by_n.cnn);
  lesson.result("ms_rnn_n", c.by_n.rnn);
  lesson.result("ms_attention_n", c.by_n.attention);
  lesson.result("ms_cnn_d", c.by_d.cnn);
  lesson.result("ms_rnn_d", c.by_d.rnn);
  lesson.result("ms_attention_d", c.by_d.attention);
}

Slopes comparison(lesson::Lesson& lesson, int64_t reps, Generator& gen) {
  lesson.section("对比: CNN, RNN and self-attention, counted and measured");
  const Comparison sizes;  // the sizes, before anything is measured
  lesson.print(
      "The notes' table (n positions, d features, k kernel size):\n"
      "                         CNN         RNN        self-attention\n"
      "  compute                O(knd²)     O(nd²)     O(n²d)\n"
      "  sequential operations  O(1)        O(n)       O(1)\n"
      "  longest path           O(n/k)      O(n)       O(1)\n"
      "(001 lists 并行度, parallelism: O(n), O(1), O(n), which is n / sequential operations.)\n"
      "Measured on the engine's layers: nn::Conv1d(d, d, k = {}, padding {}), nn::RNN(d, d), and\n"
      "nn::DotProductAttention with Q = K = V = X (without the projections, which would add O(nd²)),\n"
      "B = {}, forward only, the median CPU time of at least {} runs per size (more for fast sizes).\n",
      sizes.k, (sizes.k - 1) / 2, sizes.B, reps);
  Comparison c = measure_comparison(lesson, reps, gen);
  const Timing &by_n = c.by_n, &by_d = c.by_d;
  lesson.print("\nAs n grows (d = {}):\n", c.d_fixed);
  lesson.print("     n │ CNN ms   GFLOP  steps  path │ RNN ms   GFLOP  steps  path │ attn ms  GFLOP  steps  path\n");
  for (size_t i = 0; i < c.n_sizes.size(); ++i)
    lesson.print("{:6} │ {:6.2f} {:7.3f} {:6} {:5} │ {:6.2f} {:7.3f} {:6} {:5} │ {:6.2f} {:7.3f} {:6} {:5}\n",
                 c.n_sizes[i], by_n.cnn[i], by_n.cnn_flops[i] / 1e9, by_n.cnn_steps[i], c.cnn_path[i], by_n.rnn[i],
                 by_n.rnn_flops[i] / 1e9, by_n.rnn_steps[i], c.rnn_path[i], by_n.attention[i],
                 by_n.attention_flops[i] / 1e9, by_n.attention_steps[i], c.attention_path[i]);
  lesson.print("\nAs d grows (n = {}):\n", c.n_fixed);
  lesson.print("     d │ CNN ms   GFLOP │ RNN ms   GFLOP │ attn ms  GFLOP\n");
  for (size_t i = 0; i < c.d_sizes.size(); ++i)
    lesson.print("{:6} │ {:6.2f} {:7.3f} │ {:6.2f} {:7.3f} │ {:6.2f} {:7.3f}\n", c.d_sizes[i], by_d.cnn[i],
                 by_d.cnn_flops[i] / 1e9, by_d.rnn[i], by_d.rnn_flops[i] / 1e9, by_d.attention[i],
                 by_d.attention_flops[i] / 1e9);
  lesson.print("The path through stacked convolutions is ⌈(n-1)/(k-1)⌉ layers: {} for n = {} and k = {}.\n",
               c.cnn_path.back(), c.n_sizes.back(), c.k);
  Slopes slopes = comparison_slopes(lesson, c);
  comparison_results(lesson, c);
  return slopes;
}

}  // namespace

// What the lesson will show, printed before its first section.
void what_you_will_see(lesson::Lesson& lesson) {
  lesson.print(
      "What this lesson shows: that self-attention alone cannot see the order of its inputs; the sinusoidal\n"
      "positional encoding P that gives it the order, drawn, read as a binary counter, and moved δ positions\n"
      "on by one rotation; and CNN, RNN and self-attention compared by counting and by timing the engine's\n"
      "own layers.\n");
}

// What to keep from it, printed before the summary.
void what_to_remember(lesson::Lesson& lesson) {
  lesson.print(
      "\nWhat to remember: permuting the inputs of self-attention only permutes its outputs, so the order must\n"
      "be added to the input, X + P, once, before the first layer; each column pair of P is a sine and cosine\n"
      "of its own wavelength, and P[i+δ] = R(δ)·P[i] for every i; self-attention connects any two positions\n"
      "in one step, at a cost that grows as n², where an RNN needs n sequential steps.\n");
}

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 10);
  int64_t reps = 5;
  lesson.option("--reps", reps, "timed repetitions per size (the median is kept)", {.max = 1000});
  lesson.start();
  Generator gen(lesson.seed());
  if (reps < 1) reps = 1;
  what_you_will_see(lesson);

  introduction(lesson, gen);
  Tensor P = encoding_matrix(lesson, gen);
  absolute_position(lesson, P);
  const double relative_error = relative_position(lesson, gen);
  const Slopes slopes = comparison(lesson, reps, gen);
  what_to_remember(lesson);

  return lesson.finish(fmt::format(
      "Self-attention alone is blind to order; adding the sinusoidal encoding P (60 × 32 drawn) gives each\n"
      "position a code whose columns change more slowly as j grows, like the bits of a counter, and\n"
      "P[i+δ] = R(δ)·P[i] for every i (largest error {:.1e}). Timed on this machine, attention grows as\n"
      "n^{:.2f} at d = {}, the RNN as n^{:.2f} and d^{:.2f}, the CNN as n^{:.2f} and d^{:.2f}; the RNN needs n\n"
      "sequential steps and a path of n-1, the CNN ⌈(n-1)/(k-1)⌉ layers, attention 1.",
      relative_error, slopes.attention_n, slopes.d_fixed, slopes.rnn_n, slopes.rnn_d, slopes.cnn_n, slopes.cnn_d));
}
