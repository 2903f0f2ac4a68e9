// Exercise 03, a reference solution: the additive attention score, batched.
#include "03_additive_score.hpp"

namespace qkv::exercises {

Tensor additive_score(const Tensor& queries, const Tensor& keys, const Tensor& W_q, const Tensor& W_k,
                      const Tensor& w_v) {
  Tensor q = queries.matmul(W_q.transpose(0, 1));              // (B, Q, Dq) x (Dq, H) -> (B, Q, H)
  Tensor k = keys.matmul(W_k.transpose(0, 1));                 // (B, K, Dk) x (Dk, H) -> (B, K, H)
  Tensor features = (q.unsqueeze(2) + k.unsqueeze(1)).tanh();  // (B, Q, 1, H) + (B, 1, K, H) -> (B, Q, K, H)
  return features.matmul(w_v.transpose(0, 1)).squeeze(-1);     // (B, Q, K, H) x (H, 1) -> (B, Q, K)
}

}  // namespace qkv::exercises
