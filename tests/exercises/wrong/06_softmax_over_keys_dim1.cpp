// A wrong solution of exercise 06, kept for the tests: the softmax over dim 1, down the columns.
// grader says: softmax over the wrong dimension
#include "06_self_attention.hpp"

namespace qkv::exercises {

SelfAttentionSteps SelfAttention::forward(const Tensor& sents) const {
  Tensor Q = (*QueryW)(sents), K = (*KeyW)(sents), V = (*ValueW)(sents);
  Tensor scores = Q.matmul(K.transpose(1, 2));
  Tensor probs = scores.softmax(1);  // wrong: dim 1
  return {scores, probs, probs.matmul(V)};
}

}  // namespace qkv::exercises
