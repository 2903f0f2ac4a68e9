// The exercises: one per idea of the course, in course order. Written here
// once: the grader, the `exercises` tool (list, hints, solutions, reset) and
// the course page read it.
//
// Exercise NN lives in lessons/exercises/<program>.cpp (the learner's file,
// shipped blank), declared in <program>.hpp; its reference solution is
// lessons/exercises/solutions/<program>.cpp, compiled only into the tests.
#pragma once
#include <array>
#include <optional>
#include <string_view>

namespace qkv::exercises {

struct ExerciseEntry {
  int number;                             // 1 … 13
  std::string_view program;               // "01_nadaraya_watson": the file's stem
  std::string_view title;                 // "Nadaraya–Watson weights and prediction"
  int lesson;                             // the lesson that teaches it (catalog.hpp's number)
  std::string_view sections;              // the notes' sections, as the lesson names them
  std::array<std::string_view, 3> hints;  // shown one at a time by --hint; an empty one ends the list
};

inline constexpr std::array<ExerciseEntry, 13> catalog = {{
    {1,
     "01_nadaraya_watson",
     "Nadaraya–Watson weights and prediction",
     2,
     "001 注意力汇聚 (2、非参数注意力汇聚)",
     {"Broadcast: queries.reshape({Q, 1}) - keys.reshape({1, K}) is the (Q, K) matrix of differences x - xᵢ.",
      "The weights are softmax(-(x - xᵢ)²/2) along the keys, dim 1: each row (one query) sums to 1.",
      "The prediction is a weighted sum of the values: weights (Q, K) matmul values (K) -> (Q)."}},
    {2,
     "02_masked_softmax",
     "masked softmax with 1-D and 2-D valid lengths",
     4,
     "001 打分函数 (屏蔽 softmax)",
     {"Build a (B, Q, K) mask of the keys that count: key index k < valid length. arange_int(0, K) compared with "
      "the valid lengths, broadcast; a 1-D length (B) is the same for every query row.",
      "Replace the scores of masked keys by -1e6 before the softmax (masked_fill or where), not after it: the "
      "weights of the valid keys must still sum to 1.",
      "The softmax runs over the keys, the last dim (-1). With no valid lengths (undefined), it is a plain "
      "softmax."}},
    {3,
     "03_additive_score",
     "the additive attention score, batched",
     4,
     "001 打分函数 (加性注意力)",
     {"Project first: queries.matmul(W_q.transpose(0, 1)) is (B, Q, H), keys.matmul(W_k.transpose(0, 1)) is "
      "(B, K, H). A Linear's weight is (out, in), so x·Wᵀ.",
      "Every query meets every key by broadcasting: (B, Q, 1, H) + (B, 1, K, H) -> (B, Q, K, H). unsqueeze the "
      "queries at dim 2 and the keys at dim 1.",
      "tanh, then w_v (1, H) reduces the last dim to one number: features.matmul(w_v.transpose(0, 1)) is "
      "(B, Q, K, 1); squeeze(-1) gives (B, Q, K)."}},
    {4,
     "04_dot_product_attention",
     "scaled dot-product attention with a mask",
     4,
     "001 打分函数 (缩放点积注意力)",
     {"The scores compare every query with every key: queries (B, Q, d) times keys transposed (B, d, K) -> "
      "(B, Q, K). Use bmm with keys.transpose(1, 2).",
      "Divide the scores by √d (d = queries.size(-1)) so their variance stays near 1, then masked_softmax with the "
      "valid lengths: the mask goes in before the softmax.",
      "The output is the weights (B, Q, K) times the values (B, K, Dv) -> (B, Q, Dv)."}},
    {5,
     "05_attn_module",
     "the Attn module of document 000, completed",
     6,
     "000 3.3.注意力机制的实现步骤, 4.注意力机制的代码分析",
     {"Step 1 (rule 1): cat Q[0] and K[0] along dim 1 -> (1, Dq+Dk); attn gives (1, V1) scores; softmax over dim "
      "1 makes them weights; bmm the weights (1, 1, V1) with V (1, V1, Dv) -> (1, 1, Dv).",
      "Step 2: rule 1 joined Q and K, so join Q[0] with step 1's result: cat({Q[0], applied[0]}, 1) -> (1, Dq+Dv). "
      "The order matters: Q first.",
      "Step 3: attn_combine maps (1, Dq+Dv) to (1, output_size); unsqueeze(0) gives (1, 1, output_size). Return the "
      "output and the weights (1, V1)."}},
    {6,
     "06_self_attention",
     "single-head self-attention (document 002)",
     7,
     "002 Attention核心思想",
     {"Q, K and V are the three Linear layers applied to the same sentences: (B, T, D) each.",
      "The scores are Q Kᵀ: Q.matmul(K.transpose(1, 2)) -> (B, T, T). The notes do not scale them by 1/√D.",
      "probs = softmax over the last dim (each query's row sums to 1); keep them in `probs`; the output is "
      "probs.matmul(V) -> (B, T, D)."}},
    {7,
     "07_bahdanau_step",
     "one step of the Bahdanau decoder",
     8,
     "003 带有注意力机制的seq2seq模型",
     {"The query is the decoder's last hidden state of the top layer: hidden (L, B, H) -> hidden[L-1] (B, H) -> "
      "unsqueeze(1) -> (B, 1, H). slice(hidden, 0, L - 1, L) then squeeze(0) picks it.",
      "The context is the attention's output with keys = values = the encoder outputs, masked by enc_valid_lens: "
      "attention(query, enc_outputs, enc_outputs, enc_valid_lens) -> (B, 1, H).",
      "The GRU's input joins the context and the embedded token, context first (d2l's order): cat({context, "
      "x.unsqueeze(1)}, -1) -> (B, 1, H + E)."}},
    {8,
     "08_bleu",
     "BLEU with its brevity penalty (d2l)",
     8,
     "003 带有注意力机制的seq2seq模型 (BLEU)",
     {"Split both strings on single spaces. The brevity penalty is exp(min(0, 1 - len_label / len_pred)).",
      "For n = 1 … min(k, len_pred): count the prediction's n-grams that occur in the label, each label n-gram "
      "used at most as often as it occurs there (a map of label n-gram counts, decremented on each match).",
      "Multiply the penalty by p_n^(1/2^n) for each n, p_n = matches / (len_pred - n + 1)."}},
    {9,
     "09_transpose_qkv",
     "transpose_qkv and transpose_output of multi-head attention",
     9,
     "004 2.1 引言 (多头注意力机制)",
     {"transpose_qkv: (B, T, H) -> reshape (B, T, h, H/h): the features of each position are split into h "
      "consecutive blocks, one per head.",
      "Then permute({0, 2, 1, 3}) -> (B, h, T, H/h) and reshape to (B·h, T, H/h): row b·h + i is head i of "
      "example b.",
      "transpose_output undoes it step by step: reshape (B, h, T, H/h), permute({0, 2, 1, 3}), reshape (B, T, H)."}},
    {10,
     "10_positional_encoding",
     "the sinusoidal positional encoding matrix",
     10,
     "001 自注意力 (位置编码矩阵); 004 2.2 (位置编码)",
     {"The matrix has no gradient to carry, so a plain loop is fine: a std::vector<float> of max_len · H values, "
      "row-major, then tensor(values, {max_len, H}).",
      "Columns come in pairs (2j, 2j + 1) sharing one frequency: angle = i / 10000^(2j/H), with 2j the even "
      "column's index, for both columns of the pair.",
      "Column 2j holds sin(angle), column 2j + 1 cos(angle); compute the angle in double (std::pow, std::sin) and "
      "round once to float."}},
    {11,
     "11_encoder_block",
     "a Transformer encoder block",
     11,
     "004 2.2 Transformer与Scaled Dot-Product Attention",
     {"Self-attention: queries, keys and values are all X, masked by valid_lens: (*blk.attention)(X, X, X, "
      "valid_lens) -> (B, T, H).",
      "Add & norm: Y = (*blk.addnorm1)(X, attention output): the residual X comes first, the sublayer's output "
      "second.",
      "The position-wise FFN reads Y, not X; the block returns (*blk.addnorm2)(Y, (*blk.ffn)(Y))."}},
    {12,
     "12_softmax_op",
     "softmax as a new op with its hand-written backward",
     13,
     "none: qkv's own, how a reader extends the framework",
     {"Forward on x.detach(): subtract each row's max (keepdim) before exp, so large logits do not overflow; divide "
      "by the row sums. Then record(out, \"MySoftmaxBackward\", {x}, /*saved=*/{out}, …) with the backward as a "
      "lambda.",
      "The Jacobian of softmax is diag(y) - y yᵀ, so dx = y ⊙ (dy - Σⱼ dyⱼ yⱼ): the sum runs over the last dim, "
      "keepdim, for each row.",
      "Save out (record keeps it detached) and read it back in the lambda as y = saved[0]; return {y * (dout - "
      "(dout * y).sum(-1, true))}."}},
    {13,
     "13_online_softmax",
     "the online softmax of a row read in blocks",
     14,
     "none: qkv's own, attention without its T × T weights: the online softmax",
     {"Start with m = -∞ (-std::numeric_limits<float>::infinity()) and l = 0. Block s covers x[s : min(s + block, "
      "n)]: loop while s < n, so a shorter last block is read too. m' = max(m, the block's largest value).",
      "l was summed relative to m: l = l · exp(m - m') + Σ over the block of exp(xⱼ - m'), then m = m'. Push m and "
      "l after every block; exp(m - m') ≤ 1, and exp(-∞) = 0 for the first block.",
      "Write each value's exp(xⱼ - m') into y as its block is read, after multiplying the y written before by the "
      "same exp(m - m') as l. Divide all of y by l once, after the last block."}},
}};

// The entry of exercise `number`, or nothing if there is none.
inline std::optional<ExerciseEntry> find_exercise(int number) {
  for (const ExerciseEntry& e : catalog)
    if (e.number == number) return e;
  return std::nullopt;
}

}  // namespace qkv::exercises
