// Dropout's mask and output in one pass, with the random numbers drawn as
// qkv::Generator draws them (splitmix64, src/core/generator.cpp), so the same
// generator state gives the same mask bit for bit:
//   sᵢ = state + (i + 1)·γ,  zᵢ = mix(sᵢ)    draw i + 1 of splitmix64 after `state`
//   uᵢ = (zᵢ >> 40) · 2⁻²⁴                   Generator::uniform(), in [0, 1)
//   maskᵢ = uᵢ ≥ p ? scale : 0               keep with probability 1 - p
//   yᵢ = xᵢ · maskᵢ
// The caller then moves its generator past the n draws (Generator::skip).
#pragma once
#include <cstdint>

namespace qkv::kernels {

void dropout(int64_t n, uint64_t state, float p, float scale, const float* x, float* y, float* mask);

}  // namespace qkv::kernels
