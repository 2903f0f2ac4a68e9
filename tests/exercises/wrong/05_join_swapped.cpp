// A wrong solution of exercise 05, kept for the tests: step 2 joins step 1's result first, then Q.
// grader says: step 2 joins in the wrong order
#include "05_attn_module.hpp"

namespace qkv::exercises {

AttnSteps Attn::forward(const Tensor& Q, const Tensor& K, const Tensor& V) const {
  Tensor q = Q.squeeze(0), k = K.squeeze(0);
  Tensor weights = (*attn)(cat({q, k}, 1)).softmax(1);
  Tensor applied = weights.unsqueeze(0).bmm(V);
  Tensor joined = cat({applied.squeeze(0), q}, 1);  // wrong: Q second
  return {weights, applied, (*attn_combine)(joined).unsqueeze(0)};
}

}  // namespace qkv::exercises
