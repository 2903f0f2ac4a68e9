// Elementwise ops: arithmetic with broadcasting, and the unary maps.
//
// Binary ops broadcast (broadcast.hpp) and have scalar forms; the operators
// + - * / and unary - call them. Each gradient is the local derivative times
// the incoming gradient, summed back to the input's shape.
#pragma once
#include <qkv/core/tensor.hpp>

namespace qkv {

Tensor add(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, float b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, float b);
Tensor sub(float a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, float b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, float b);
Tensor div(float a, const Tensor& b);
Tensor pow(const Tensor& a, float exponent);
Tensor pow(const Tensor& a, const Tensor& exponent);

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor abs(const Tensor& x);  // gradient sign(x), 0 at 0 as in PyTorch
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);  // gradient 0 at 0 as in PyTorch
Tensor gelu(const Tensor& x);  // exact: x·Φ(x), PyTorch's default

// x where mask is 0, value where mask is non-zero; mask broadcasts to x's
// shape. The gradient flows only to the kept elements.
Tensor masked_fill(const Tensor& x, const IntTensor& mask, float value);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, float b);
Tensor operator+(float a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, float b);
Tensor operator-(float a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, float b);
Tensor operator*(float a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, float b);
Tensor operator/(float a, const Tensor& b);
Tensor operator-(const Tensor& x);

}  // namespace qkv
