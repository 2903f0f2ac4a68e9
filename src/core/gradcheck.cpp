// gradcheck: backward's gradients against central finite differences.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/core/gradcheck.hpp>

#include <cmath>
#include <utility>

namespace qkv {

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                          GradcheckOptions options) {
  // A step of 0 divides by 0, a NaN tolerance passes nothing and a negative
  // one fails everything: each would make the verdict mean nothing.
  if (!f) fail("gradcheck: the function is empty");
  if (!(options.eps > 0) || !std::isfinite(options.eps))
    fail("gradcheck: eps must be finite and > 0, got eps {}", options.eps);
  if (!(options.atol >= 0) || !(options.rtol >= 0) || !std::isfinite(options.atol) || !std::isfinite(options.rtol))
    fail("gradcheck: atol and rtol must be finite and ≥ 0, got atol {} and rtol {}", options.atol, options.rtol);
  if (inputs.empty()) fail("gradcheck: no inputs to check");
  // Fresh leaves, so the caller's tensors are neither perturbed nor given grads.
  std::vector<Tensor> xs;
  for (const Tensor& x : inputs) {
    if (!x.defined()) fail("gradcheck: input {} is undefined", xs.size());
    // NOTE: a finite difference at NaN or ±inf is NaN: no verdict either way.
    for (int64_t j = 0; j < x.numel(); ++j)
      if (!std::isfinite(x.data()[j]))
        fail("gradcheck: input {} {} element {} is {}: finite differences need finite inputs", xs.size(), x.shape(), j,
             x.data()[j]);
    xs.push_back(Tensor(x.to_vector(), x.shape()).requires_grad_());
  }

  // L = Σ w ⊙ f(x): its gradient is what backward gives when fed w.
  Tensor y = f(xs);
  if (!y.defined()) fail("gradcheck: the function returned an undefined tensor");
  Generator gen(options.seed);
  const Tensor w = randn(y.shape(), gen);
  if (!y.requires_grad())
    return {false, "gradcheck: the output does not require grad (the function recorded no graph)"};
  y.backward(w);

  NoGradGuard no_grad;
  auto loss = [&]() {
    const Tensor out = f(xs);
    if (out.shape() != w.shape()) fail("gradcheck: output shape changed from {} to {}", w.shape(), out.shape());
    double s = 0;
    const float *pw = w.data(), *po = out.data();
    for (int64_t k = 0; k < out.numel(); ++k) s += static_cast<double>(pw[k]) * po[k];
    return s;
  };

  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor analytic = xs[i].grad();
    float* x = xs[i].data();
    for (int64_t j = 0; j < xs[i].numel(); ++j) {
      float original = x[j];
      float up = original + options.eps, down = original - options.eps;
      // eps below half a float step at x rounds x ± eps back to x; near
      // FLT_MAX, x + eps overflows.
      if (!(up > down) || !std::isfinite(up) || !std::isfinite(down))
        fail(
            "gradcheck: eps {} does not fit input {} {} element {} = {}: x - eps = {} and x + eps = {} must be two "
            "different finite floats",
            options.eps, i, xs[i].shape(), j, original, down, up);
      x[j] = up;
      double l_up = loss();
      x[j] = down;
      double l_down = loss();
      x[j] = original;
      // Divide by the step actually taken (up - down in float), not 2·eps.
      double numeric = (l_up - l_down) / (static_cast<double>(up) - down);
      double got = analytic.defined() ? analytic.data()[j] : 0.0;
      if (!(std::fabs(got - numeric) <= options.atol + options.rtol * std::fabs(numeric))) {
        return {false, fmt::format("gradcheck: input {} {} element {}: backward gives {:.6g}, finite differences "
                                   "give {:.6g} (atol {}, rtol {})",
                                   i, xs[i].shape(), j, got, numeric, options.atol, options.rtol)};
      }
    }
  }
  return {true, ""};
}

}  // namespace qkv
