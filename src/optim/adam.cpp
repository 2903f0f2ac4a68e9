// optim::Adam and optim::AdamW: one shared loop for the moments and the step;
// they differ only in where weight decay goes.
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/optim/adam.hpp>

#include <cmath>

namespace qkv::optim {

namespace {

// PyTorch's checks, with the values. `!(x >= 0)` also refuses NaN.
void check_adam(const char* type, float lr, float beta1, float beta2, float eps, float weight_decay) {
  if (!(lr >= 0)) fail("{}: invalid learning rate lr={} (must be ≥ 0)", type, lr);
  if (!(eps >= 0)) fail("{}: invalid eps={} (must be ≥ 0)", type, eps);
  if (!(beta1 >= 0 && beta1 < 1)) fail("{}: invalid betas[0]={} (must be in [0, 1))", type, beta1);
  if (!(beta2 >= 0 && beta2 < 1)) fail("{}: invalid betas[1]={} (must be in [0, 1))", type, beta2);
  if (!(weight_decay >= 0)) fail("{}: invalid weight_decay={} (must be ≥ 0)", type, weight_decay);
}

// The Adam step for one parameter, elementwise (adam.hpp), with l2 the
// coupled weight decay (Adam's λ; 0 for AdamW, which decays p beforehand):
//   g ← g + l2·p;  m ← β1·m + (1 − β1)·g;  v ← β2·v + (1 − β2)·g²
//   p ← p − lr/(1 − β1ᵗ) · m / (√v/√(1 − β2ᵗ) + ε)
void adam_step(Tensor& p, const Tensor& grad, ParamState& state, float lr, std::pair<float, float> betas, float eps,
               float l2) {
  auto [beta1, beta2] = betas;
  auto [m_it, fresh] = state.buffers.try_emplace("exp_avg");
  if (fresh) m_it->second = zeros(p.shape());  // zeros: nothing seen yet
  auto [v_it, fresh_v] = state.buffers.try_emplace("exp_avg_sq");
  if (fresh_v) v_it->second = zeros(p.shape());
  float* w = p.data();
  const float* g = grad.data();
  float* m = m_it->second.data();
  float* v = v_it->second.data();

  // The bias corrections in double, as PyTorch computes them (Python floats).
  const double t = static_cast<double>(state.step);
  const double bias_correction1 = 1 - std::pow(static_cast<double>(beta1), t);
  const double bias_correction2 = 1 - std::pow(static_cast<double>(beta2), t);
  const float step_size = static_cast<float>(lr / bias_correction1);
  const float bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));

  for (int64_t i = 0, n = p.numel(); i < n; ++i) {
    float gi = g[i];
    if (l2 != 0) gi += l2 * w[i];
    m[i] = beta1 * m[i] + (1 - beta1) * gi;
    v[i] = beta2 * v[i] + (1 - beta2) * gi * gi;
    float denom = std::sqrt(v[i]) / bias_correction2_sqrt + eps;
    w[i] -= step_size * (m[i] / denom);
  }
}

}  // namespace

// --- Adam and AdamW -------------------------------------------------------------

Adam::Adam(std::vector<Tensor> params, float lr, std::pair<float, float> betas, float eps, float weight_decay)
    : Adam(std::move(params), lr, betas, eps, weight_decay, /*decoupled_weight_decay=*/false) {}

Adam::Adam(std::vector<Tensor> params, float lr, std::pair<float, float> betas, float eps, float weight_decay,
           bool decoupled_weight_decay)
    : Optimizer(std::move(params)),
      betas(betas),
      eps(eps),
      weight_decay(weight_decay),
      decoupled_(decoupled_weight_decay) {
  check_adam(type_name().c_str(), lr, betas.first, betas.second, eps, weight_decay);
  this->lr = lr;
}

Hyperparameters Adam::hyperparameters() const {
  return {{"lr", lr}, {"beta1", betas.first}, {"beta2", betas.second}, {"eps", eps}, {"weight_decay", weight_decay}};
}

void Adam::check_hyperparameters(const std::map<std::string, float>& h) const {
  check_adam(type_name().c_str(), h.at("lr"), h.at("beta1"), h.at("beta2"), h.at("eps"), h.at("weight_decay"));
}

void Adam::set_hyperparameters(const std::map<std::string, float>& h) {
  lr = h.at("lr");
  betas = {h.at("beta1"), h.at("beta2")};
  eps = h.at("eps");
  weight_decay = h.at("weight_decay");
}

// Adam: L2 weight decay enters through the gradient (g ← g + λ·p).
// AdamW: decoupled weight decay shrinks p first (p ← p·(1 − lr·λ)), then the
// plain Adam step.
void Adam::update(Tensor& p, const Tensor& grad, ParamState& state) {
  if (!decoupled_) {
    adam_step(p, grad, state, lr, betas, eps, weight_decay);
    return;
  }
  if (weight_decay != 0) {
    const float shrink = 1 - lr * weight_decay;
    float* w = p.data();
    for (int64_t i = 0, n = p.numel(); i < n; ++i) w[i] *= shrink;
  }
  adam_step(p, grad, state, lr, betas, eps, /*l2=*/0);
}

}  // namespace qkv::optim
