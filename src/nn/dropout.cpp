// nn::Dropout on the dropout op, with the module's training flag.
#include <qkv/core/error.hpp>
#include <qkv/nn/dropout.hpp>
#include <qkv/ops/functional.hpp>

namespace qkv::nn {

Dropout::Dropout(float p, Generator& gen) : p(p), gen_(&gen) {
  if (!(p >= 0 && p <= 1)) fail("Dropout: probability has to be between 0 and 1, but got {}", p);
}

Tensor Dropout::forward(const Tensor& x) const {
  TraceScope trace(*this, {x});
  return trace.output(dropout(x, p, is_training(), *gen_));  // same shape
}

std::string Dropout::extra_repr() const { return fmt::format("p={}, inplace=False", p); }

}  // namespace qkv::nn
