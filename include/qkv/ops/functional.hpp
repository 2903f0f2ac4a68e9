// Layer-level functions built from the primitive ops (no hand-written
// backward: their gradients come from the ops they are made of): dropout,
// layer_norm, the losses, cosine similarity and L2 normalisation.
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/core/tensor.hpp>

namespace qkv {

// Zero each element with probability p and scale the rest by 1/(1-p), so the
// expected value is unchanged; the identity when !training or p == 0.
Tensor dropout(const Tensor& x, float p, bool training, Generator& gen = default_generator());

// Normalise over the last normalized_shape.size() dims, then scale and shift:
//   y = (x - mean) / sqrt(var + eps) · weight + bias     (var is biased, as PyTorch's)
// weight and bias have shape normalized_shape, or are undefined (no affine part).
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), float eps = 1e-5f);

enum class Reduction { None, Mean, Sum };

// Cross-entropy of logits against class indices, as PyTorch's:
//   logits (N, C) with target (N), or (N, C, d1, …) with target (N, d1, …)
//   loss = -log_softmax(logits, 1)[n, target[n]]
// Targets equal to ignore_index (padding) add no loss, and Mean divides by
// the number of targets that were not ignored.
Tensor cross_entropy(const Tensor& logits, const IntTensor& target, Reduction reduction = Reduction::Mean,
                     int64_t ignore_index = -100);

// (x - target)² reduced; shapes must be equal.
Tensor mse_loss(const Tensor& x, const Tensor& target, Reduction reduction = Reduction::Mean);

// x1·x2 / (max(‖x1‖, eps)·max(‖x2‖, eps)) along dim (each norm clamped on its
// own, as current PyTorch does); x1 and x2 broadcast.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, float eps = 1e-8f);

// x / max(‖x‖_p, eps) along dim (p = 2 is the L2 normalisation).
Tensor normalize(const Tensor& x, float p = 2, int64_t dim = 1, float eps = 1e-12f);

}  // namespace qkv
