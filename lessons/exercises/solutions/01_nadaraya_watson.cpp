// Exercise 01, a reference solution: Nadaraya–Watson weights and prediction.
#include "01_nadaraya_watson.hpp"

namespace qkv::exercises {

NadarayaWatson nadaraya_watson(const Tensor& queries, const Tensor& keys, const Tensor& values) {
  const int64_t Q = queries.size(0), K = keys.size(0);
  Tensor diff = queries.reshape({Q, 1}) - keys.reshape({1, K});  // (Q, 1) - (1, K) -> (Q, K): x - xᵢ
  Tensor weights = (-(diff * diff) / 2).softmax(-1);             // (Q, K): each row sums to 1
  Tensor prediction = weights.matmul(values);                    // (Q, K) x (K) -> (Q)
  return {weights, prediction};
}

}  // namespace qkv::exercises
