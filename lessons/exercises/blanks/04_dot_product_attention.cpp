// Exercise 04 · scaled dot-product attention with a mask
//
// Lesson 04 (lessons/04_scoring_functions.cpp); the notes: 001 打分函数,
// 缩放点积注意力 and 注意力的输出.
//
// When queries and keys have the same size d, the score of a query q and a
// key k is their dot product, scaled by 1/√d so that its variance stays near
// 1 whatever d is (for entries of mean 0 and variance 1, q·k has variance d):
//   scores  = Q Kᵀ / √d                                   (B, Q, d) x (B, d, K) -> (B, Q, K)
//   weights = masked_softmax(scores, valid_lens)          padded keys get no weight
//   output  = weights V                                   (B, Q, K) x (B, K, Dv) -> (B, Q, Dv)
// qkv::masked_softmax (or your own from exercise 02) does the masking.
//
// Write dot_product_attention below:
//   queries (B, Q, d), keys (B, K, d), values (B, K, Dv), valid_lens (B) or (B, Q) or undefined
//     -> weights (B, Q, K), output (B, Q, Dv)
//
// Not allowed: nn::DotProductAttention, nn::MultiHeadAttention (the grader checks
// what your file calls).
//
// Grade it: ./qkv.sh exercise 4        a hint: ./qkv.sh exercise 4 --hint
#include "04_dot_product_attention.hpp"

namespace qkv::exercises {

Attention dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const IntTensor& valid_lens) {
  not_written_yet("dot_product_attention", queries, keys, values, valid_lens);
}

}  // namespace qkv::exercises
