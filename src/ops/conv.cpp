// conv1d as im2col and one GEMM, so the convolution runs on the same packed
// SIMD kernel as matmul and nn::Linear.
//
// Letters: N batch, C channels in (C_in), O channels out (C_out), L input
// length, K kernel size, T output length (L_out); s stride, p padding, d dilation.
//
//   im2col: cols[n, t, c·K + k] = x[n, c, t·s + k·d − p]        (0 where that is outside [0, L))
//   conv:   out = cols · Wᵀ + b      (N·T, C·K)·(C·K, O) -> (N·T, O), then (N, T, O) -> (N, O, T)
//
// The product and its gradients (dW = dyᵀ·cols, db = Σ dy, dcols = dy·W)
// are linear's; the one backward written here is im2col's, col2im: every
// input position is read by several windows when the windows overlap
// (K·d > s), so its gradient is the SUM of the column entries read from it:
//   dx[n, c, i] = Σ_{t, k : t·s + k·d − p = i} dcols[n, t, c·K + k]
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/ops/conv.hpp>
#include <qkv/ops/linalg.hpp>
#include <qkv/ops/shape_ops.hpp>

#include <algorithm>

#include "ops/util.hpp"

namespace qkv {

namespace {

struct Window {
  int64_t kernel_size, stride, padding, dilation;
};

void check_window(const char* op, const Window& w) {
  if (w.kernel_size < 1) fail("{}: kernel size {} must be ≥ 1", op, w.kernel_size);
  if (w.stride < 1) fail("{}: stride {} must be ≥ 1", op, w.stride);
  if (w.dilation < 1) fail("{}: dilation {} must be ≥ 1", op, w.dilation);
  if (w.padding < 0) fail("{}: padding {} must be ≥ 0", op, w.padding);
}

// T = ⌊(L + 2p − d·(K − 1) − 1) / s⌋ + 1, or an error when the dilated kernel,
// which spans d·(K − 1) + 1 positions, is longer than the padded input.
int64_t output_length(const char* op, const Shape& input, int64_t L, const Window& w) {
  // NOTE: a huge padding or dilation overflows int64 here; unchecked, the
  // wrapped sizes gave a wrong L_out and a result of the wrong shape.
  int64_t padded = 0, span = 0;
  if (__builtin_mul_overflow(w.padding, 2, &padded) || __builtin_add_overflow(padded, L, &padded))
    fail("{}: input {} padded by {} on each side: the padded length overflows int64", op, input, w.padding);
  if (__builtin_mul_overflow(w.dilation, w.kernel_size - 1, &span) || __builtin_add_overflow(span, 1, &span))
    fail("{}: kernel size {} with dilation {}: the span d·(K − 1) + 1 overflows int64", op, w.kernel_size, w.dilation);
  if (padded < span) {
    const int64_t short_by = span - padded;  // L_out = ⌊−short_by / s⌋ + 1 = 1 − ⌈short_by / s⌉
    fail(
        "{}: input {} is too short: length {} padded by {} on each side is {}, but kernel size {} with dilation {} "
        "spans {} positions, so L_out = {} < 1",
        op, input, L, w.padding, padded, w.kernel_size, w.dilation, span, -((short_by - 1) / w.stride));
  }
  return (padded - span) / w.stride + 1;
}

// The loop both directions share: for every (n, t, c, k) the column entry
// cols[n, t, c·K + k] and the input position i = t·s + k·d − p it reads.
template <class Fn>
void for_each_tap(int64_t N, int64_t C, int64_t L, int64_t T, const Window& w, Fn&& fn) {
  const int64_t K = w.kernel_size;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t k = 0; k < K; ++k) {
          const int64_t i = t * w.stride + k * w.dilation - w.padding;
          if (i < 0 || i >= L) continue;                           // padding: the entry stays 0
          fn(((n * T + t) * C + c) * K + k, (n * C + c) * L + i);  // (column index, input index)
        }
}

// x (N, C, L) -> cols (N, T, C·K), for `op` (im2col1d, or conv1d, built
// on it: the op named in the errors). The window is checked already.
Tensor im2col(const Tensor& input, const Window& w, const char* op) {
  if (input.dim() != 3) fail("{}: input {} must be 3-D (N, C, L)", op, input.shape());
  const int64_t N = input.size(0), C = input.size(1), L = input.size(2);
  const int64_t T = output_length(op, input.shape(), L, w);
  Tensor cols = Tensor::empty({N, T, checked_mul(C, w.kernel_size, op)}, op);
  std::fill_n(cols.data(), cols.numel(), 0.0f);  // zeros: the padding taps are never written
  float* out = cols.data();
  const float* x = input.data();
  for_each_tap(N, C, L, T, w, [&](int64_t col, int64_t in) { out[col] = x[in]; });
  // col2im: in the forward pass this was cols[col] = x[in]; several columns
  // may read the same x[in], so its gradient adds them all.
  record(cols, "Im2col1dBackward", {input}, /*saved=*/{},
         [shape = input.shape(), N, C, L, T, w](const SavedTensors&, const Tensor& dcols) {
           Tensor dx = zeros(shape);  // (N, C, L)
           float* g = dx.data();
           const float* dc = dcols.data();
           for_each_tap(N, C, L, T, w, [&](int64_t col, int64_t in) { g[in] += dc[col]; });
           return std::vector<Tensor>{dx};
         });
  return cols;
}

}  // namespace

Tensor im2col1d(const Tensor& input, int64_t kernel_size, int64_t stride, int64_t padding, int64_t dilation) {
  const Window w{kernel_size, stride, padding, dilation};
  check_window("im2col1d", w);
  detail::check_input(input, "im2col1d", "input");
  return im2col(input, w, "im2col1d");
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
              int64_t dilation) {
  detail::check_input(input, "conv1d", "input");
  detail::check_input(weight, "conv1d", "weight");
  if (input.dim() != 3) fail("conv1d: input {} must be 3-D (N, C_in, L)", input.shape());
  if (weight.dim() != 3) fail("conv1d: weight {} must be 3-D (C_out, C_in, K)", weight.shape());
  const int64_t C = input.size(1), O = weight.size(0), K = weight.size(2);
  if (weight.size(1) != C)
    fail("conv1d: input {} has {} channels, but weight {} expects {}", input.shape(), C, weight.shape(),
         weight.size(1));
  if (bias.defined() && bias.shape() != Shape{O})
    fail("conv1d: bias {} does not fit weight {}: expected ({})", bias.shape(), weight.shape(), O);
  const Window w{K, stride, padding, dilation};
  check_window("conv1d", w);

  Tensor cols = im2col(input, w, "conv1d");  // (N, C, L) -> (N, T, C·K)
  Tensor w2 = reshape(weight, {O, C * K});   // (O, C, K) -> (O, C·K), the same order as a column
  Tensor y = linear(cols, w2, bias);         // (N, T, C·K)·(C·K, O) + b -> (N, T, O)
  return transpose(y, 1, 2);                 // (N, T, O) -> (N, O, T)
}

}  // namespace qkv
