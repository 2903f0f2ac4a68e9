// A wrong solution of exercise 04, kept for the tests: valid_lens never used
// (the compiler warns of the unused parameter: ./qkv.sh exercise shows it).
// grader says: the mask ignored
// grader says: FAILED at case 1 (K = d: the keys transposed, the mask, the softmax's dim)
#include <cmath>

#include "04_dot_product_attention.hpp"

namespace qkv::exercises {

Attention dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const IntTensor& valid_lens) {
  const float d = static_cast<float>(queries.size(-1));
  Tensor scores = queries.bmm(keys.transpose(1, 2)) / std::sqrt(d);
  Tensor weights = scores.softmax(-1);  // wrong: valid_lens is never used
  return {weights, weights.bmm(values)};
}

}  // namespace qkv::exercises
