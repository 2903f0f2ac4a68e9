// A wrong solution of exercise 05, kept for the tests: step 2 joins K[0], not Q[0], with step 1's
// result.
// grader says: step 2 joins K instead of Q
#include "05_attn_module.hpp"

namespace qkv::exercises {

AttnSteps Attn::forward(const Tensor& Q, const Tensor& K, const Tensor& V) const {
  Tensor q = Q.squeeze(0), k = K.squeeze(0);
  Tensor weights = (*attn)(cat({q, k}, 1)).softmax(1);
  Tensor applied = weights.unsqueeze(0).bmm(V);
  Tensor joined = cat({k, applied.squeeze(0)}, 1);  // wrong: K
  return {weights, applied, (*attn_combine)(joined).unsqueeze(0)};
}

}  // namespace qkv::exercises
