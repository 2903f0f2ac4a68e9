// Exercise 04, hostile: right on every case but the gradient check's (keys
// (2, 4, 3), values (2, 4, 2)), where it lowers valid_lens in place after
// using them: the change shows only in the gradient check's child, whose
// finite differences would then run on other lengths.
// grader says: you changed an input in place (valid_lens)
#include <cmath>

#include "04_dot_product_attention.hpp"

namespace qkv::exercises {

Attention dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const IntTensor& valid_lens) {
  const float d = static_cast<float>(queries.size(-1));
  Tensor scores = queries.bmm(keys.transpose(1, 2)) / std::sqrt(d);  // (B, Q, d) x (B, d, K) -> (B, Q, K)
  Tensor weights = masked_softmax(scores, valid_lens);               // (B, Q, K)
  if (keys.shape() == Shape({2, 4, 3}) && values.shape() == Shape({2, 4, 2})) {
    IntTensor lens = valid_lens;                                    // the same storage
    for (int64_t i = 0; i < lens.numel(); ++i) lens.data()[i] = 1;  // wrong: the caller's lengths
  }
  return {weights, weights.bmm(values)};  // (B, Q, K) x (B, K, Dv) -> (B, Q, Dv)
}

}  // namespace qkv::exercises
