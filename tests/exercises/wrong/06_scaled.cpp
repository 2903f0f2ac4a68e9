// A wrong solution of exercise 06, kept for the tests: the scores scaled by 1/√D, which the notes'
// SelfAttention does not do.
// grader says: scaled by 1/√D
#include <cmath>

#include "06_self_attention.hpp"

namespace qkv::exercises {

SelfAttentionSteps SelfAttention::forward(const Tensor& sents) const {
  Tensor Q = (*QueryW)(sents), K = (*KeyW)(sents), V = (*ValueW)(sents);
  Tensor scores = Q.matmul(K.transpose(1, 2)) / std::sqrt(static_cast<float>(sents.size(-1)));  // wrong
  Tensor probs = scores.softmax(-1);
  return {scores, probs, probs.matmul(V)};
}

}  // namespace qkv::exercises
