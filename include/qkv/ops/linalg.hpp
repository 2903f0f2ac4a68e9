// Matrix products, on the packed SIMD GEMM kernel.
//
//   C = A·B          dA = dC·Bᵀ       dB = Aᵀ·dC
#pragma once
#include <qkv/core/tensor.hpp>

namespace qkv {

// PyTorch's matmul: 1-D·1-D is a dot product; a 1-D operand is treated as a
// row (left) or column (right) vector and that dim is dropped afterwards;
// 2-D·2-D is a matrix product; with more dims, the last two are the matrix
// and the leading (batch) dims broadcast: (B, 1, N, K)·(H, K, M) -> (B, H, N, M).
Tensor matmul(const Tensor& a, const Tensor& b);

// Batched product of 3-D tensors: (B, N, K)·(B, K, M) -> (B, N, M). No broadcasting.
Tensor bmm(const Tensor& a, const Tensor& b);

// PyTorch's F.linear, the op under nn::Linear: y = x·Wᵀ + b.
//   x (…, K), weight (N, K), bias (N) or undefined -> y (…, N)
// One GEMM that reads W transposed, instead of a transpose and a matmul:
//   dx = dy·W      dW = dyᵀ·x      db = Σ_rows dy
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace qkv
