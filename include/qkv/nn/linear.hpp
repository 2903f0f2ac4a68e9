// nn::Linear: y = x·Wᵀ + b, PyTorch's layer.
//   x (…, in_features) -> y (…, out_features); weight (out, in), bias (out).
// Initialised as PyTorch does: W and b ~ U[-1/sqrt(in), 1/sqrt(in)].
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/nn/module.hpp>

namespace qkv::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator& gen = default_generator());
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

  Tensor weight;  // (out_features, in_features)
  Tensor bias;    // (out_features), undefined when bias = false
  int64_t in_features, out_features;

  std::string type_name() const override { return "Linear"; }
  std::string extra_repr() const override;
};

}  // namespace qkv::nn
