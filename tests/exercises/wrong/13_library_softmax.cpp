// A hostile submission of exercise 13, kept for the tests: m and l computed on each prefix, and y
// from qkv's softmax of the whole row, which the exercise asks the learner to compute online.
// grader says: rule broken: your file calls qkv::softmax(
#include <algorithm>
#include <cmath>

#include "13_online_softmax.hpp"

namespace qkv::exercises {

OnlineSoftmax online_softmax(std::span<const float> x, int64_t block) {
  const int64_t n = static_cast<int64_t>(x.size());
  const Tensor row = tensor(std::vector<float>(x.begin(), x.end()));
  OnlineSoftmax r;
  for (int64_t e = std::min(block, n);; e = std::min(e + block, n)) {
    const Tensor seen = row.slice(0, 0, e);
    const float m = seen.max().item();
    r.m.push_back(m);
    r.l.push_back((seen - m).exp().sum().item());
    if (e == n) break;
  }
  r.y = qkv::softmax(row, 0).to_vector();
  return r;
}

}  // namespace qkv::exercises
