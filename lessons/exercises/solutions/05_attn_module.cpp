// Exercise 05, a reference solution: the Attn module's forward, 000 §3.3's three steps.
#include "05_attn_module.hpp"

namespace qkv::exercises {

AttnSteps Attn::forward(const Tensor& Q, const Tensor& K, const Tensor& V) const {
  Tensor q = Q.squeeze(0), k = K.squeeze(0);             // (1, 1, D) -> (1, D): Q[0], K[0]
  Tensor weights = (*attn)(cat({q, k}, 1)).softmax(1);   // step 1: (1, Dq+Dk) -> (1, V1)
  Tensor applied = weights.unsqueeze(0).bmm(V);          // (1, 1, V1) x (1, V1, Dv) -> (1, 1, Dv)
  Tensor joined = cat({q, applied.squeeze(0)}, 1);       // step 2: (1, Dq) ++ (1, Dv) -> (1, Dq+Dv)
  Tensor output = (*attn_combine)(joined).unsqueeze(0);  // step 3: -> (1, 1, output_size)
  return {weights, applied, output};
}

}  // namespace qkv::exercises
