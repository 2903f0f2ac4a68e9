// Exercise 02 · masked softmax: the declaration the learner's file, its
// solution and the grader share.
#pragma once
#include "exercise.hpp"

namespace qkv::exercises {

// X (B, Q, K) scores, valid_lens (B) or (B, Q) or undefined -> weights (B, Q, K)
Tensor masked_softmax(const Tensor& X, const IntTensor& valid_lens);

}  // namespace qkv::exercises
