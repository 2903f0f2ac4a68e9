// The optimizers' elementwise updates and clip_grad_norm_'s sum of squares
// and scaling, over one parameter's float arrays.
//
// An optimizer step is a handful of multiply-adds per number, over every
// parameter of a model: memory-bound, so the SIMD versions are one pass
// that keeps each number in a register from load to store. Each has a
// scalar reference twin, the loop that defines it; tests hold them equal.
//
// Rounding: every multiply-add below is ONE fused operation (madd and fmadd,
// kernels/simd.hpp) where the hardware fuses, and a product and a sum (two
// roundings) where it cannot, in both twins alike; every other operation is
// a single correctly rounded IEEE operation (divide and square_root, on
// ARM64 too). So each
// twin computes the same float for every element, bit for bit, with or
// without FMA. (The build's -ffp-contract=off keeps the compiler from fusing
// any other multiply-add, differently in the two loops.)
//
// This layer knows nothing of Tensor: raw pointers and sizes only.
#pragma once
#include <cstdint>

namespace qkv::kernels {

// Adam's step for n numbers (PyTorch's torch.optim.Adam / AdamW, one tensor):
//   p ← p·decay                                    (AdamW's decoupled decay; 1 for Adam)
//   g ← g + l2·p                                   (Adam's coupled decay; 0 for AdamW)
//   m ← β1·m + (1 − β1)·g;   v ← β2·v + (1 − β2)·g²
//   p ← p − step_size · m / (√v / bias_correction2_sqrt + ε)
// with step_size = lr / (1 − β1ᵗ) and bias_correction2_sqrt = √(1 − β2ᵗ)
// worked out by the caller. g is read, never written.
struct AdamStep {
  float beta1, beta2, step_size, bias_correction2_sqrt, eps, l2, decay;
};
void adam(const AdamStep& s, int64_t n, float* p, const float* g, float* m, float* v);
void adam_reference(const AdamStep& s, int64_t n, float* p, const float* g, float* m, float* v);

// SGD's step for n numbers (torch.optim.SGD), buf the momentum buffer or
// null when momentum is 0:
//   d ← g + λ·p
//   b ← d (first step) or μ·b + (1 − τ)·d;   d ← d + μ·b (nesterov) or b
//   p ← p − lr·d
struct SgdStep {
  float lr, momentum, dampening, weight_decay;
  bool nesterov;
  bool first;  // the buffer starts at the first d (PyTorch), not at zero
};
void sgd(const SgdStep& s, int64_t n, float* p, const float* g, float* buf);
void sgd_reference(const SgdStep& s, int64_t n, float* p, const float* g, float* buf);

// Σ x[i]², each square and the sum in double (clip_grad_norm_: thousands of
// tensors of millions of numbers lose nothing). The SIMD version adds in W
// lanes, then the lanes: another order than the reference's, so the two
// agree to double's rounding (a relative n·2⁻⁵³), not bit for bit.
double sum_squares(int64_t n, const float* x);
double sum_squares_reference(int64_t n, const float* x);

// x ← c·x for n numbers, in place (clip_grad_norm_'s one scale for every
// gradient). One IEEE multiply per element in both twins: equal bit for bit.
void scale(int64_t n, float c, float* x);
void scale_reference(int64_t n, float c, float* x);

}  // namespace qkv::kernels
