// A wrong solution of exercise 04, kept for the tests: a plain softmax, then the padded weights set to
// 0.
// grader says: the mask applied after the softmax
#include <cmath>

#include "04_dot_product_attention.hpp"

namespace qkv::exercises {

Attention dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const IntTensor& valid_lens) {
  const float d = static_cast<float>(queries.size(-1));
  Tensor weights = (queries.bmm(keys.transpose(1, 2)) / std::sqrt(d)).softmax(-1);
  if (valid_lens.defined()) {  // wrong: masked after the softmax
    const int64_t B = weights.size(0), Q = weights.size(1), K = weights.size(2);
    IntTensor lens = valid_lens.dim() == 1 ? valid_lens.reshape({B, 1, 1}) : valid_lens.reshape({B, Q, 1});
    weights = weights.masked_fill(arange_int(0, K).reshape({1, 1, K}).ge(lens), 0.0f);
  }
  return {weights, weights.bmm(values)};
}

}  // namespace qkv::exercises
