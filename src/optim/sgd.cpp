// optim::SGD: PyTorch's update rule, one loop over the parameter's numbers.
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/optim/sgd.hpp>

namespace qkv::optim {

namespace {

// PyTorch's checks, with the values. `!(x >= 0)` also refuses NaN.
void check_sgd(float lr, float momentum, float dampening, float weight_decay, bool nesterov) {
  if (!(lr >= 0)) fail("SGD: invalid learning rate lr={} (must be ≥ 0)", lr);
  if (!(momentum >= 0)) fail("SGD: invalid momentum={} (must be ≥ 0)", momentum);
  if (!(dampening >= 0)) fail("SGD: invalid dampening={} (must be ≥ 0)", dampening);
  if (!(weight_decay >= 0)) fail("SGD: invalid weight_decay={} (must be ≥ 0)", weight_decay);
  if (nesterov && (momentum <= 0 || dampening != 0))
    fail("SGD: nesterov momentum needs momentum > 0 and dampening = 0, got momentum={} dampening={}", momentum,
         dampening);
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, float lr, float momentum, float dampening, float weight_decay, bool nesterov)
    : Optimizer(std::move(params)),
      momentum(momentum),
      dampening(dampening),
      weight_decay(weight_decay),
      nesterov(nesterov) {
  check_sgd(lr, momentum, dampening, weight_decay, nesterov);
  this->lr = lr;
}

Hyperparameters SGD::hyperparameters() const {
  return {{"lr", lr},
          {"momentum", momentum},
          {"dampening", dampening},
          {"weight_decay", weight_decay},
          {"nesterov", nesterov ? 1.0f : 0.0f}};
}

void SGD::check_hyperparameters(const std::map<std::string, float>& h) const {
  float n = h.at("nesterov");
  if (n != 0 && n != 1) fail("SGD: nesterov must be 0 or 1, got {}", n);
  check_sgd(h.at("lr"), h.at("momentum"), h.at("dampening"), h.at("weight_decay"), n == 1);
}

void SGD::set_hyperparameters(const std::map<std::string, float>& h) {
  lr = h.at("lr");
  momentum = h.at("momentum");
  dampening = h.at("dampening");
  weight_decay = h.at("weight_decay");
  nesterov = h.at("nesterov") == 1;
}

// Elementwise, for each of p's n numbers (see sgd.hpp):
//   d = g + λ·p;  b = d (first) or μ·b + (1 − τ)·d;  d = d + μ·b (nesterov) or b;  p = p − lr·d
void SGD::update(Tensor& p, const Tensor& grad, ParamState& state) {
  float* w = p.data();
  const float* g = grad.data();
  const int64_t n = p.numel();

  float* buf = nullptr;  // the momentum buffer, when there is momentum
  bool first = false;    // PyTorch starts the buffer at the first gradient, not at 0
  if (momentum != 0) {
    auto [it, created] = state.buffers.try_emplace("momentum_buffer");
    if (created) it->second = zeros(p.shape());
    buf = it->second.data();
    first = created;
  }

  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    if (weight_decay != 0) d += weight_decay * w[i];
    if (buf != nullptr) {
      buf[i] = first ? d : momentum * buf[i] + (1 - dampening) * d;
      d = nesterov ? d + momentum * buf[i] : buf[i];
    }
    w[i] -= lr * d;
  }
}

}  // namespace qkv::optim
