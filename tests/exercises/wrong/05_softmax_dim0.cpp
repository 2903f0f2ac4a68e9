// A wrong solution of exercise 05, kept for the tests: the softmax over dim 0 of the (1, V1) scores:
// every weight 1.
// grader says: softmax over the wrong dimension
#include "05_attn_module.hpp"

namespace qkv::exercises {

AttnSteps Attn::forward(const Tensor& Q, const Tensor& K, const Tensor& V) const {
  Tensor q = Q.squeeze(0), k = K.squeeze(0);
  Tensor weights = (*attn)(cat({q, k}, 1)).softmax(0);  // wrong: dim 0
  Tensor applied = weights.unsqueeze(0).bmm(V);
  Tensor joined = cat({q, applied.squeeze(0)}, 1);
  return {weights, applied, (*attn_combine)(joined).unsqueeze(0)};
}

}  // namespace qkv::exercises
