// Exercise 01 · Nadaraya–Watson weights and prediction: the declaration the
// learner's file, its solution and the grader share.
#pragma once
#include "exercise.hpp"

namespace qkv::exercises {

struct NadarayaWatson {
  Tensor weights;     // (Q, K): row i is query i's weights over the keys; each row sums to 1
  Tensor prediction;  // (Q): f(x) = Σᵢ α(x, xᵢ) yᵢ at each query
};

// queries (Q), keys (K), values (K) -> weights (Q, K), prediction (Q)
NadarayaWatson nadaraya_watson(const Tensor& queries, const Tensor& keys, const Tensor& values);

}  // namespace qkv::exercises
