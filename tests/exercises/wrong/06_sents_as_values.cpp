// A wrong solution of exercise 06, kept for the tests: the probabilities applied to the sentences, not
// to V.
// grader says: the sentences used as V
#include "06_self_attention.hpp"

namespace qkv::exercises {

SelfAttentionSteps SelfAttention::forward(const Tensor& sents) const {
  Tensor Q = (*QueryW)(sents), K = (*KeyW)(sents), V = (*ValueW)(sents);
  Tensor scores = Q.matmul(K.transpose(1, 2));
  Tensor probs = scores.softmax(-1);
  (void)V;
  return {scores, probs, probs.matmul(sents)};  // wrong: V unused
}

}  // namespace qkv::exercises
