// Exercise 06 · single-head self-attention (document 002)
//
// Lesson 07 (lessons/07_self_attention.cpp); the notes: 002 Attention核心思想.
//
// Self-attention: the queries, keys and values all come from the same
// sentences X (B, T, D), each through its own Linear(D, D):
//   Q = QueryW(X),  K = KeyW(X),  V = ValueW(X)          (B, T, D) each
//   scores = Q Kᵀ                                         (B, T, D) x (B, D, T) -> (B, T, T)
//   probs  = softmax(scores) over each query's row        (B, T, T), every row sums to 1
//   output = probs V                                      (B, T, T) x (B, T, D) -> (B, T, D)
// Row i of probs says how much word i attends to every word of its sentence.
// The notes do not scale the scores by 1/√D; neither does this exercise.
// The module (its three Linear layers) is in 06_self_attention.hpp; you write its forward.
//
// Write SelfAttention::forward below:
//   sents (B, T, D) -> scores (B, T, T), probs (B, T, T), output (B, T, D)
//
// Not allowed: nn::DotProductAttention, nn::MultiHeadAttention (the grader checks
// what your file calls).
//
// Grade it: ./qkv.sh exercise 6        a hint: ./qkv.sh exercise 6 --hint
#include "06_self_attention.hpp"

namespace qkv::exercises {

SelfAttentionSteps SelfAttention::forward(const Tensor& sents) const {
  not_written_yet("SelfAttention::forward", sents);
}

}  // namespace qkv::exercises
