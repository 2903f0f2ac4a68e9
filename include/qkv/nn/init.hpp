// Initialising parameters in place, with PyTorch's names and formulas
// (torch.nn.init). Each takes a Generator, so a seed fixes every weight.
//
// For a weight of shape (out, in, …): fan_in = in · receptive field,
// fan_out = out · receptive field (receptive field = product of the dims
// after the first two; 1 for a matrix).
//
// They write into leaves only (parameters, plain tensors): an op's result is
// a qkv::Error, since its graph's backward may read the numbers overwritten.
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/core/tensor.hpp>

#include <utility>

namespace qkv::nn::init {

std::pair<int64_t, int64_t> fan_in_and_fan_out(const Tensor& w);  // needs ≥ 2 dims

void zeros_(Tensor& w);
void ones_(Tensor& w);
void constant_(Tensor& w, float value);
// U[low, high): low ≤ high, both finite. N(mean, std²): mean finite, std finite and ≥ 0.
// Each throws qkv::Error for an undefined w or a value out of range (so
// xavier_ and kaiming_ do too, for a NaN or infinite gain or slope).
void uniform_(Tensor& w, float low, float high, Generator& gen = default_generator());
void normal_(Tensor& w, float mean = 0, float std = 1, Generator& gen = default_generator());

// Glorot: U[-a, a] with a = gain·sqrt(6 / (fan_in + fan_out)); N(0, gain²·2 / (fan_in + fan_out)).
void xavier_uniform_(Tensor& w, float gain = 1, Generator& gen = default_generator());
void xavier_normal_(Tensor& w, float gain = 1, Generator& gen = default_generator());

// He, for leaky_relu with negative slope a (0: relu), fan_in mode:
// U[-b, b] with b = sqrt(2 / (1 + a²)) · sqrt(3 / fan_in).
// PyTorch's nn.Linear uses a = sqrt(5), giving b = 1 / sqrt(fan_in).
void kaiming_uniform_(Tensor& w, float a = 0, Generator& gen = default_generator());

}  // namespace qkv::nn::init
