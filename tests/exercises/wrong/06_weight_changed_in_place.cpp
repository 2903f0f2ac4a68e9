// Exercise 06, a parameter changed in place: the steps are right, but the
// forward then rescales the value layer's weight through data(), which
// every later call (and the learner's next batch) would see.
// grader says: you changed an input in place (SelfAttention.ValueW.weight)
#include "06_self_attention.hpp"

namespace qkv::exercises {

SelfAttentionSteps SelfAttention::forward(const Tensor& sents) const {
  Tensor Q = (*QueryW)(sents), K = (*KeyW)(sents), V = (*ValueW)(sents);  // (B, T, D) each
  Tensor scores = Q.matmul(K.transpose(1, 2));                            // (B, T, D) x (B, D, T) -> (B, T, T)
  Tensor probs = scores.softmax(-1);                                      // (B, T, T), rows sum to 1
  Tensor output = probs.matmul(V);                                        // (B, T, T) x (B, T, D) -> (B, T, D)
  float* w = ValueW->weight.data();                                       // wrong: the module's own weight
  for (int64_t i = 0; i < ValueW->weight.numel(); ++i) w[i] *= 0.5f;
  return {scores, probs, output};
}

}  // namespace qkv::exercises
