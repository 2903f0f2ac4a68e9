// Layer normalisation of `rows` contiguous rows of D, forward and backward.
//   μ = mean(x)   σ² = mean((x - μ)²)   rstd = 1 / sqrt(σ² + eps)
//   x̂ = (x - μ) · rstd
//   y = x̂ ⊙ weight + bias                 (weight, bias of D; nullptr: 1 and 0)
// mean and rstd (rows) receive μ and rstd for the backward.
// NOTE: σ² is taken from the centred values (two passes), not as E[x²] - μ²,
// which in float32 cancels to garbage when |μ| ≫ σ (x ≈ 1e4 + noise).
#pragma once
#include <cstdint>

namespace qkv::kernels {

void layer_norm(int64_t rows, int64_t D, const float* x, const float* weight, const float* bias, float eps, float* y,
                float* mean, float* rstd);
void layer_norm_reference(int64_t rows, int64_t D, const float* x, const float* weight, const float* bias, float eps,
                          float* y, float* mean, float* rstd);

// Given dy, with g = dy ⊙ weight (dy when weight is null), per row:
//   dx = rstd · (g - mean(g) - x̂ ⊙ mean(g ⊙ x̂))
// and over all rows, added (+=) into dweight and dbias (D) unless null:
//   dweight += Σ_rows dy ⊙ x̂        dbias += Σ_rows dy
void layer_norm_backward(int64_t rows, int64_t D, const float* x, const float* weight, const float* mean,
                         const float* rstd, const float* dy, float* dx, float* dweight, float* dbias);
void layer_norm_backward_reference(int64_t rows, int64_t D, const float* x, const float* weight, const float* mean,
                                   const float* rstd, const float* dy, float* dx, float* dweight, float* dbias);

}  // namespace qkv::kernels
