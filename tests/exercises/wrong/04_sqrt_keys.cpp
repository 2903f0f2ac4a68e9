// A wrong solution of exercise 04, kept for the tests: the scores divided by
// √K, the number of keys, instead of √d. The first case has K = d; the second
// is the first where they differ, and is named for it.
// grader says: divided by √K (the number of keys) instead of √d
// grader says: FAILED at case 2 (the scale √d: more keys than features)
#include <cmath>

#include "04_dot_product_attention.hpp"

namespace qkv::exercises {

Attention dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const IntTensor& valid_lens) {
  const float K = static_cast<float>(keys.size(1));  // wrong: d is queries.size(-1)
  Tensor scores = queries.bmm(keys.transpose(1, 2)) / std::sqrt(K);
  Tensor weights = qkv::masked_softmax(scores, valid_lens);
  return {weights, weights.bmm(values)};
}

}  // namespace qkv::exercises
