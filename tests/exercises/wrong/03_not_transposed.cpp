// A wrong solution of exercise 03, kept for the tests: W_q and W_k used as (in, out) matrices; it only
// runs when Dq = Dk = H.
// grader says: W_q and W_k not transposed
#include "03_additive_score.hpp"

namespace qkv::exercises {

Tensor additive_score(const Tensor& queries, const Tensor& keys, const Tensor& W_q, const Tensor& W_k,
                      const Tensor& w_v) {
  Tensor q = queries.matmul(W_q), k = keys.matmul(W_k);  // wrong: W not transposed
  Tensor features = (q.unsqueeze(2) + k.unsqueeze(1)).tanh();
  return features.matmul(w_v.transpose(0, 1)).squeeze(-1);
}

}  // namespace qkv::exercises
