// A wrong solution of exercise 04, kept for the tests: Q times K, not Kᵀ. It only runs when K = d.
// grader says: K not transposed
#include <cmath>

#include "04_dot_product_attention.hpp"

namespace qkv::exercises {

Attention dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const IntTensor& valid_lens) {
  const float d = static_cast<float>(queries.size(-1));
  Tensor scores = queries.bmm(keys) / std::sqrt(d);  // wrong: keys not transposed
  Tensor weights = qkv::masked_softmax(scores, valid_lens);
  return {weights, weights.bmm(values)};
}

}  // namespace qkv::exercises
