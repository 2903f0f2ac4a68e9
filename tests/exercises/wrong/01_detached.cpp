// A wrong solution of exercise 01, kept for the tests: right values, computed outside the graph
// (through to_vector), so it has no gradient.
// grader says: your output has no gradient
#include <cmath>
#include <vector>

#include "01_nadaraya_watson.hpp"

namespace qkv::exercises {

NadarayaWatson nadaraya_watson(const Tensor& queries, const Tensor& keys, const Tensor& values) {
  std::vector<float> q = queries.to_vector(), k = keys.to_vector(), v = values.to_vector();
  const int64_t Q = queries.size(0), K = keys.size(0);
  std::vector<float> w(static_cast<size_t>(Q * K)), f(static_cast<size_t>(Q));
  for (size_t i = 0; i < q.size(); ++i) {
    float max = -INFINITY, sum = 0;
    for (size_t j = 0; j < k.size(); ++j) max = std::max(max, -(q[i] - k[j]) * (q[i] - k[j]) / 2);
    for (size_t j = 0; j < k.size(); ++j)
      sum += w[i * k.size() + j] = std::exp(-(q[i] - k[j]) * (q[i] - k[j]) / 2 - max);
    for (size_t j = 0; j < k.size(); ++j) f[i] += (w[i * k.size() + j] /= sum) * v[j];
  }
  return {tensor(w, {Q, K}), tensor(f)};
}

}  // namespace qkv::exercises
