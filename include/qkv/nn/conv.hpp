// nn::Conv1d: PyTorch's layer, a thin wrapper over the conv1d op (groups = 1).
//   x (N, in_channels, L) -> y (N, out_channels, L_out)
//   weight (out_channels, in_channels, kernel_size), bias (out_channels)
// Initialised as PyTorch does: weight by kaiming_uniform(a = √5), which is
// U[-1/√fan_in, 1/√fan_in] with fan_in = in_channels · kernel_size, and bias
// U[-1/√fan_in, 1/√fan_in].
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/nn/module.hpp>

namespace qkv::nn {

class Conv1d : public Module {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1, int64_t padding = 0,
         int64_t dilation = 1, bool bias = true, Generator& gen = default_generator());
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

  Tensor weight;  // (out_channels, in_channels, kernel_size)
  Tensor bias;    // (out_channels), undefined when bias = false
  int64_t in_channels, out_channels, kernel_size, stride, padding, dilation;

  std::string type_name() const override { return "Conv1d"; }
  std::string extra_repr() const override;
};

}  // namespace qkv::nn
