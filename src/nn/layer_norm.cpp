// nn::LayerNorm on the layer_norm op.
#include <qkv/core/error.hpp>
#include <qkv/nn/layer_norm.hpp>
#include <qkv/ops/functional.hpp>

#include <algorithm>
#include <cmath>

namespace qkv::nn {

LayerNorm::LayerNorm(Shape normalized_shape, float eps, bool elementwise_affine)
    : normalized_shape(std::move(normalized_shape)), eps(eps), elementwise_affine(elementwise_affine) {
  if (this->normalized_shape.ndim() == 0) fail("LayerNorm: normalized_shape is empty; give the dims to normalise over");
  for (int64_t d : this->normalized_shape)
    if (d <= 0) fail("LayerNorm: normalized_shape {} must have positive sizes", this->normalized_shape);
  // eps = inf would divide every row by infinity: zeros, whatever the input.
  if (!(eps >= 0) || !std::isfinite(eps)) fail("LayerNorm: eps must be finite and ≥ 0, got {}", eps);
  auto filled = [this](float value) {  // γ = 1, β = 0
    Tensor t = Tensor::empty(this->normalized_shape, "LayerNorm");
    std::fill_n(t.data(), t.numel(), value);
    return t;
  };
  register_parameter("weight", weight, elementwise_affine ? filled(1) : Tensor());
  register_parameter("bias", bias, elementwise_affine ? filled(0) : Tensor());
}

Tensor LayerNorm::forward(const Tensor& x) const {
  TraceScope trace(*this, {x});
  // The op checks that x ends in normalized_shape, and names both.
  return trace.output(layer_norm(x, normalized_shape, weight, bias, eps));  // (…, *normalized_shape) -> same
}

std::string LayerNorm::extra_repr() const {
  // PyTorch prints the shape as a Python tuple: (4,) or (2, 3).
  std::string dims;
  for (int64_t d : normalized_shape) dims += fmt::format("{}, ", d);
  if (normalized_shape.ndim() > 1)
    dims.resize(dims.size() - 2);
  else
    dims.resize(dims.size() - 1);
  return fmt::format("({}), eps={}, elementwise_affine={}", dims, eps, elementwise_affine ? "True" : "False");
}

}  // namespace qkv::nn
