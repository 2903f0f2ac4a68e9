// A wrong solution of exercise 03, kept for the tests: the H features summed instead of weighted by
// w_v.
// grader says: the features summed instead of weighted by w_v
#include "03_additive_score.hpp"

namespace qkv::exercises {

Tensor additive_score(const Tensor& queries, const Tensor& keys, const Tensor& W_q, const Tensor& W_k,
                      const Tensor& w_v) {
  Tensor q = queries.matmul(W_q.transpose(0, 1)), k = keys.matmul(W_k.transpose(0, 1));
  (void)w_v;
  return (q.unsqueeze(2) + k.unsqueeze(1)).tanh().sum(-1);  // wrong: no w_v
}

}  // namespace qkv::exercises
