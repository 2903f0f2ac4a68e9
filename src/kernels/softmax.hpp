// Softmax and log-softmax along the middle axis of an (outer, n, inner) view
// (see reduce.hpp for how any dim becomes that view), their backwards, d2l's
// masked softmax, and cross-entropy: each one pass over a row.
//
//   softmax(x)ₖ     = exp(xₖ - m) / Σⱼ exp(xⱼ - m)
//   log_softmax(x)ₖ = (xₖ - m) - log Σⱼ exp(xⱼ - m)
//
// with m = maxⱼ xⱼ. NOTE: subtracting the max changes nothing mathematically
// and keeps every exp ≤ 1, so logits of ±1e4 stay finite.
// inner == 1 (softmax over the last dim: every attention row) is the SIMD path;
// each kernel's `_reference` is the plain loop that defines it.
// x and y may be the same array (in place).
#pragma once
#include <cstdint>

namespace qkv::kernels {

void softmax(int64_t outer, int64_t n, int64_t inner, const float* x, float* y);
void softmax_reference(int64_t outer, int64_t n, int64_t inner, const float* x, float* y);

void log_softmax(int64_t outer, int64_t n, int64_t inner, const float* x, float* y);
void log_softmax_reference(int64_t outer, int64_t n, int64_t inner, const float* x, float* y);

// The backwards, given the forward's output y and dy (same view):
//   softmax:      dxₖ = yₖ · (dyₖ - Σⱼ dyⱼ yⱼ)      (diag(y) - y yᵀ applied to dy)
//   log_softmax:  dxₖ = dyₖ - exp(yₖ) · Σⱼ dyⱼ      (exp(y) is the softmax)
// dy and dx may be the same array (a row's sum is taken before it is written).
void softmax_backward(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy, float* dx);
void softmax_backward_reference(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy, float* dx);
void log_softmax_backward(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy, float* dx);
void log_softmax_backward_reference(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy,
                                    float* dx);

// d2l's masked softmax of `rows` contiguous rows of n: row r keeps its first
// lens[r] entries and sees -1e6 in the others (a length ≥ n keeps them all):
//   yₖ = softmax(x')ₖ,  x'ₖ = xₖ if k < lens[r] else -1e6
// The backward is softmax's, with 0 at the masked entries (which the mask
// cut off from x). x and y may be the same array.
void masked_softmax(int64_t rows, int64_t n, const int64_t* lens, const float* x, float* y);
void masked_softmax_reference(int64_t rows, int64_t n, const int64_t* lens, const float* x, float* y);
void masked_softmax_backward(int64_t rows, int64_t n, const int64_t* lens, const float* y, const float* dy, float* dx);
void masked_softmax_backward_reference(int64_t rows, int64_t n, const int64_t* lens, const float* y, const float* dy,
                                       float* dx);

// Cross-entropy of N rows of C logits x against class indices, PyTorch's
// definition with class weights w (weight == nullptr: all 1) and label
// smoothing ε:
//   logp = log_softmax(x)                                        per row
//   loss[i] = (1-ε) · (-w[t] · logp[t])  +  ε/C · (-Σ_c w[c] · logp[c])     t = target[i]
// and loss[i] = 0 where t == ignore_index. Every other t must be in [0, C).
// stats[i] = (m, log Σ exp(x - m)) of row i, (N, 2), which the backward reads
// instead of recomputing the max and the sum:
//   dx[i, c] = dloss[i] · (a · p[c] - (1-ε) · w[t] · [c = t] - ε/C · w[c])
//   with p = softmax(x) = exp((x - m) - log Σ), a = (1-ε) · w[t] + ε/C · Σ_c w[c],
// and dx[i, :] = 0 for an ignored row.
void cross_entropy(int64_t N, int64_t C, const float* x, const int64_t* target, const float* weight,
                   int64_t ignore_index, float smoothing, float* loss, float* stats);
void cross_entropy_reference(int64_t N, int64_t C, const float* x, const int64_t* target, const float* weight,
                             int64_t ignore_index, float smoothing, float* loss, float* stats);
void cross_entropy_backward(int64_t N, int64_t C, const float* x, const float* stats, const int64_t* target,
                            const float* weight, int64_t ignore_index, float smoothing, const float* dloss, float* dx);
void cross_entropy_backward_reference(int64_t N, int64_t C, const float* x, const float* stats, const int64_t* target,
                                      const float* weight, int64_t ignore_index, float smoothing, const float* dloss,
                                      float* dx);

}  // namespace qkv::kernels
