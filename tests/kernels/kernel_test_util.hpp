// What the kernel tests share: fixed-seed inputs and float's rounding unit.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

namespace qkv::kernels::test {

// A tiny fixed-seed generator (the LCG from Numerical Recipes), so every run
// sees the same inputs.
struct Lcg {
  uint32_t state;
  float uniform(float lo, float hi) {
    state = state * 1664525u + 1013904223u;
    return lo + (hi - lo) * static_cast<float>(state >> 8) / 16777216.0f;  // top 24 bits
  }
};

inline std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  Lcg rng{seed};
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kU = std::numeric_limits<float>::epsilon() / 2;  // unit roundoff, 2⁻²⁴

}  // namespace qkv::kernels::test
