// torch.nn.init's formulas, drawing from a qkv Generator.
#include <qkv/core/error.hpp>
#include <qkv/nn/init.hpp>

#include <cmath>

namespace qkv::nn::init {

std::pair<int64_t, int64_t> fan_in_and_fan_out(const Tensor& w) {
  if (w.dim() < 2) fail("init: fan in and fan out need a tensor with at least 2 dims, got {}", w.shape());
  int64_t receptive = 1;
  for (int64_t d = 2; d < w.dim(); ++d) receptive *= w.size(d);
  return {w.size(1) * receptive, w.size(0) * receptive};
}

void constant_(Tensor& w, float value) { std::fill(w.data(), w.data() + w.numel(), value); }
void zeros_(Tensor& w) { constant_(w, 0); }
void ones_(Tensor& w) { constant_(w, 1); }

void uniform_(Tensor& w, float low, float high, Generator& gen) {
  for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = gen.uniform(low, high);
}

void normal_(Tensor& w, float mean, float std, Generator& gen) {
  for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = gen.normal(mean, std);
}

void xavier_uniform_(Tensor& w, float gain, Generator& gen) {
  auto [fan_in, fan_out] = fan_in_and_fan_out(w);
  float a = gain * std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  uniform_(w, -a, a, gen);
}

void xavier_normal_(Tensor& w, float gain, Generator& gen) {
  auto [fan_in, fan_out] = fan_in_and_fan_out(w);
  normal_(w, 0, gain * std::sqrt(2.0f / static_cast<float>(fan_in + fan_out)), gen);
}

void kaiming_uniform_(Tensor& w, float a, Generator& gen) {
  auto [fan_in, fan_out] = fan_in_and_fan_out(w);
  float gain = std::sqrt(2.0f / (1 + a * a));
  float bound = gain * std::sqrt(3.0f / static_cast<float>(fan_in));
  uniform_(w, -bound, bound, gen);
}

}  // namespace qkv::nn::init
