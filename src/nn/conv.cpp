// nn::Conv1d on the conv1d op (im2col and one GEMM, src/ops/conv.cpp).
#include <qkv/core/error.hpp>
#include <qkv/nn/conv.hpp>
#include <qkv/nn/init.hpp>
#include <qkv/ops/conv.hpp>

#include <cmath>

namespace qkv::nn {

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride, int64_t padding,
               int64_t dilation, bool bias, Generator& gen)
    : in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(kernel_size),
      stride(stride),
      padding(padding),
      dilation(dilation) {
  if (in_channels <= 0 || out_channels <= 0 || kernel_size <= 0)
    fail("Conv1d: in_channels {}, out_channels {} and kernel_size {} must be positive", in_channels, out_channels,
         kernel_size);
  if (stride < 1 || dilation < 1 || padding < 0)
    fail("Conv1d: stride {} and dilation {} must be ≥ 1 and padding {} ≥ 0", stride, dilation, padding);
  // PyTorch's default (_ConvNd.reset_parameters): kaiming_uniform_(a = √5)
  // on the weight, whose fan_in = in_channels · kernel_size, giving
  // U[-1/√fan_in, 1/√fan_in]; the same bound for the bias.
  Tensor w = Tensor::empty({out_channels, in_channels, kernel_size}, "Conv1d");
  init::kaiming_uniform_(w, std::sqrt(5.0f), gen);
  register_parameter("weight", weight, w);
  Tensor b;  // undefined: bias = false registers it absent, as PyTorch's None
  if (bias) {
    float bound = 1.0f / std::sqrt(static_cast<float>(in_channels * kernel_size));
    b = Tensor::empty({out_channels}, "Conv1d");
    init::uniform_(b, -bound, bound, gen);
  }
  register_parameter("bias", this->bias, b);
}

// (N, in_channels, L) -> (N, out_channels, L_out)
Tensor Conv1d::forward(const Tensor& x) const {
  TraceScope trace(*this, {x});
  if (!x.defined()) fail("Conv1d: x is an undefined tensor");
  return trace.output(conv1d(x, weight, bias, stride, padding, dilation));  // (B, C_in, L) -> (B, C_out, L_out)
}

// As PyTorch prints it: stride always, padding, dilation and bias only when not the default.
std::string Conv1d::extra_repr() const {
  std::string s =
      fmt::format("{}, {}, kernel_size=({},), stride=({},)", in_channels, out_channels, kernel_size, stride);
  if (padding != 0) s += fmt::format(", padding=({},)", padding);
  if (dilation != 1) s += fmt::format(", dilation=({},)", dilation);
  if (!bias.defined()) s += ", bias=False";
  return s;
}

}  // namespace qkv::nn
