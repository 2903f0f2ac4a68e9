// Matrix products, on the packed SIMD GEMM kernel.
//
//   C = A·B          dA = dC·Bᵀ       dB = Aᵀ·dC
#pragma once
#include <qkv/core/tensor.hpp>

namespace qkv {

// Which operands of matmul / bmm to read transposed: op(x) is x with its last
// two dims swapped when the flag is set, x itself otherwise. The product is
// then op(a)·op(b), so
//   matmul(q, k, {.transpose_b = true}) == matmul(q, k.transpose(-2, -1))
// with the same values and gradients, but without the copy: qkv tensors are
// always contiguous, so transpose copies, while the GEMM kernel reads a
// transposed operand as cheaply as a plain one (it packs both into panels).
// The names are those of tf.linalg.matmul (PyTorch needs no flags: its
// transpose is a free strided view). A flag needs an operand of ≥ 2 dims.
struct MatmulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
};

// PyTorch's matmul: 1-D·1-D is a dot product; a 1-D operand is treated as a
// row (left) or column (right) vector and that dim is dropped afterwards;
// 2-D·2-D is a matrix product; with more dims, the last two are the matrix
// and the leading (batch) dims broadcast: (B, 1, N, K)·(H, K, M) -> (B, H, N, M).
// With options, op(a)·op(b) as above: (B, T, d)·(B, S, d)ᵀ -> (B, T, S).
Tensor matmul(const Tensor& a, const Tensor& b, MatmulOptions options = {});

// Batched product of 3-D tensors: (B, N, K)·(B, K, M) -> (B, N, M). No
// broadcasting. With options, op(a)·op(b): bmm(q, k, {.transpose_b = true})
// is (B, Q, d)·(B, K, d)ᵀ -> (B, Q, K), attention's scores.
Tensor bmm(const Tensor& a, const Tensor& b, MatmulOptions options = {});

// PyTorch's F.linear, the op under nn::Linear: y = x·Wᵀ + b.
//   x (…, K), weight (N, K), bias (N) or undefined -> y (…, N)
// One GEMM that reads W transposed, instead of a transpose and a matmul:
//   dx = dy·W      dW = dyᵀ·x      db = Σ_rows dy
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace qkv
