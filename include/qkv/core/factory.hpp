// Making tensors, with PyTorch's names: tensor, zeros, ones, full, arange,
// eye, rand, randn, randint (and int_tensor, zeros_int and arange_int for
// integer data). Tensor::empty (tensor.hpp) is the one that leaves the
// elements unset.
//
// Random factories take a Generator (generator.hpp); without one they use
// the default generator. Tensors come out with requires_grad false: call
// .requires_grad_() to make a leaf that collects gradients.
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/core/tensor.hpp>

namespace qkv {

Tensor tensor(std::vector<float> values, Shape shape);
Tensor tensor(std::vector<float> values);  // 1-D
Tensor scalar_tensor(float value);         // 0-D, shape ()
IntTensor int_tensor(std::vector<int64_t> values, Shape shape);
IntTensor int_tensor(std::vector<int64_t> values);  // 1-D

Tensor zeros(Shape shape);
IntTensor zeros_int(Shape shape);  // torch.zeros(shape, dtype=torch.long)
Tensor ones(Shape shape);
Tensor full(Shape shape, float value);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);

// start, start + step, … while < end (> end for a negative step), as a 1-D tensor.
Tensor arange(float end);
Tensor arange(float start, float end, float step = 1);
IntTensor arange_int(int64_t start, int64_t end);

Tensor eye(int64_t n);
Tensor eye(int64_t n, int64_t m);

Tensor rand(Shape shape, Generator& gen = default_generator());                                   // U[0, 1)
Tensor randn(Shape shape, Generator& gen = default_generator());                                  // N(0, 1)
IntTensor randint(int64_t low, int64_t high, Shape shape, Generator& gen = default_generator());  // [low, high)

}  // namespace qkv
