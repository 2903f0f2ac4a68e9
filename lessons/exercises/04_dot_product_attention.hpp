// Exercise 04 · scaled dot-product attention with a mask: the declaration the
// learner's file, its solution and the grader share.
#pragma once
#include "exercise.hpp"

namespace qkv::exercises {

struct Attention {
  Tensor weights;  // (B, Q, K): each query's weights over the keys
  Tensor output;   // (B, Q, Dv): each query's weighted sum of the values
};

// queries (B, Q, d), keys (B, K, d), values (B, K, Dv), valid_lens (B) or (B, Q) or undefined
//   -> weights (B, Q, K), output (B, Q, Dv)
Attention dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const IntTensor& valid_lens);

}  // namespace qkv::exercises
