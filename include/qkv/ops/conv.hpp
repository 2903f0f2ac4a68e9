// 1-D convolution, PyTorch's F.conv1d (groups = 1), as im2col and one GEMM.
//
//   input (N, C_in, L), weight (C_out, C_in, K), bias (C_out) or undefined
//   -> out (N, C_out, L_out),  L_out = ⌊(L + 2·padding − dilation·(K − 1) − 1) / stride⌋ + 1
//   out[n, o, t] = bias[o] + Σ_c Σ_k weight[o, c, k] · x[n, c, t·stride + k·dilation − padding]
// where x is zero outside 0 ≤ position < L (the padding).
//
// Like PyTorch (and every deep-learning library) it is a cross-correlation:
// the kernel is not flipped.
#pragma once
#include <qkv/core/tensor.hpp>

namespace qkv {

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
              int64_t padding = 0, int64_t dilation = 1);

// The unfolded input the convolution multiplies, exposed for tests and lessons:
//   input (N, C, L) -> cols (N, L_out, C·K),  cols[n, t, c·K + k] = x[n, c, t·stride + k·dilation − padding]
// (0 in the padding). Its backward, col2im, adds every column entry back
// into the input position it was read from.
Tensor im2col1d(const Tensor& input, int64_t kernel_size, int64_t stride = 1, int64_t padding = 0,
                int64_t dilation = 1);

}  // namespace qkv
