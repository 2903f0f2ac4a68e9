// Exercise 04, a reference solution: scaled dot-product attention with a mask.
#include "04_dot_product_attention.hpp"

#include <cmath>

namespace qkv::exercises {

Attention dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const IntTensor& valid_lens) {
  const float d = static_cast<float>(queries.size(-1));
  Tensor scores = queries.bmm(keys.transpose(1, 2)) / std::sqrt(d);  // (B, Q, d) x (B, d, K) -> (B, Q, K)
  Tensor weights = masked_softmax(scores, valid_lens);               // (B, Q, K), padded keys 0
  return {weights, weights.bmm(values)};                             // (B, Q, K) x (B, K, Dv) -> (B, Q, Dv)
}

}  // namespace qkv::exercises
