// Lesson 04 · similarity and scoring functions
//
// Walks through:
//   001 快速了解: 本质思想, 计算过程      similarity (dot, cosine, MLP) -> softmax -> weighted sum
//   001 打分函数: 屏蔽 softmax (the masked softmax of the quoted note), 加性注意力,
//       缩放点积注意力 (and why the scores are divided by √d), 注意力的输出
//   003 相关数学表达, 注意力评分函数     a(q, k) the score, α(q, k) = softmax of the scores
//   004 2.1 引言 (权重计算)             its errata: QKᵀ/√d is not a cosine similarity, and a row
//                                       of K is a key, not a query
//
// The learner sees three similarities computed on the same query and keys, the
// softmax weights and the weighted sum of each, with 001's 计算过程 figure drawn
// from the dot product's numbers (computation.svg); the masked softmax with 1-D and
// 2-D valid lengths; d2l's two attention layers on d2l's example, whose
// outputs follow from the mathematics (the mean of the valid values);
// and why the dot product is divided by √d: its variance measured at d = 4, 64
// and 512, and what it does to the softmax (largest weight, entropy) with and
// without the scale; with the attention weights drawn.
//
// Run: build/release/lessons/04_scoring_functions [--seed S] [--out DIR]
#include <qkv/qkv.hpp>
#include <qkv/viz/computation.hpp>  // 001 计算过程 figure

#include <cmath>

#include "lesson.hpp"

using namespace qkv;

namespace {

// The variance of the entries of x, over all of them: mean((x - mean x)²).
double variance(const Tensor& x) {
  Tensor centred = x - x.mean();
  return mean(centred * centred).item();
}

// The mean over rows of the entropy -Σ p log p of each row of the (rows, n)
// softmax weights p. (p + 1e-30 keeps 0·log 0 at 0 where a weight underflows.)
double mean_entropy(const Tensor& p) { return mean(-sum(p * log(p + 1e-30f), 1)).item(); }

// 快速了解 · 计算过程, all three steps, on one query and three keys.
void similarities(lesson::Lesson& lesson, Generator& gen) {
  lesson.section("快速了解 · 计算过程 step 1: three similarities of one query to three keys");
  lesson.print(
      "本质思想: attention picks the few important values out of many; the weight says how important a\n"
      "value is. 计算过程: (1) score the query against each key, (2) softmax the scores into weights,\n"
      "(3) sum the values with those weights. In 003's notation (相关数学表达) a(q, k) is the score\n"
      "(注意力评分函数) and α(q, k) = softmax of the scores, the weight.\n");
  const int64_t d = 4;
  Tensor query = randn({d}, gen);                      // (4,)
  Tensor keys = randn({3, d}, gen);                    // (3, 4): three keys
  Tensor values = tensor({1, 0, 0, 1, 1, 1}, {3, 2});  // (3, 2): one value per key
  lesson.print("query {}  = {}\nkeys {} =\n{}\n", query.shape(), query, keys.shape(), keys);
  Tensor dot = keys.matmul(query);                                     // (3, 4) x (4,) -> (3,): Query·Keyᵢ
  Tensor scaled = dot / std::sqrt(static_cast<float>(d));              // (3,): Query·Keyᵢ / √d
  Tensor cosine = cosine_similarity(keys, reshape(query, {1, d}), 1);  // (3, 4), (1, 4) -> (3,)
  // MLP(Query, Keyᵢ): d2l's additive score w_vᵀ tanh(W_q q + W_k k), with 8 hidden units.
  nn::Linear W_q(d, 8, /*bias=*/false, gen), W_k(d, 8, false, gen), w_v(8, 1, false, gen);
  Tensor mlp = reshape(w_v(tanh(W_q(query) + W_k(keys))), {3});  // (8,) + (3, 8) -> (3, 8) -> (3, 1) -> (3,)
  lesson.print("{:<5} {:>8} {:>8} {:>8} {:>8}\n", "key", "dot", "dot/√d", "cosine", "MLP");
  for (int64_t i = 0; i < 3; ++i)
    lesson.print("{:<5} {:>8.4f} {:>8.4f} {:>8.4f} {:>8.4f}\n", i, dot.at({i}), scaled.at({i}), cosine.at({i}),
                 mlp.at({i}));
  lesson.print(
      "The cosine divides the dot product by both lengths (‖q‖ = {:.4f}); the scaled dot product divides\n"
      "by √d = {:.4f} whatever the lengths are. They agree only when ‖q‖·‖kᵢ‖ = √d.\n",
      std::sqrt(sum(query * query).item()), std::sqrt(static_cast<float>(d)));
  lesson.erratum(
      "004 2.1 calls QKᵀ/√d \"the cosine similarity\". It is a scaled dot product: the two columns\n"
      "dot/√d and cosine above are computed on the same vectors and differ.");
  Tensor queries = randn({2, d}, gen);  // (2, 4): two queries
  Tensor A = (queries.matmul(transpose(keys, 0, 1)) / std::sqrt(static_cast<float>(d))).softmax(-1);  // (2, 3)
  lesson.print("Two queries Q {} against the keys K {}: A = softmax(QKᵀ/√d) is {}, one row per query.\n",
               queries.shape(), keys.shape(), A.shape());
  lesson.erratum(
      fmt::format("004 2.1 says each row of K \"对应一个查询\" (corresponds to a query). A row of K is a key:\n"
                  "K {} holds {} keys of d = {}. It is a row of A {} that belongs to a query, and a column of A\n"
                  "to a key-value pair.",
                  keys.shape(), keys.size(0), d, A.shape()));
  lesson.result("attention_matrix_shape", A.shape());

  lesson.section("快速了解 · 计算过程 steps 2 and 3: softmax weights and the weighted sum");
  Tensor scores = stack({dot, cosine, mlp});  // 3 × (3,) -> (3 rules, 3 keys)
  Tensor weights = scores.softmax(-1);        // (3, 3): each row sums to 1
  Tensor pooled = weights.matmul(values);     // (3, 3) x (3, 2) -> (3, 2): Σᵢ aᵢ · Valueᵢ
  lesson.print("weights (rows: dot, cosine, MLP; columns: keys 0, 1, 2)\n{}\n", weights);
  lesson.heatmap("similarity_weights.svg", weights,
                 {.title = "Softmax weights of three similarities",
                  .xlabel = "keys",
                  .ylabel = "similarity",
                  .row_labels = {"dot", "cosine", "MLP"},
                  .col_labels = {"0", "1", "2"}});
  lesson.print("values {}, Valueᵢ the row of key i:\n{}\n", values.shape(), values);
  lesson.print("Attention(Query, Source) = Σᵢ aᵢ · Valueᵢ, one row per similarity:\n{}\n", pooled);
  lesson.print("for the dot row: {:.4f}·[{}, {}] + {:.4f}·[{}, {}] + {:.4f}·[{}, {}] = [{:.4f}, {:.4f}]\n",
               weights.at({0, 0}), values.at({0, 0}), values.at({0, 1}), weights.at({0, 1}), values.at({1, 0}),
               values.at({1, 1}), weights.at({0, 2}), values.at({2, 0}), values.at({2, 1}), pooled.at({0, 0}),
               pooled.at({0, 1}));
  // 001's 计算过程 figure, drawn from the dot row's numbers: query, keys, scores, softmax, weighted values.
  const std::string figure_title = "001 计算过程 from this run: the dot-product similarity of one query to three keys";
  viz::save_computation_svg(lesson.picture("computation.svg", figure_title),
                            {.title = figure_title,
                             .score_name = "Query · Keyᵢ",
                             .query = query,
                             .keys = keys,
                             .scores = dot,
                             .weights = reshape(slice(weights, 0, 0, 1), {3}),
                             .values = values,
                             .output = reshape(slice(pooled, 0, 0, 1), {2})});
  // 003 注意力评分函数's figure is the same pipeline with the score named a(q, kᵢ): drawn for the MLP row.
  const std::string scoring_title =
      "003 注意力评分函数 from this run: the MLP score a(q, kᵢ), its softmax α, the output";
  viz::save_computation_svg(lesson.picture("scoring_function.svg", scoring_title),
                            {.title = scoring_title,
                             .score_name = "a(q, kᵢ) = w_vᵀ tanh(W_q q + W_k kᵢ)",
                             .score_symbol = "a",
                             .weight_symbol = "α",
                             .query = query,
                             .keys = keys,
                             .scores = mlp,
                             .weights = reshape(slice(weights, 0, 2, 3), {3}),
                             .values = values,
                             .output = reshape(slice(pooled, 0, 2, 3), {2})});
  lesson.print("The figures of 001 计算过程 (dot row) and 003 注意力评分函数 (MLP row) with these numbers:\n");
  lesson.print("computation.svg and scoring_function.svg.\n");
  // Everything the table and the weighted sums were computed from, so that they can be checked.
  lesson.result("query", query);
  lesson.result("keys", keys);
  lesson.result("values", values);
  lesson.result("mlp_W_q", W_q.weight);  // (8, 4)
  lesson.result("mlp_W_k", W_k.weight);  // (8, 4)
  lesson.result("mlp_w_v", w_v.weight);  // (1, 8)
  lesson.result("similarity_dot", dot);
  lesson.result("similarity_scaled_dot", scaled);
  lesson.result("similarity_cosine", cosine);
  lesson.result("similarity_mlp", mlp);
  lesson.result("similarity_weights", weights);
  lesson.result("weighted_sums", pooled);
}

void masked_softmax_section(lesson::Lesson& lesson, Generator& gen) {
  lesson.section("打分函数 · 屏蔽 softmax (masked softmax)");
  lesson.print(
      "Padding keys must get no weight: masked_softmax sets the scores past each valid length to -1e6\n"
      "before the softmax, so their weight is 0 (exp(-1e6) underflows).\n");
  Tensor X = rand({2, 2, 4}, gen);                                         // d2l: torch.rand(2, 2, 4)
  Tensor masked_1d = masked_softmax(X, int_tensor({2, 3}));                // (2, 2, 4), valid lens (2)
  Tensor masked_2d = masked_softmax(X, int_tensor({1, 3, 2, 4}, {2, 2}));  // (2, 2, 4), valid lens (2, 2)
  lesson.print("X {} =\n{}\n", X.shape(), X);
  lesson.print("valid lengths [2, 3] (one per batch):\n{}\n", masked_1d);
  lesson.print("valid lengths [[1, 3], [2, 4]] (one per query row):\n{}\n", masked_2d);
  lesson.heatmap_grid("masked_softmax.svg", stack({masked_1d, masked_2d}),  // 2 × (2, 2, 4) -> (2, 2, 2, 4)
                      {.title = "Masked softmax",
                       .row_titles = {"valid lens [2, 3]", "valid lens [[1, 3], [2, 4]]"},
                       .col_titles = {"batch 0", "batch 1"},
                       .cell = {.xlabel = "keys", .ylabel = "queries"}});
  lesson.result("masked_softmax_1d", masked_1d);
  lesson.result("masked_softmax_2d", masked_2d);
}

// d2l's example of both layers: keys (2, 10, 2) of ones, values arange(40) as (2, 10, 4), valid lens [2, 6].
struct D2lExample {
  Tensor keys = ones({2, 10, 2});                                    // (2, K=10, 2)
  Tensor values = arange(40).reshape({1, 10, 4}).repeat({2, 1, 1});  // (1, 10, 4) -> (2, 10, 4)
  IntTensor valid_lens = int_tensor({2, 6});                         // batch 0 sees 2 keys, batch 1 sees 6
};

// Returns the queries (2, 1, 20) and the output (2, 1, 4), for the shapes of 注意力的输出.
std::pair<Tensor, Tensor> additive_section(lesson::Lesson& lesson, const D2lExample& ex, Generator& gen) {
  lesson.section("打分函数 · 加性注意力 (additive attention), d2l's example");
  lesson.print("a(q, k) = w_vᵀ tanh(W_q q + W_k k): the score; α(q, kᵢ) = softmax over i of a(q, kᵢ): the weight.\n");
  lesson.erratum(
      "001 加性注意力 writes α = (q, k) = w_vᵀ tanh(W_q q + W_k k). That expression is the score a(q, k),\n"
      "any real number; the weight α(q, k) is its softmax over the keys (003 相关数学表达 keeps the two\n"
      "apart), and only the weights are in [0, 1] and sum to 1.");
  // Queries and keys of different sizes (20 and 2); every key is the same vector of ones.
  Tensor queries = randn({2, 1, 20}, gen);  // (B=2, Q=1, 20)
  nn::AdditiveAttention additive(/*key_size=*/2, /*query_size=*/20, /*num_hiddens=*/8, /*dropout=*/0.1f, gen);
  additive.eval();                                                    // dropout off: the weights are used as computed
  Tensor out = additive(queries, ex.keys, ex.values, ex.valid_lens);  // -> (2, 1, 4)
  lesson.print("queries {}, keys {}, values {}, valid_lens [2, 6] -> output {}\n{}\n", queries.shape(), ex.keys.shape(),
               ex.values.shape(), out.shape(), out);
  lesson.print("attention weights {}:\n{}\n", additive.attention_weights.shape(), additive.attention_weights);
  lesson.heatmap("additive_attention_weights.svg",
                 reshape(additive.attention_weights, {2, 10}),  // (2, 1, 10) -> (2, 10)
                 {.title = "Additive attention weights (valid lens 2 and 6)",
                  .xlabel = "keys",
                  .ylabel = "queries",
                  .row_labels = {"batch 0", "batch 1"}});
  lesson.result("additive_output", out);
  lesson.result("additive_weights", additive.attention_weights);
  return {queries, out};
}

void dot_product_section(lesson::Lesson& lesson, const D2lExample& ex, Generator& gen) {
  lesson.section("打分函数 · 缩放点积注意力 (scaled dot-product attention)");
  Tensor queries = randn({2, 1, 2}, gen);  // (2, 1, 2): the query size must now equal the key size
  nn::DotProductAttention dot_product(/*dropout=*/0.5f, gen);
  dot_product.eval();
  Tensor out = dot_product(queries, ex.keys, ex.values, ex.valid_lens);  // -> (2, 1, 4)
  lesson.print("queries {} -> output {}\n{}\n", queries.shape(), out.shape(), out);
  lesson.print("attention weights {}:\n{}\n", dot_product.attention_weights.shape(), dot_product.attention_weights);
  lesson.heatmap("dot_product_attention_weights.svg", reshape(dot_product.attention_weights, {2, 10}),
                 {.title = "Scaled dot-product attention weights (valid lens 2 and 6)",
                  .xlabel = "keys",
                  .ylabel = "queries",
                  .row_labels = {"batch 0", "batch 1"}});
  lesson.result("dot_product_output", out);
  lesson.result("dot_product_weights", dot_product.attention_weights);
  // All keys are equal, so every valid key gets the same score and the same weight 1/valid_len: the
  // output is the mean of the first valid_len rows of the values, computed here from them.
  Tensor mean_2 = mean(slice(slice(ex.values, 0, 0, 1), 1, 0, 2), 1);  // (1, 2, 4) -> (1, 4): rows 0–1
  Tensor mean_6 = mean(slice(slice(ex.values, 0, 1, 2), 1, 0, 6), 1);  // (1, 6, 4) -> (1, 4): rows 0–5
  lesson.print(
      "Why both layers give the same output whatever their random parameters: all keys are equal, so\n"
      "every key gets the same score, and the masked softmax gives each valid key the same weight\n"
      "({:.4f} = 1/{:.0f} in batch 0, {:.4f} = 1/{:.0f} in batch 1, read from the weights above). The output\n"
      "is the mean of the first valid_len rows of the values:\n  rows 0–1: {}\n  rows 0–5: {}\n",
      dot_product.attention_weights.at({0, 0, 0}), 1 / dot_product.attention_weights.at({0, 0, 0}),
      dot_product.attention_weights.at({1, 0, 0}), 1 / dot_product.attention_weights.at({1, 0, 0}), mean_2, mean_6);
  lesson.erratum(
      "001 缩放点积注意力 writes the score as α(q, k) = qᵀk/√d. qᵀk/√d is the score a(q, k), any real\n"
      "number; α is the weight, the softmax of the scores over the keys (the same mix-up as its\n"
      "加性注意力 line). The weights printed above are the α; the scores before the softmax are the a.");
}

// 缩放点积注意力's reason for the scale, measured: q·k = Σⱼ qⱼkⱼ is a sum of d products, each of
// mean 0 and variance E[qⱼ²]E[kⱼ²] = 1 when the components are independent with mean 0 and
// variance 1; the d products are independent, so the variances add: Var(q·k) = d.
void why_sqrt_d_section(lesson::Lesson& lesson, Generator& gen) {
  lesson.section("打分函数 · 缩放点积注意力: why the dot product is divided by √d");
  const int64_t M = 1000, K = 10;  // M queries, each against its own K keys
  lesson.print(
      "q·k = Σⱼ qⱼkⱼ adds d products. If the components are independent with mean 0 and variance 1, each\n"
      "product has mean 0 and variance 1 and the variances add: Var(q·k) = d. Measured on {} queries, each\n"
      "against {} keys drawn from N(0, 1) ({} dot products per d); then the softmax over each query's {}\n"
      "scores, without and with the scale (uniform weights would have largest weight {:.3f} and entropy\n"
      "ln {} = {:.3f}):\n",
      M, K, M * K, K, 1.0 / K, K, std::log(static_cast<double>(K)));
  lesson.print("{:>5} {:>7} {:>10} {:>12} │ {:>14} {:>8} │ {:>14} {:>8}\n", "d", "σ", "Var(q·k)", "Var(q·k/√d)",
               "largest: q·k", "q·k/√d", "entropy: q·k", "q·k/√d");
  std::vector<double> ds, var, var_scaled, largest, largest_scaled, entropy, entropy_scaled;
  std::vector<Tensor> shown, shown_scaled;  // the weights of the first 5 queries at each d, (5, K)
  double var_sigma2 = 0, var_sigma2_scaled = 0;
  // The unit-variance rows, then one row that breaks the assumption: components of standard deviation 2.
  const std::vector<std::pair<int64_t, float>> cases = {{4, 1.0f}, {64, 1.0f}, {512, 1.0f}, {64, 2.0f}};
  for (auto [d, sigma] : cases) {
    Tensor q = randn({M, 1, d}, gen) * sigma;                   // (M, 1, d)
    Tensor k = randn({M, K, d}, gen) * sigma;                   // (M, K, d)
    Tensor s = reshape(bmm(q, transpose(k, 1, 2)), {M, K});     // (M, 1, d) x (M, d, K) -> (M, K)
    Tensor s_scaled = s / std::sqrt(static_cast<float>(d));     // (M, K)
    Tensor w = s.softmax(-1), w_scaled = s_scaled.softmax(-1);  // (M, K) each
    const double lw = mean(max(w, 1)).item(), lw_scaled = mean(max(w_scaled, 1)).item();
    lesson.print("{:>5} {:>7.1f} {:>10.2f} {:>12.3f} │ {:>14.3f} {:>8.3f} │ {:>14.3f} {:>8.3f}\n", d, sigma,
                 variance(s), variance(s_scaled), lw, lw_scaled, mean_entropy(w), mean_entropy(w_scaled));
    if (sigma != 1.0f) {
      var_sigma2 = variance(s), var_sigma2_scaled = variance(s_scaled);
      continue;
    }
    ds.push_back(static_cast<double>(d));
    var.push_back(variance(s));
    var_scaled.push_back(variance(s_scaled));
    largest.push_back(lw);
    largest_scaled.push_back(lw_scaled);
    entropy.push_back(mean_entropy(w));
    entropy_scaled.push_back(mean_entropy(w_scaled));
    shown.push_back(slice(w, 0, 0, 5));
    shown_scaled.push_back(slice(w_scaled, 0, 0, 5));
  }
  lesson.print(
      "Unscaled, the scores spread as √d: at d = {} the largest weight averages {:.3f} and the entropy\n"
      "{:.3f}, so the softmax is nearly one-hot and its gradient nearly 0 (∂αᵢ/∂sⱼ = αᵢ(δᵢⱼ - αⱼ) vanishes\n"
      "as one α goes to 1). Divided by √d the scores have variance 1 at every d, and the weights look the\n"
      "same at d = {} and d = {} (entropy {:.3f} and {:.3f}).\n",
      ds.back(), largest.back(), entropy.back(), ds.front(), ds.back(), entropy_scaled.front(), entropy_scaled.back());
  lesson.erratum(fmt::format(
      "001 缩放点积注意力 says the dot product has mean 0 and variance d without saying when: it holds for\n"
      "components that are independent with mean 0 and variance 1. The last row above has independent\n"
      "components of standard deviation σ = 2: each product has variance σ²·σ² = {:g}, so Var(q·k) = {:g}·{} =\n"
      "{:g} (measured {:.1f}), and dividing by √d leaves {:g} (measured {:.2f}), not 1.",
      std::pow(2.0, 4), std::pow(2.0, 4), 64, std::pow(2.0, 4) * 64, var_sigma2, std::pow(2.0, 4), var_sigma2_scaled));
  lesson.result("scaling_variance_sigma2_d64", var_sigma2);
  lesson.result("scaling_variance_scaled_sigma2_d64", var_sigma2_scaled);
  std::vector<std::string> titles;
  for (double d : ds) titles.push_back(fmt::format("d = {}", d));
  lesson.heatmap_grid("sqrt_d_scaling.svg", stack({stack(shown), stack(shown_scaled)}),  // (2, 3, 5, K)
                      {.title = "Softmax weights of 5 queries over 10 keys, one colour scale",
                       .row_titles = {"q·k", "q·k / √d"},
                       .col_titles = titles,
                       .cell = {.xlabel = "keys", .ylabel = "queries", .vmin = 0, .vmax = 1}});
  lesson.result("scaling_d", ds);
  lesson.result("scaling_samples", static_cast<int64_t>(M * K));
  lesson.result("scaling_variance", var);
  lesson.result("scaling_variance_scaled", var_scaled);
  lesson.result("scaling_largest_weight", largest);
  lesson.result("scaling_largest_weight_scaled", largest_scaled);
  lesson.result("scaling_entropy", entropy);
  lesson.result("scaling_entropy_scaled", entropy_scaled);
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 4);
  lesson.start();
  lesson.print(
      "This lesson shows how attention scores a query against its keys (dot, cosine, MLP, additive,\n"
      "scaled dot product), turns the scores into weights with a (masked) softmax, sums the values with\n"
      "them, and why the dot product is divided by √d.\n");
  Generator gen(lesson.seed());

  similarities(lesson, gen);
  masked_softmax_section(lesson, gen);
  D2lExample example;
  auto [queries, additive_out] = additive_section(lesson, example, gen);
  dot_product_section(lesson, example, gen);
  why_sqrt_d_section(lesson, gen);

  lesson.section("打分函数 · 注意力的输出: the shapes");
  lesson.print(
      "queries (批量数, 查询向量个数, 查询向量长度) = {}\nkeys    (批量数, 键-值对个数, 键向量长度)   = {}\n"
      "values  (批量数, 键-值对个数, 值向量长度)   = {}\noutput  (批量数, 查询向量个数, 值向量长度) = {}\n",
      queries.shape(), example.keys.shape(), example.values.shape(), additive_out.shape());

  lesson.print(
      "\nWhat to remember: attention is score, softmax, weighted sum. The score a(q, k) can be a dot product,\n"
      "a cosine, an MLP or additive; α is its softmax over the keys, masked where keys are padding; the\n"
      "output sums the values with the α. Divide q·k by √d, or the softmax turns one-hot as d grows.\n");
  return lesson.finish(
      "Similarity, masked softmax, additive and scaled dot-product attention computed on d2l's shapes.\n"
      "Equal keys give uniform weights, so d2l's example outputs the mean of the valid values.");
}
