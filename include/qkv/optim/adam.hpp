// optim::Adam and optim::AdamW, PyTorch's torch.optim.Adam and AdamW
// (Kingma & Ba 2015; Loshchilov & Hutter 2019). For each parameter p with
// gradient g, elementwise, where t counts p's own updates (1, 2, …):
//
//   m ← β1·m + (1 − β1)·g               first moment: a running mean of g ("exp_avg")
//   v ← β2·v + (1 − β2)·g²              second moment: a running mean of g² ("exp_avg_sq")
//   p ← p − lr/(1 − β1ᵗ) · m / (√v/√(1 − β2ᵗ) + ε)
//
// m and v start at 0, so early on they are too small; dividing by 1 − βᵗ
// (the bias correction) undoes that. Each coordinate moves by about lr,
// whatever the scale of its gradient.
//
// The two differ only in weight decay λ:
//   Adam    g ← g + λ·p before the moments: an L2 term in the loss, which
//           the division by √v then scales down where gradients are large;
//   AdamW   p ← p·(1 − lr·λ) before the update, apart from the moments
//           ("decoupled"): every weight shrinks at the same rate.
// State per parameter: "exp_avg", "exp_avg_sq".
#pragma once
#include <qkv/optim/optimizer.hpp>

#include <utility>

namespace qkv::optim {

class Adam : public Optimizer {
 public:
  // lr, eps, weight_decay ≥ 0; each beta in [0, 1).
  Adam(std::vector<Tensor> params, float lr = 1e-3f, std::pair<float, float> betas = {0.9f, 0.999f}, float eps = 1e-8f,
       float weight_decay = 0);

  std::pair<float, float> betas;
  float eps, weight_decay;

  std::string type_name() const override { return decoupled_ ? "AdamW" : "Adam"; }
  Hyperparameters hyperparameters() const override;

 protected:
  // For AdamW: the same optimizer, with weight decay taken out of the moments.
  Adam(std::vector<Tensor> params, float lr, std::pair<float, float> betas, float eps, float weight_decay,
       bool decoupled_weight_decay);
  void update(Tensor& p, const Tensor& grad, ParamState& state) override;
  std::vector<std::string> buffer_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void check_hyperparameters(const std::map<std::string, float>& h) const override;
  void set_hyperparameters(const std::map<std::string, float>& h) override;

 private:
  bool decoupled_ = false;
};

// Adam with decoupled weight decay (PyTorch's default λ = 1e-2).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, float lr = 1e-3f, std::pair<float, float> betas = {0.9f, 0.999f}, float eps = 1e-8f,
        float weight_decay = 1e-2f)
      : Adam(std::move(params), lr, betas, eps, weight_decay, /*decoupled_weight_decay=*/true) {}
};

}  // namespace qkv::optim
