// clip_grad_norm_: the total L2 norm of every gradient, and one scale for all.
#include <qkv/core/error.hpp>
#include <qkv/optim/clip_grad.hpp>

#include <cmath>

#include "kernels/optim.hpp"

namespace qkv::optim {

float clip_grad_norm_(const std::vector<Tensor>& params, float max_norm) {
  if (!(max_norm >= 0)) fail("clip_grad_norm_: max_norm={} must be ≥ 0", max_norm);

  // norm = √(Σ g²), summed in double so thousands of tensors lose nothing.
  double sum_sq = 0;
  for (const Tensor& p : params) {
    if (!p.defined()) fail("clip_grad_norm_: a parameter is undefined");
    const Tensor g = p.grad();  // read only: the const data() is not counted as a write
    if (!g.defined()) continue;
    sum_sq += kernels::sum_squares(g.numel(), g.data());
  }
  const float norm = static_cast<float>(std::sqrt(sum_sq));

  // PyTorch: coef = max_norm / (norm + 1e-6), clamped at 1 (never scale up).
  const float coef = max_norm / (norm + 1e-6f);
  if (!(coef < 1) && !std::isnan(coef)) return norm;
  for (const Tensor& p : params) {
    Tensor g = p.grad();  // a handle: scaling it scales p's gradient
    if (!g.defined()) continue;
    kernels::scale(g.numel(), coef, g.data());  // g ← coef·g, in place
  }
  return norm;
}

}  // namespace qkv::optim
