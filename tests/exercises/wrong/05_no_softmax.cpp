// A wrong solution of exercise 05, kept for the tests: rule 1's scores applied
// to V as they are, without the softmax that makes them weights.
// grader says: no softmax
#include "05_attn_module.hpp"

namespace qkv::exercises {

AttnSteps Attn::forward(const Tensor& Q, const Tensor& K, const Tensor& V) const {
  Tensor q = Q.squeeze(0), k = K.squeeze(0);
  Tensor weights = (*attn)(cat({q, k}, 1));  // wrong: no softmax(…, 1)
  Tensor applied = weights.unsqueeze(0).bmm(V);
  Tensor joined = cat({q, applied.squeeze(0)}, 1);
  return {weights, applied, (*attn_combine)(joined).unsqueeze(0)};
}

}  // namespace qkv::exercises
