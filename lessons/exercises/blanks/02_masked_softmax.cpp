// Exercise 02 · masked softmax with 1-D and 2-D valid lengths
//
// Lesson 04 (lessons/04_scoring_functions.cpp); the notes: 001 打分函数,
// 屏蔽 softmax.
//
// A batch of sequences is padded to one length K, and the padding must get no
// attention. masked_softmax takes scores X (B, Q, K) and keeps, for example b
// (and with 2-D lengths for its query row q), only the first valid_lens[b]
// (or valid_lens[b, q]) keys:
//   X'[b, q, k] = X[b, q, k]   if k < valid length,   -1e6 otherwise
//   weights     = softmax(X', over the keys)           each row sums to 1 over its valid keys
// With valid_lens undefined it is a plain softmax. (qkv has this op, as
// qkv::masked_softmax: write your own from the simpler ops, without it.)
//
// Write masked_softmax below:
//   X (B, Q, K), valid_lens (B) or (B, Q) or undefined -> weights (B, Q, K)
//
// Not allowed: qkv::masked_softmax, qkv::nn's layers (the grader checks what your
// file calls and the ops that made your result).
//
// Grade it: ./qkv.sh exercise 2        a hint: ./qkv.sh exercise 2 --hint
#include "02_masked_softmax.hpp"

namespace qkv::exercises {

Tensor masked_softmax(const Tensor& X, const IntTensor& valid_lens) {
  not_written_yet("masked_softmax", X, valid_lens);
}

}  // namespace qkv::exercises
