// Exercise 03 · the additive attention score, batched
//
// Lesson 04 (lessons/04_scoring_functions.cpp); the notes: 001 打分函数,
// 加性注意力.
//
// When queries and keys have different sizes, additive attention maps both
// into H hidden features, adds them, squashes the sum with tanh and reduces
// it to one number with a learned vector w_v:
//   score(q, k) = w_vᵀ tanh(W_q q + W_k k)        W_q (H, Dq), W_k (H, Dk), w_v (1, H)
// Batched, every query of an example meets every key of it:
//   W_q q  for all queries: (B, Q, Dq) -> (B, Q, H)   (a Linear's weight is (out, in): x W_qᵀ)
//   W_k k  for all keys:    (B, K, Dk) -> (B, K, H)
//   their sums, by broadcasting: (B, Q, 1, H) + (B, 1, K, H) -> (B, Q, K, H)
//   tanh, then w_v:         (B, Q, K, H) -> (B, Q, K)
// (qkv's nn::AdditiveAttention computes these scores inside its forward.)
//
// Write additive_score below:
//   queries (B, Q, Dq), keys (B, K, Dk), W_q (H, Dq), W_k (H, Dk), w_v (1, H) -> scores (B, Q, K)
//
// Not allowed: nn::AdditiveAttention (the grader checks what your file calls).
//
// Grade it: ./qkv.sh exercise 3        a hint: ./qkv.sh exercise 3 --hint
#include "03_additive_score.hpp"

namespace qkv::exercises {

Tensor additive_score(const Tensor& queries, const Tensor& keys, const Tensor& W_q, const Tensor& W_k,
                      const Tensor& w_v) {
  not_written_yet("additive_score", queries, keys, W_q, W_k, w_v);
}

}  // namespace qkv::exercises
