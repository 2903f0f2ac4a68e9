// Dropout's mask and output (see dropout.hpp).
//
// Why a kernel: drawing one number at a time through Generator::uniform() is
// a function call and a dependent chain of state updates per element. But
// splitmix64's draws are independent given the state (draw i mixes
// state + i·γ), so a register of 64-bit lanes computes several at once.
//
// The keep test stays exact: uᵢ = kᵢ·2⁻²⁴ with kᵢ = zᵢ >> 40 an integer
// below 2²⁴, so uᵢ ≥ p exactly when kᵢ ≥ ⌈p·2²⁴⌉ (p·2²⁴ is exact in double).
#include "kernels/dropout.hpp"

#include <cmath>

#include "kernels/simd.hpp"

namespace qkv::kernels {

namespace {

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;  // as Generator::kGamma

// splitmix64's output function (Steele, Lea, Flood 2014), as Generator::next_u64.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

using batch_u64 = xsimd::batch<uint64_t>;
constexpr int64_t W64 = batch_u64::size;  // 64-bit lanes per register

batch_u64 mix(batch_u64 z) {
  z = (z ^ (z >> 30)) * batch_u64(0xbf58476d1ce4e5b9ULL);
  z = (z ^ (z >> 27)) * batch_u64(0x94d049bb133111ebULL);
  return z ^ (z >> 31);
}

// The smallest k with k·2⁻²⁴ ≥ p: element i is kept when (zᵢ >> 40) ≥ this.
uint64_t keep_threshold(float p) { return static_cast<uint64_t>(std::ceil(static_cast<double>(p) * 0x1.0p24)); }

}  // namespace

void dropout_reference(int64_t n, uint64_t state, float p, float scale, const float* x, float* y, float* mask) {
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t z = mix(state + static_cast<uint64_t>(i + 1) * kGamma);
    const float u = static_cast<float>(z >> 40) * 0x1.0p-24f;  // Generator::uniform()
    mask[i] = u >= p ? scale : 0.0f;
    y[i] = x[i] * mask[i];
  }
}

void dropout(int64_t n, uint64_t state, float p, float scale, const float* x, float* y, float* mask) {
  const uint64_t threshold = keep_threshold(p);
  // Lane l of the first register holds draw l + 1; each register moves W64 draws on.
  alignas(64) uint64_t first[W64];
  for (int64_t l = 0; l < W64; ++l) first[l] = state + static_cast<uint64_t>(l + 1) * kGamma;
  batch_u64 z = batch_u64::load_aligned(first);
  const batch_u64 step(static_cast<uint64_t>(W64) * kGamma);

  alignas(64) uint64_t k[W64];
  int64_t i = 0;
  for (; i + W64 <= n; i += W64, z += step) {
    (mix(z) >> 40).store_aligned(k);
    for (int64_t l = 0; l < W64; ++l) {
      mask[i + l] = k[l] >= threshold ? scale : 0.0f;
      y[i + l] = x[i + l] * mask[i + l];
    }
  }
  for (; i < n; ++i) {
    mask[i] = (mix(state + static_cast<uint64_t>(i + 1) * kGamma) >> 40) >= threshold ? scale : 0.0f;
    y[i] = x[i] * mask[i];
  }
}

}  // namespace qkv::kernels
