// A wrong solution of exercise 03, kept for the tests: the sum of the projections not squashed by
// tanh.
// grader says: no tanh
#include "03_additive_score.hpp"

namespace qkv::exercises {

Tensor additive_score(const Tensor& queries, const Tensor& keys, const Tensor& W_q, const Tensor& W_k,
                      const Tensor& w_v) {
  Tensor q = queries.matmul(W_q.transpose(0, 1)), k = keys.matmul(W_k.transpose(0, 1));
  Tensor features = q.unsqueeze(2) + k.unsqueeze(1);  // wrong: no tanh
  return features.matmul(w_v.transpose(0, 1)).squeeze(-1);
}

}  // namespace qkv::exercises
