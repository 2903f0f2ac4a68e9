// A wrong solution of exercise 13, kept for the tests: m and l right, but when the maximum grows the
// outputs written before are multiplied by exp(m' - m) instead of exp(m - m').
// grader says: FAILED at case 1 (the maximum grows and dips from block to block): step y: wrong values
// grader says: This is a known mistake: the outputs rescaled by exp(m' - m), the inverse factor.
#include <algorithm>
#include <cmath>
#include <limits>

#include "13_online_softmax.hpp"

namespace qkv::exercises {

OnlineSoftmax online_softmax(std::span<const float> x, int64_t block) {
  const size_t n = x.size(), step = static_cast<size_t>(block);
  OnlineSoftmax r;
  r.y.resize(n);
  float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
  for (size_t s = 0; s < n; s += step) {
    const size_t e = std::min(s + step, n);
    float m_new = m;
    for (size_t j = s; j < e; ++j) m_new = std::max(m_new, x[j]);
    l *= std::exp(m - m_new);
    for (size_t j = 0; j < s; ++j) r.y[j] *= std::exp(m_new - m);  // wrong: the inverse factor
    for (size_t j = s; j < e; ++j) {
      r.y[j] = std::exp(x[j] - m_new);
      l += r.y[j];
    }
    m = m_new;
    r.m.push_back(m);
    r.l.push_back(l);
  }
  for (float& yj : r.y) yj /= l;
  return r;
}

}  // namespace qkv::exercises
