// Layer-level functions: dropout, layer_norm, the losses, cosine similarity
// and L2 normalisation. Most are built from the primitive ops, whose
// gradients give theirs; layer_norm, fused_gru_cell and cross_entropy are
// one kernel each way with their own backward.
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/core/tensor.hpp>

namespace qkv {

// Zero each element with probability p and scale the rest by 1/(1-p), so the
// expected value is unchanged; the identity when !training or p == 0.
Tensor dropout(const Tensor& x, float p, bool training, Generator& gen = default_generator());

// Normalise over the last normalized_shape.size() dims, then scale and shift:
//   y = (x - mean) / sqrt(var + eps) · weight + bias     (var is biased, as PyTorch's)
// Gradients reach x, weight and bias.
// weight and bias have shape normalized_shape, or are undefined (no affine part).
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), float eps = 1e-5f);

// One step of PyTorch's GRU from the two gate pre-activations, each three
// blocks [r | z | n] of H per row (what nn::GRU computes with two Linears):
//   xw = W_ih x + b_ih (B, 3H),  hw = W_hh h + b_hh (B, 3H),  h (B, H)
//   r = σ(x_r + h_r),  z = σ(x_z + h_z),  n = tanh(x_n + r ⊙ h_n)
//   h' = (1 - z) ⊙ n + z ⊙ h                                   -> (B, H)
// One kernel each way instead of a dozen ops; gradients reach xw, hw and h.
Tensor fused_gru_cell(const Tensor& xw, const Tensor& hw, const Tensor& h);

enum class Reduction { None, Mean, Sum };

// Cross-entropy of logits against class indices, with PyTorch's arguments in
// PyTorch's order (torch.nn.functional.cross_entropy):
//   logits (N, C) with target (N), (N, C, d1, …) with target (N, d1, …), or (C) with ()
//   loss[n] = -w[t] · log_softmax(logits, 1)[n, t]          t = target[n], w = weight or 1
// weight (C), optional, scales each class's loss; it is a constant (no
// gradient reaches it; PyTorch does not differentiate it either). Targets equal to ignore_index (padding) add nothing.
// Mean divides the sum by Σ w[target] over the targets not ignored (their count when there is no weight).
// label_smoothing ε in [0, 1] trains against (1-ε)·onehot(t) + ε/C instead of onehot(t):
//   loss[n] = (1-ε) · (-w[t] · logp[n, t])  +  ε/C · (-Σ_c w[c] · logp[n, c])
// and Mean divides both terms by the same Σ w[target].
Tensor cross_entropy(const Tensor& logits, const IntTensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, Reduction reduction = Reduction::Mean, float label_smoothing = 0.0f);

// (x - target)² reduced; shapes must be equal.
Tensor mse_loss(const Tensor& x, const Tensor& target, Reduction reduction = Reduction::Mean);

// x1·x2 / (max(‖x1‖, eps)·max(‖x2‖, eps)) along dim (each norm clamped on its
// own, as current PyTorch does); x1 and x2 broadcast.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, float eps = 1e-8f);

// x / max(‖x‖_p, eps) along dim (p = 2 is the L2 normalisation).
Tensor normalize(const Tensor& x, float p = 2, int64_t dim = 1, float eps = 1e-12f);

}  // namespace qkv
