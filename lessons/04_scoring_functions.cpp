// Lesson 04 · similarity and scoring functions
//
// Walks through:
//   001 快速了解: 本质思想, 计算过程      similarity (dot, cosine, MLP) -> softmax -> weighted sum
//   001 打分函数: 屏蔽 softmax (the masked softmax of the quoted note), 加性注意力,
//       缩放点积注意力, 注意力的输出
//   003 相关数学表达, 注意力评分函数     a(q, k) the score, α(q, k) = softmax of the scores
//   004 2.1 引言 (权重计算)             its erratum: QKᵀ/√d is not a cosine similarity
//
// The learner sees three similarities computed on the same query and keys, the
// softmax weights and the weighted sum of each; the masked softmax with 1-D and
// 2-D valid lengths; and d2l's two attention layers on d2l's example, whose
// outputs [[2, 3, 4, 5]] and [[10, 11, 12, 13]] follow from the mathematics;
// with the attention weights drawn.
//
// Run: build/release/lessons/04_scoring_functions [--seed S] [--out DIR]
#include <qkv/qkv.hpp>

#include <cmath>

#include "lesson.hpp"

using namespace qkv;

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 4);
  lesson.start();
  Generator gen(lesson.seed());

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
  lesson.print("Attention(Query, Source) = Σᵢ aᵢ · Valueᵢ, one row per similarity:\n{}\n", pooled);
  lesson.result("similarity_dot", dot);
  lesson.result("similarity_scaled_dot", scaled);
  lesson.result("similarity_cosine", cosine);
  lesson.result("similarity_weights", weights);

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

  lesson.section("打分函数 · 加性注意力 (additive attention), d2l's example");
  // Queries and keys of different sizes (20 and 2); every key is the same vector of ones.
  Tensor queries = randn({2, 1, 20}, gen);                                  // (B=2, Q=1, 20)
  Tensor equal_keys = ones({2, 10, 2});                                     // (2, K=10, 2)
  Tensor arange_values = arange(40).reshape({1, 10, 4}).repeat({2, 1, 1});  // (1, 10, 4) -> (2, 10, 4)
  IntTensor valid_lens = int_tensor({2, 6});                                // batch 0 sees 2 keys, batch 1 sees 6
  nn::AdditiveAttention additive(/*key_size=*/2, /*query_size=*/20, /*num_hiddens=*/8, /*dropout=*/0.1f, gen);
  additive.eval();  // dropout off: the weights are used as computed
  Tensor additive_out = additive(queries, equal_keys, arange_values, valid_lens);  // -> (2, 1, 4)
  lesson.print("queries {}, keys {}, values {}, valid_lens [2, 6] -> output {}\n{}\n", queries.shape(),
               equal_keys.shape(), arange_values.shape(), additive_out.shape(), additive_out);
  lesson.print("attention weights {}:\n{}\n", additive.attention_weights.shape(), additive.attention_weights);
  lesson.heatmap("additive_attention_weights.svg",
                 reshape(additive.attention_weights, {2, 10}),  // (2, 1, 10) -> (2, 10)
                 {.title = "Additive attention weights (valid lens 2 and 6)",
                  .xlabel = "keys",
                  .ylabel = "queries",
                  .row_labels = {"batch 0", "batch 1"}});
  lesson.result("additive_output", additive_out);
  lesson.result("additive_weights", additive.attention_weights);

  lesson.section("打分函数 · 缩放点积注意力 (scaled dot-product attention)");
  Tensor queries_2 = randn({2, 1, 2}, gen);  // (2, 1, 2): the query size must now equal the key size
  nn::DotProductAttention dot_product(/*dropout=*/0.5f, gen);
  dot_product.eval();
  Tensor dot_out = dot_product(queries_2, equal_keys, arange_values, valid_lens);  // -> (2, 1, 4)
  lesson.print("queries {} -> output {}\n{}\n", queries_2.shape(), dot_out.shape(), dot_out);
  lesson.print("attention weights {}:\n{}\n", dot_product.attention_weights.shape(), dot_product.attention_weights);
  lesson.heatmap("dot_product_attention_weights.svg", reshape(dot_product.attention_weights, {2, 10}),
                 {.title = "Scaled dot-product attention weights (valid lens 2 and 6)",
                  .xlabel = "keys",
                  .ylabel = "queries",
                  .row_labels = {"batch 0", "batch 1"}});
  lesson.result("dot_product_output", dot_out);
  lesson.result("dot_product_weights", dot_product.attention_weights);
  lesson.print(
      "Why both layers give [[2, 3, 4, 5]] and [[10, 11, 12, 13]] whatever their random parameters: all\n"
      "keys are equal, so every key gets the same score, and the masked softmax gives each valid key the\n"
      "same weight (1/2 in batch 0, 1/6 in batch 1). The output is the mean of the first valid_len rows of\n"
      "values: rows 0–1 of arange(40) as (10, 4) average to [2, 3, 4, 5], rows 0–5 to [10, 11, 12, 13].\n");

  lesson.section("打分函数 · 注意力的输出: the shapes");
  lesson.print(
      "queries (批量数, 查询向量个数, 查询向量长度) = {}\nkeys    (批量数, 键-值对个数, 键向量长度)   = {}\n"
      "values  (批量数, 键-值对个数, 值向量长度)   = {}\noutput  (批量数, 查询向量个数, 值向量长度) = {}\n",
      queries.shape(), equal_keys.shape(), arange_values.shape(), additive_out.shape());

  return lesson.finish(
      "Dot, scaled dot, cosine and MLP scores of one query, their softmax weights and weighted sums; the\n"
      "masked softmax with 1-D and 2-D valid lengths; additive and scaled dot-product attention on d2l's\n"
      "example, both giving [[2, 3, 4, 5]] and [[10, 11, 12, 13]] because equal keys give uniform weights.");
}
