// A wrong solution of exercise 06, kept for the tests: Q times K, not Kᵀ (it has a shape only when T =
// D).
// grader says: K not transposed
#include "06_self_attention.hpp"

namespace qkv::exercises {

SelfAttentionSteps SelfAttention::forward(const Tensor& sents) const {
  Tensor Q = (*QueryW)(sents), K = (*KeyW)(sents), V = (*ValueW)(sents);
  Tensor scores = Q.matmul(K);  // wrong: K not transposed
  Tensor probs = scores.softmax(-1);
  return {scores, probs, probs.matmul(V)};
}

}  // namespace qkv::exercises
