// torch.nn.init's formulas, drawing from a qkv Generator.
//
// Each public initialiser is one of the three fills below (a value, a
// uniform draw, a normal draw), given its own name for the errors: ones_ of
// an undefined tensor says ones_, not the constant_ it is built on.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/nn/init.hpp>

#include <algorithm>
#include <cmath>

namespace qkv::nn::init {

namespace {

void check_defined(const Tensor& w, const char* op) {
  if (!w.defined()) fail("{}: w is an undefined tensor", op);
}

// NOTE: the initialisers write in place. Into an op's result, they would
// change numbers its graph's backward may read, so they take only leaves:
// parameters and plain tensors. (Into a parameter a graph has saved, the
// write is caught later, at backward, by the storage's version: autograd.hpp.)
void check_writable(const Tensor& w, const char* op) {
  check_defined(w, op);
  if (!w.is_leaf())
    fail("{}: w {} is the result of an op ({}), not a parameter; initialise the leaf tensor instead", op, w.shape(),
         w.grad_fn()->name);
}

std::pair<int64_t, int64_t> fans(const Tensor& w, const char* op) {
  check_defined(w, op);
  if (w.dim() < 2) fail("{}: fan in and fan out need a tensor with at least 2 dims, got {}", op, w.shape());
  int64_t receptive = 1;
  for (int64_t d = 2; d < w.dim(); ++d) receptive *= w.size(d);
  return {w.size(1) * receptive, w.size(0) * receptive};
}

void fill(Tensor& w, float value, const char* op) {
  check_writable(w, op);
  std::fill(w.data(), w.data() + w.numel(), value);
}

// PyTorch refuses low > high ("uniform_ expects to return a [from, to)
// range") and a range wider than a float holds; NaN fails low ≤ high too.
void fill_uniform(Tensor& w, float low, float high, Generator& gen, const char* op) {
  check_writable(w, op);
  if (!(low <= high) || !std::isfinite(high - low))
    fail("{}: the range [low, high) must have finite low ≤ high, got low {} and high {}", op, low, high);
  float* p = w.data();
  for (int64_t i = 0; i < w.numel(); ++i) p[i] = gen.uniform(low, high);
}

// PyTorch refuses std < 0 ("normal expects std >= 0.0"); a NaN or infinite
// mean or std would fill w with NaN or ±inf, so those are refused as well.
void fill_normal(Tensor& w, float mean, float std, Generator& gen, const char* op) {
  check_writable(w, op);
  if (!(std >= 0) || !std::isfinite(std) || !std::isfinite(mean))
    fail("{}: needs a finite mean and a finite std ≥ 0, got mean {} and std {}", op, mean, std);
  float* p = w.data();
  for (int64_t i = 0; i < w.numel(); ++i) p[i] = gen.normal(mean, std);
}

}  // namespace

std::pair<int64_t, int64_t> fan_in_and_fan_out(const Tensor& w) { return fans(w, "fan_in_and_fan_out"); }

void constant_(Tensor& w, float value) { fill(w, value, "constant_"); }
void zeros_(Tensor& w) { fill(w, 0, "zeros_"); }
void ones_(Tensor& w) { fill(w, 1, "ones_"); }

void uniform_(Tensor& w, float low, float high, Generator& gen) { fill_uniform(w, low, high, gen, "uniform_"); }
void normal_(Tensor& w, float mean, float std, Generator& gen) { fill_normal(w, mean, std, gen, "normal_"); }

// NOTE: a tensor with no elements is left as it is, as PyTorch does
// ("Initializing zero-element tensors is a no-op"): its fans may be 0, and
// the bound 1/0 is no range to draw from.
void xavier_uniform_(Tensor& w, float gain, Generator& gen) {
  auto [fan_in, fan_out] = fans(w, "xavier_uniform_");
  if (w.numel() == 0) return;
  float a = gain * std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  fill_uniform(w, -a, a, gen, "xavier_uniform_");
}

void xavier_normal_(Tensor& w, float gain, Generator& gen) {
  auto [fan_in, fan_out] = fans(w, "xavier_normal_");
  if (w.numel() == 0) return;
  fill_normal(w, 0, gain * std::sqrt(2.0f / static_cast<float>(fan_in + fan_out)), gen, "xavier_normal_");
}

void kaiming_uniform_(Tensor& w, float a, Generator& gen) {
  auto [fan_in, fan_out] = fans(w, "kaiming_uniform_");
  if (w.numel() == 0) return;
  float gain = std::sqrt(2.0f / (1 + a * a));
  float bound = gain * std::sqrt(3.0f / static_cast<float>(fan_in));
  fill_uniform(w, -bound, bound, gen, "kaiming_uniform_");
}

}  // namespace qkv::nn::init
