// Softmax and log-softmax along the middle axis of an (outer, n, inner) view
// (see reduce.hpp for how any dim becomes that view).
//
//   softmax(x)ₖ     = exp(xₖ - m) / Σⱼ exp(xⱼ - m)
//   log_softmax(x)ₖ = (xₖ - m) - log Σⱼ exp(xⱼ - m)
//
// with m = maxⱼ xⱼ. NOTE: subtracting the max changes nothing mathematically
// and keeps every exp ≤ 1, so logits of ±1e4 stay finite.
// inner == 1 (softmax over the last dim: every attention row) is the SIMD path.
// x and y may be the same array (in place).
#pragma once
#include <cstdint>

namespace qkv::kernels {

void softmax(int64_t outer, int64_t n, int64_t inner, const float* x, float* y);
void softmax_reference(int64_t outer, int64_t n, int64_t inner, const float* x, float* y);

void log_softmax(int64_t outer, int64_t n, int64_t inner, const float* x, float* y);
void log_softmax_reference(int64_t outer, int64_t n, int64_t inner, const float* x, float* y);

}  // namespace qkv::kernels
