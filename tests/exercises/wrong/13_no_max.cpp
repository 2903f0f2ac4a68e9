// A wrong solution of exercise 13, kept for the tests: the running maximum is kept but never
// subtracted: l = Σ exp(xⱼ), right in exact arithmetic for y, but not the l asked for, and exp
// overflows float for values above 88.
// grader says: FAILED at case 1 (the maximum grows and dips from block to block): step l: wrong values
// grader says: This is a known mistake: exp(xⱼ) summed without subtracting the maximum.
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
    // wrong: nothing is rescaled, since nothing was shifted
    for (size_t j = s; j < e; ++j) {
      r.y[j] = std::exp(x[j]);  // wrong: not x[j] - m_new
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
