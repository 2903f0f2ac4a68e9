// nn::Linear on the linear op (one GEMM with the weight read transposed).
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/nn/init.hpp>
#include <qkv/nn/linear.hpp>
#include <qkv/ops/linalg.hpp>

#include <cmath>

namespace qkv::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, Generator& gen)
    : in_features(in_features), out_features(out_features) {
  if (in_features <= 0 || out_features <= 0)
    fail("Linear: in_features {} and out_features {} must be positive", in_features, out_features);
  // PyTorch's default: kaiming_uniform_(a = sqrt(5)) for W, which is
  // U[-1/sqrt(in), 1/sqrt(in)], and the same bound for b.
  Tensor w = Tensor::empty({out_features, in_features}, "Linear");
  init::kaiming_uniform_(w, std::sqrt(5.0f), gen);
  register_parameter("weight", weight, w);
  Tensor b;  // undefined: bias = false registers it absent, as PyTorch's None
  if (bias) {
    float bound = 1.0f / std::sqrt(static_cast<float>(in_features));
    b = Tensor::empty({out_features}, "Linear");
    init::uniform_(b, -bound, bound, gen);
  }
  register_parameter("bias", this->bias, b);
}

Tensor Linear::forward(const Tensor& x) const {
  TraceScope trace(*this, {x});
  return trace.output(linear(x, weight, bias));  // (…, in) -> (…, out)
}

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features, out_features,
                     bias.defined() ? "True" : "False");
}

}  // namespace qkv::nn
