// optim::SGD: stochastic gradient descent with momentum, PyTorch's
// torch.optim.SGD. For each parameter p with gradient g, elementwise:
//
//   g ← g + λ·p                         weight decay λ (an L2 term in the loss)
//   b ← g                               momentum buffer, on p's first update
//   b ← μ·b + (1 − τ)·g                 on later ones (momentum μ, dampening τ)
//   g ← g + μ·b     (nesterov)          look ahead along the buffer
//   g ← b           (otherwise)
//   p ← p − lr·g
//
// With μ = 0 there is no buffer and this is plain gradient descent.
// State per parameter: "momentum_buffer" (when μ ≠ 0).
#pragma once
#include <qkv/optim/optimizer.hpp>

namespace qkv::optim {

class SGD : public Optimizer {
 public:
  // lr, momentum, dampening and weight_decay must be ≥ 0; nesterov needs
  // momentum > 0 and dampening = 0 (as PyTorch).
  SGD(std::vector<Tensor> params, float lr, float momentum = 0, float dampening = 0, float weight_decay = 0,
      bool nesterov = false);

  float momentum, dampening, weight_decay;
  bool nesterov;

  std::string type_name() const override { return "SGD"; }
  Hyperparameters hyperparameters() const override;

 protected:
  void update(Tensor& p, const Tensor& grad, ParamState& state) override;
  std::vector<std::string> buffer_names() const override { return {"momentum_buffer"}; }
  void check_hyperparameters(const std::map<std::string, float>& h) const override;
  void set_hyperparameters(const std::map<std::string, float>& h) override;
};

}  // namespace qkv::optim
