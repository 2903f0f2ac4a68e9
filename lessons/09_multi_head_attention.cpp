// Lesson 09 · multi-head attention
//
// Walks through:
//   004 2.1 引言, 多头注意力机制   several attention heads, each on its own learned
//                                linear projections of the same queries, keys and values
//
// The learner sees d2l's multi-head attention at d2l's sizes (num_hiddens 100,
// 5 heads, dropout 0.5 switched off by eval mode; queries (2, 4, 100), keys
// and values (2, 6, 100), valid lengths [3, 2] -> output (2, 4, 100)); how
// transpose_qkv moves the heads into the batch dim, (B, T, H) -> (B·h, T, H/h),
// so that one bmm serves every head, and how transpose_output puts them back;
// the weights of every head drawn as one grid (rows = examples, cols =
// heads), the padded keys blank; and, computed from those weights, that each
// head's rows sum to 1 and the padded keys get zero weight. 004 2.1's errata
// are flagged where they come up: the context listed as an input, QKᵀ/√d
// called a cosine similarity, a row of K called a query.
//
// Letters: B examples, Q queries, K key–value pairs, H num_hiddens, h heads
// (each head sees H/h = 20 features).
//
// Run: build/release/lessons/09_multi_head_attention [--seed S] [--out DIR]
#include <qkv/qkv.hpp>

#include <algorithm>
#include <cmath>

#include "lesson.hpp"

using namespace qkv;

namespace {

// d2l 11.5's sizes.
constexpr int64_t B = 2, Q = 4, K = 6, H = 100, h = 5;
const std::vector<int64_t> kLens = {3, 2};  // example 0 may look at 3 keys, example 1 at 2

// The layer and the inputs it runs on.
struct Inputs {
  Tensor queries, keys;  // (B, Q, H), (B, K, H): keys and values are the same tensor, as in d2l
  IntTensor valid_lens;  // (B)
};

void what_you_will_see(lesson::Lesson& lesson) {
  lesson.print(
      "What this lesson shows: one multi-head attention layer at d2l's sizes, run on random queries and\n"
      "keys; how its five heads share one bmm by moving into the batch dim (transpose_qkv) and back\n"
      "(transpose_output), checked entry by entry; and each head's weights drawn, their rows summing to 1\n"
      "and the padded keys given none.\n");
}

// 多头注意力机制: the layer, d2l's shapes through it, and its picture.
Tensor one_layer(lesson::Lesson& lesson, nn::MultiHeadAttention& attention, const Inputs& in) {
  lesson.section("多头注意力机制: one layer, five heads");
  lesson.print(
      "The notes: several heads look at the same queries, keys and values, each through its own\n"
      "linear maps, so each can attend to something different; their outputs are concatenated and\n"
      "mixed by one more linear map:\n"
      "  head_i = attention(q W_q,i, k W_k,i, v W_v,i)   (B, Q, H/h)\n"
      "  output = [head_1, …, head_h] W_o               (B, Q, H)\n");
  lesson.erratum(
      "004 2.1 lists the context (上下文) among attention's inputs, beside the query and the key–value\n"
      "pairs. The context is attention's output: the weighted sum of the values, here each head's\n"
      "(B, Q, H/h) before W_o. What goes in is queries, keys and values alone (and the valid lengths).");
  lesson.print("{}\n", attention.repr());
  Tensor out = attention(in.queries, in.keys, in.keys, in.valid_lens);
  lesson.print("queries {}, keys = values {}, valid_lens [{}, {}] -> output {}\n", in.queries.shape(), in.keys.shape(),
               kLens[0], kLens[1], out.shape());
  lesson.draw_model("model.svg", attention, [&] { attention(in.queries, in.keys, in.keys, in.valid_lens); },
                    {.title = fmt::format("MultiHeadAttention with {} heads, drawn from one call", h)});
  return out;
}

// transpose_qkv and transpose_output, checked entry by entry.
struct Layout {
  Tensor projected, heads, back;
  double layout_diff = 0, round_trip = 0;
};
Layout heads_in_batch(lesson::Lesson& lesson, nn::MultiHeadAttention& attention, const Inputs& in) {
  lesson.section("transpose_qkv and transpose_output: the heads in the batch dim");
  Layout l;
  l.projected = attention.W_q->forward(in.queries);      // (B, Q, H): every head's W_q,i at once, side by side
  Tensor split = l.projected.reshape({B, Q, h, H / h});  // (B, Q, H) -> (B, Q, h, H/h): feature block i is head i
  Tensor moved = permute(split, {0, 2, 1, 3});           // (B, h, Q, H/h)
  l.heads = nn::transpose_qkv(l.projected, h);           // (B·h, Q, H/h)
  lesson.print("W_q(queries)             {}   one Linear(100, 100) computes all five heads' projections\n",
               l.projected.shape());
  lesson.print("reshape to (B, Q, h, H/h) {}   features 20i … 20i+19 belong to head i\n", split.shape());
  lesson.print("permute to (B, h, Q, H/h) {}\n", moved.shape());
  lesson.print("reshape to (B·h, Q, H/h)  {}   = transpose_qkv: row b·h + i is head i of example b\n", l.heads.shape());
  // Row b·h + i of the result is the slice [b, :, 20i : 20i+20] of the projection: checked for every (b, i).
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < h; ++i) {
      Tensor row = slice(l.heads, 0, b * h + i, b * h + i + 1).reshape({Q, H / h});  // (Q, H/h)
      Tensor block = slice(slice(l.projected, 0, b, b + 1), 2, i * (H / h), (i + 1) * (H / h)).reshape({Q, H / h});
      l.layout_diff = std::max(l.layout_diff, static_cast<double>(max(abs(row - block)).item()));
    }
  lesson.print("largest |heads[b·h + i] - W_q(queries)[b, :, 20i:20i+20]| over all b, i = {:.1e}\n", l.layout_diff);
  l.back = nn::transpose_output(l.heads, h);  // (B·h, Q, H/h) -> (B, Q, H)
  l.round_trip = max(abs(l.back - l.projected)).item();
  lesson.print("transpose_output(transpose_qkv(x)) {}: largest |difference from x| = {:.1e}\n", l.back.shape(),
               l.round_trip);
  lesson.print(
      "So one bmm of (10, 4, 20) by (10, 20, 6) scores every head of every example; the valid lengths\n"
      "[3, 2] are repeated per head, [3, 3, 3, 3, 3, 2, 2, 2, 2, 2], to mask the same keys in every head.\n");
  return l;
}

// Each head's weights drawn, and two facts computed from them: rows sum to 1, padding gets nothing.
struct Weights {
  Tensor weights;  // (B, h, Q, K)
  double worst_row_sum = 0, largest_masked = 0;
};
Weights each_head(lesson::Lesson& lesson, nn::MultiHeadAttention& attention) {
  lesson.section("Each head's weights");
  Weights w;
  w.weights = attention.attention_weights_per_head();  // (B·h, Q, K) viewed as (B, h, Q, K) = (2, 5, 4, 6)
  lesson.print("attention_weights {} as kept by d2l, viewed per head {}\n", attention.attention_weights().shape(),
               w.weights.shape());
  std::vector<std::string> head_titles, example_titles;
  for (int64_t i = 0; i < h; ++i) head_titles.push_back(fmt::format("head {}", i));
  for (int64_t b = 0; b < B; ++b) example_titles.push_back(fmt::format("example {}", b));
  lesson.heatmap_grid("head_weights.svg", w.weights,
                      {.title = "Multi-head attention weights (valid lengths 3 and 2)",
                       .row_titles = example_titles,
                       .col_titles = head_titles,
                       .cell = {.xlabel = "keys",
                                .ylabel = "queries",
                                .row_labels = {"q0", "q1", "q2", "q3"},
                                .col_labels = {"k0", "k1", "k2", "k3", "k4", "k5"},
                                .vmin = 0,
                                .vmax = 1}});

  Tensor row_sums = w.weights.sum(-1);  // (B, h, Q, K) -> (B, h, Q): each 1
  w.worst_row_sum = max(abs(row_sums - 1.0f)).item();
  // The weight each (example, head, query) row puts on keys past the example's valid length.
  Tensor key_index = arange(0, static_cast<float>(K)).reshape({1, K});                          // (1, K): 0, 1, …, 5
  Tensor limit = tensor({static_cast<float>(kLens[0]), static_cast<float>(kLens[1])}, {B, 1});  // (B, 1)
  IntTensor padded = (key_index >= limit).reshape({B, 1, 1, K});  // (B, 1, 1, K): 1 on the padded keys
  Tensor masked_weight = where(padded, w.weights, 0.0f).sum(-1);  // (B, h, Q): weight on padding
  w.largest_masked = max(masked_weight).item();
  lesson.print("each head's row sums (B, h, Q) = {}: largest |sum - 1| = {:.1e}\n", row_sums.shape(), w.worst_row_sum);
  lesson.print("weight on the padded keys (k3–k5 of example 0, k2–k5 of example 1), per row: largest {:.1e}\n",
               w.largest_masked);
  lesson.print(
      "The mask sets padded scores to -1e6 before the softmax; exp(-1e6 - max) underflows to exactly 0,\n"
      "so padding gets no weight in any head, and each head spreads its weight differently over the rest.\n");
  return w;
}

void the_score(lesson::Lesson& lesson) {
  lesson.section("The score: a scaled dot product");
  lesson.erratum(
      "004 2.1 calls QKᵀ/√d a cosine similarity; it is a scaled dot product: q·k/√d grows with the\n"
      "lengths of q and k, while the cosine q·k/(‖q‖‖k‖) lies in [-1, 1] (lesson 04 prints both numbers).\n"
      "Here each head scores with its own d = H/h = 20, so the scale is 1/√20.");
  lesson.erratum(
      "004 2.1 says each row of K \"对应一个查询\" (stands for a query). A row of K is a key: row j of\n"
      "K is what query i is compared with in score (i, j) = q_i·k_j/√d; the queries are the rows of Q.\n"
      "Here keys (2, 6, 100) holds 6 keys per example against 4 queries.");
}

void save_results(lesson::Lesson& lesson, nn::MultiHeadAttention& attention, const Inputs& in, const Tensor& out,
                  const Layout& l, const Weights& w) {
  lesson.result("queries", in.queries);  // the inputs and the weights: the output follows from them
  lesson.result("keys", in.keys);        // (keys = values)
  lesson.result("W_q", attention.W_q->weight);
  lesson.result("W_k", attention.W_k->weight);
  lesson.result("W_v", attention.W_v->weight);
  lesson.result("W_o", attention.W_o->weight);
  lesson.result("output", out);
  lesson.result("output_shape", out.shape());
  lesson.result("projected_shape", l.projected.shape());
  lesson.result("transposed_shape", l.heads.shape());
  lesson.result("round_trip_shape", l.back.shape());
  lesson.result("layout_max_diff", l.layout_diff);
  lesson.result("round_trip_max_diff", l.round_trip);
  lesson.result("valid_lens", std::vector<double>{static_cast<double>(kLens[0]), static_cast<double>(kLens[1])});
  lesson.result("weights", w.weights);
  lesson.result("max_weight_on_padding", w.largest_masked);
  lesson.result("max_row_sum_error", w.worst_row_sum);
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 9);
  lesson.start();
  what_you_will_see(lesson);
  Generator gen(lesson.seed());
  nn::MultiHeadAttention attention(H, h, 0.5f, /*bias=*/false, gen);
  attention.eval();  // dropout 0.5 is active only in training: d2l's attention.eval()
  // d2l feeds tensors of ones; random ones here, so that the heads differ and the pictures say something.
  const Inputs in{randn({B, Q, H}, gen), randn({B, K, H}, gen), int_tensor(kLens)};

  const Tensor out = one_layer(lesson, attention, in);
  const Layout layout = heads_in_batch(lesson, attention, in);
  const Weights weights = each_head(lesson, attention);
  the_score(lesson);
  save_results(lesson, attention, in, out, layout, weights);

  lesson.print(
      "\nWhat to remember: h heads are h attentions on learned projections of the same inputs, each of\n"
      "H/h features; the heads ride in the batch dim, so one bmm computes them all; each head's weights\n"
      "are their own softmax over the same valid keys, and W_o mixes the concatenated heads back to H.\n");
  return lesson.finish(fmt::format(
      "d2l's multi-head attention: queries {}, keys and values {} -> output {}\n"
      "through {} heads of {} features, moved into the batch dim by transpose_qkv {} and back by\n"
      "transpose_output (largest round-trip difference {:.1e}). Every head's rows sum to 1 (largest error {:.1e})\n"
      "and the padded keys get weight {:.1e} at most.",
      in.queries.shape(), in.keys.shape(), out.shape(), h, H / h, layout.heads.shape(), layout.round_trip,
      weights.worst_row_sum, weights.largest_masked));
}
