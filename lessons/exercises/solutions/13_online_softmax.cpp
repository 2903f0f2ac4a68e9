// Exercise 13, a reference solution: the online softmax of a row, one pass over its blocks.
#include <algorithm>
#include <cmath>
#include <limits>

#include "13_online_softmax.hpp"

namespace qkv::exercises {

OnlineSoftmax online_softmax(std::span<const float> x, int64_t block) {
  const size_t n = x.size(), step = static_cast<size_t>(block);
  OnlineSoftmax r;
  r.y.resize(n);
  float m = -std::numeric_limits<float>::infinity();  // the maximum of the values read so far
  float l = 0.0f;                                     // Σ exp(xⱼ - m) over them
  for (size_t s = 0; s < n; s += step) {
    const size_t e = std::min(s + step, n);  // the block x[s:e]; the last one may be shorter
    float m_new = m;
    for (size_t j = s; j < e; ++j) m_new = std::max(m_new, x[j]);
    const float rescale = std::exp(m - m_new);  // exp(xⱼ - m) · exp(m - m_new) = exp(xⱼ - m_new); exp(-∞) = 0
    l *= rescale;
    for (size_t j = 0; j < s; ++j) r.y[j] *= rescale;  // what was written before, relative to m_new
    for (size_t j = s; j < e; ++j) {
      r.y[j] = std::exp(x[j] - m_new);
      l += r.y[j];
    }
    m = m_new;
    r.m.push_back(m);
    r.l.push_back(l);
  }
  for (float& yj : r.y) yj /= l;  // l ≥ 1: the maximum's own term is exp(0)
  return r;
}

}  // namespace qkv::exercises
