// A wrong solution of exercise 13, kept for the tests: the loop reads whole blocks only, so when the
// block size does not divide n the last, shorter block is never read (nor any block, when block > n).
// grader says: FAILED at case 2 (a block size that does not divide n: the last block shorter): step m: shape
// grader says: This is a known mistake: the last, shorter block skipped.
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
  for (size_t s = 0; s + step <= n; s += step) {  // wrong: stops before a shorter last block
    const size_t e = s + step;
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
