// gradcheck: does an op's backward agree with finite differences?
//
// For a function f of some tensors, the check reduces f's output to a scalar
// L = Σ w ⊙ f(inputs) with fixed random weights w (so every output element
// matters), then for every input element xᵢ compares
//   backward's  ∂L/∂xᵢ   with   (L(xᵢ + eps) - L(xᵢ - eps)) / (2·eps)
// and passes when |analytic - numeric| ≤ atol + rtol·|numeric| everywhere.
//
// Use it on your own op:
//   auto r = qkv::gradcheck([](const std::vector<Tensor>& x) { return my_op(x[0], x[1]); },
//                           {qkv::randn({3, 4}, gen), qkv::randn({4}, gen)});
//   if (!r) fmt::print("{}\n", r.message);
//
// NOTE: qkv computes in float32, so eps cannot be tiny: the default 1e-2
// keeps rounding error well below the tolerances, which still catch a
// backward that is 5% wrong. Keep inputs away from kinks (relu at 0, |x| at 0).
#pragma once
#include <qkv/core/tensor.hpp>

#include <functional>
#include <string>
#include <vector>

namespace qkv {

struct GradcheckResult {
  bool ok = true;
  std::string message;  // on failure: which input and element, and both values
  explicit operator bool() const { return ok; }
};

struct GradcheckOptions {
  float eps = 1e-2f;
  float atol = 1e-3f;
  float rtol = 1e-2f;
  uint64_t seed = 0;  // for the weights w
};

// Inputs need not have requires_grad set: gradcheck checks every input.
// A qkv::Error, not a verdict, for what would make the verdict meaningless:
// no inputs, an undefined or non-finite input, eps ≤ 0 (or too small to move
// an input's float), a negative or NaN atol or rtol.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                          GradcheckOptions options = {});

}  // namespace qkv
