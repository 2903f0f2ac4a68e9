// A wrong solution of exercise 03, kept for the tests: the queries along dim 2 and the keys along dim
// 1, so the scores come out (B, K, Q).
// grader says: wrong shape at step scores: yours is (2, 5, 3), expected (2, 3, 5)
// grader says: queries and keys swapped in the broadcast
#include "03_additive_score.hpp"

namespace qkv::exercises {

Tensor additive_score(const Tensor& queries, const Tensor& keys, const Tensor& W_q, const Tensor& W_k,
                      const Tensor& w_v) {
  Tensor q = queries.matmul(W_q.transpose(0, 1)), k = keys.matmul(W_k.transpose(0, 1));
  Tensor features = (q.unsqueeze(1) + k.unsqueeze(2)).tanh();  // wrong: (B, K, Q, H)
  return features.matmul(w_v.transpose(0, 1)).squeeze(-1);
}

}  // namespace qkv::exercises
