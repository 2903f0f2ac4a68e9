// torch.nn.init's formulas, drawing from a qkv Generator.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/nn/init.hpp>

#include <cmath>

namespace qkv::nn::init {

namespace {

void check_defined(const Tensor& w, const char* op) {
  if (!w.defined()) fail("{}: w is an undefined tensor", op);
}

// NOTE: the initialisers write in place. Into an op's result, they would
// change numbers its graph's backward may read (PyTorch catches that later,
// at backward, with its version counters; qkv has none), so they take only
// leaves: parameters and plain tensors.
void check_writable(const Tensor& w, const char* op) {
  check_defined(w, op);
  if (!w.is_leaf())
    fail("{}: w {} is the result of an op ({}), not a parameter; initialise the leaf tensor instead", op, w.shape(),
         w.grad_fn()->name);
}

}  // namespace

std::pair<int64_t, int64_t> fan_in_and_fan_out(const Tensor& w) {
  check_defined(w, "init");
  if (w.dim() < 2) fail("init: fan in and fan out need a tensor with at least 2 dims, got {}", w.shape());
  int64_t receptive = 1;
  for (int64_t d = 2; d < w.dim(); ++d) receptive *= w.size(d);
  return {w.size(1) * receptive, w.size(0) * receptive};
}

void constant_(Tensor& w, float value) {
  check_writable(w, "constant_");
  std::fill(w.data(), w.data() + w.numel(), value);
}
void zeros_(Tensor& w) { constant_(w, 0); }
void ones_(Tensor& w) { constant_(w, 1); }

// PyTorch refuses low > high ("uniform_ expects to return a [from, to)
// range") and a range wider than a float holds; NaN fails low ≤ high too.
void uniform_(Tensor& w, float low, float high, Generator& gen) {
  check_writable(w, "uniform_");
  if (!(low <= high) || !std::isfinite(high - low))
    fail("uniform_: the range [low, high) must have finite low ≤ high, got low {} and high {}", low, high);
  for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = gen.uniform(low, high);
}

// PyTorch refuses std < 0 ("normal expects std >= 0.0"); a NaN or infinite
// mean or std would fill w with NaN or ±inf, so those are refused as well.
void normal_(Tensor& w, float mean, float std, Generator& gen) {
  check_writable(w, "normal_");
  if (!(std >= 0) || !std::isfinite(std) || !std::isfinite(mean))
    fail("normal_: needs a finite mean and a finite std ≥ 0, got mean {} and std {}", mean, std);
  for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = gen.normal(mean, std);
}

// NOTE: a tensor with no elements is left as it is, as PyTorch does
// ("Initializing zero-element tensors is a no-op"): its fans may be 0, and
// the bound 1/0 is no range to draw from.
void xavier_uniform_(Tensor& w, float gain, Generator& gen) {
  auto [fan_in, fan_out] = fan_in_and_fan_out(w);
  if (w.numel() == 0) return;
  float a = gain * std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  uniform_(w, -a, a, gen);
}

void xavier_normal_(Tensor& w, float gain, Generator& gen) {
  auto [fan_in, fan_out] = fan_in_and_fan_out(w);
  if (w.numel() == 0) return;
  normal_(w, 0, gain * std::sqrt(2.0f / static_cast<float>(fan_in + fan_out)), gen);
}

void kaiming_uniform_(Tensor& w, float a, Generator& gen) {
  auto [fan_in, fan_out] = fan_in_and_fan_out(w);
  if (w.numel() == 0) return;
  float gain = std::sqrt(2.0f / (1 + a * a));
  float bound = gain * std::sqrt(3.0f / static_cast<float>(fan_in));
  uniform_(w, -bound, bound, gen);
}

}  // namespace qkv::nn::init
