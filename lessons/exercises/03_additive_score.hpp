// Exercise 03 · the additive attention score: the declaration the learner's
// file, its solution and the grader share.
#pragma once
#include "exercise.hpp"

namespace qkv::exercises {

// queries (B, Q, Dq), keys (B, K, Dk), W_q (H, Dq), W_k (H, Dk), w_v (1, H)
//   -> scores (B, Q, K): score[b, i, j] = w_vᵀ tanh(W_q q_bi + W_k k_bj)
Tensor additive_score(const Tensor& queries, const Tensor& keys, const Tensor& W_q, const Tensor& W_k,
                      const Tensor& w_v);

}  // namespace qkv::exercises
