// Exercise 06, a reference solution: single-head self-attention (document 002).
#include "06_self_attention.hpp"

namespace qkv::exercises {

SelfAttentionSteps SelfAttention::forward(const Tensor& sents) const {
  Tensor Q = (*QueryW)(sents), K = (*KeyW)(sents), V = (*ValueW)(sents);  // (B, T, D) each
  Tensor scores = Q.matmul(K.transpose(1, 2));                            // (B, T, D) x (B, D, T) -> (B, T, T)
  Tensor probs = scores.softmax(-1);                                      // (B, T, T), rows sum to 1
  return {scores, probs, probs.matmul(V)};                                // (B, T, T) x (B, T, D) -> (B, T, D)
}

}  // namespace qkv::exercises
