// A wrong solution of exercise 13, kept for the tests: the running maximum starts at 0, so a block of
// negative values is never shifted to its own maximum (and exp underflows for values far below 0).
// grader says: FAILED at case 1 (the maximum grows and dips from block to block): step m: wrong values
// grader says: This is a known mistake: the maximum started at 0.
#include <algorithm>
#include <cmath>

#include "13_online_softmax.hpp"

namespace qkv::exercises {

OnlineSoftmax online_softmax(std::span<const float> x, int64_t block) {
  const size_t n = x.size(), step = static_cast<size_t>(block);
  OnlineSoftmax r;
  r.y.resize(n);
  float m = 0.0f, l = 0.0f;  // wrong: m starts at 0, not -∞
  for (size_t s = 0; s < n; s += step) {
    const size_t e = std::min(s + step, n);
    float m_new = m;
    for (size_t j = s; j < e; ++j) m_new = std::max(m_new, x[j]);
    const float rescale = std::exp(m - m_new);
    l *= rescale;
    for (size_t j = 0; j < s; ++j) r.y[j] *= rescale;
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
