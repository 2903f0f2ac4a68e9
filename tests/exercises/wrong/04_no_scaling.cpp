// A wrong solution of exercise 04, kept for the tests: the scores not divided by √d.
// grader says: no 1/√d
#include "04_dot_product_attention.hpp"

namespace qkv::exercises {

Attention dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const IntTensor& valid_lens) {
  Tensor scores = queries.bmm(keys.transpose(1, 2));  // wrong: no / √d
  Tensor weights = qkv::masked_softmax(scores, valid_lens);
  return {weights, weights.bmm(values)};
}

}  // namespace qkv::exercises
