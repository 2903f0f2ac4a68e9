// Gradient clipping by total norm, PyTorch's torch.nn.utils.clip_grad_norm_:
// one bad batch (or an exploding RNN) cannot throw the parameters far, while
// the gradient's direction is kept.
//
//   norm = √(Σ g²)                      over every element of every gradient
//   g ← g · max_norm/(norm + 1e-6)      for every gradient, when that factor is < 1
//
// Returns norm, measured before clipping (to log it). Parameters without a
// gradient are skipped. Call it between backward() and step().
// As PyTorch's default, a non-finite norm is returned, not refused (the
// gradients then become NaN): check the returned value to catch it.
#pragma once
#include <qkv/core/tensor.hpp>

#include <vector>

namespace qkv::optim {

// max_norm must be ≥ 0. The gradients are scaled in place.
float clip_grad_norm_(const std::vector<Tensor>& params, float max_norm);

}  // namespace qkv::optim
