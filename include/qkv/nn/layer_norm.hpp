// nn::LayerNorm: normalise each example over its last dims, then scale and
// shift with learned weight and bias. PyTorch's layer; d2l 11.7 (the "add &
// norm" of the Transformer).
//   x (…, *normalized_shape) -> same shape
//   y = (x - mean) / sqrt(var + eps) · weight + bias, mean and (biased) var
//   taken over the normalized_shape dims of each example.
// weight starts at ones and bias at zeros, so a fresh layer only normalises.
#pragma once
#include <qkv/nn/module.hpp>

namespace qkv::nn {

class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalized_shape, float eps = 1e-5f, bool elementwise_affine = true);
  // LayerNorm(D): over the last dim only, as PyTorch's nn.LayerNorm(4).
  explicit LayerNorm(int64_t normalized_shape, float eps = 1e-5f, bool elementwise_affine = true)
      : LayerNorm(Shape{normalized_shape}, eps, elementwise_affine) {}
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

  // Without elementwise_affine, weight and bias are registered absent, as
  // PyTorch registers them as None: no parameters, and the repr says
  // elementwise_affine=False.
  Tensor weight;  // normalized_shape, undefined when !elementwise_affine
  Tensor bias;    // normalized_shape, undefined when !elementwise_affine
  Shape normalized_shape;
  float eps;
  bool elementwise_affine;

  std::string type_name() const override { return "LayerNorm"; }
  std::string extra_repr() const override;  // "(4,), eps=1e-05, elementwise_affine=True"
};

}  // namespace qkv::nn
