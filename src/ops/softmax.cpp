// softmax and log_softmax along any dim, and d2l's masked_softmax: each
// forward and each backward is one kernel call over the (outer, n, inner)
// view of util.hpp (kernels/softmax.hpp).
//
// The backwards could be written with ops (mul, sub, sum with keepdim), and
// masked_softmax as a comparison mask, where and softmax; tests/ops/test_softmax.cpp
// keeps those compositions and holds these ops equal to them. As kernels they
// make no temporaries and no extra graph nodes, which is what the lessons'
// small attention rows cost most.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/ops/softmax.hpp>

#include <string>
#include <utility>
#include <vector>

#include "kernels/softmax.hpp"
#include "ops/util.hpp"

namespace qkv {

// yₖ = exp(xₖ) / Σⱼ exp(xⱼ)  along dim
// dx = y ⊙ (dy - Σⱼ dyⱼ yⱼ)   (the Jacobian diag(y) - y yᵀ applied to dy)
Tensor softmax(const Tensor& x, int64_t dim) {
  detail::check_input(x, "softmax", "x");
  int64_t d = normalize_dim(dim, x.dim(), "softmax");
  const detail::AxisView v = detail::axis_view(x.shape(), d);  // (outer, n, inner), softmax along n
  Tensor out = Tensor::empty(x.shape());
  if (out.numel() > 0) kernels::softmax(v.outer, v.n, v.inner, x.data(), out.data());
  // The backward reads y: out is saved (record() keeps it detached, see autograd.hpp).
  // dx is written over dy when nothing else sees dy (reuse_or_empty): the
  // kernel reads each row of dy whole before it writes that row of dx.
  record(out, "SoftmaxBackward", {x}, /*saved=*/{out},
         [v](const SavedTensors& saved, const Tensor& dy) -> std::vector<Tensor> {
           const Tensor& y = saved[0];
           Tensor dx = reuse_or_empty(dy);
           if (dx.numel() > 0) kernels::softmax_backward(v.outer, v.n, v.inner, y.data(), dy.data(), dx.data());
           return {dx};
         });
  return out;
}

// yₖ = xₖ - log Σⱼ exp(xⱼ)    along dim
// dx = dy - softmax(x) · Σⱼ dyⱼ,  with softmax(x) = exp(y)
Tensor log_softmax(const Tensor& x, int64_t dim) {
  detail::check_input(x, "log_softmax", "x");
  int64_t d = normalize_dim(dim, x.dim(), "log_softmax");
  const detail::AxisView v = detail::axis_view(x.shape(), d);  // (outer, n, inner), along n
  Tensor out = Tensor::empty(x.shape());
  if (out.numel() > 0) kernels::log_softmax(v.outer, v.n, v.inner, x.data(), out.data());
  record(out, "LogSoftmaxBackward", {x}, /*saved=*/{out},
         [v](const SavedTensors& saved, const Tensor& dy) -> std::vector<Tensor> {
           const Tensor& y = saved[0];
           Tensor dx = reuse_or_empty(dy);  // over dy when nothing else sees it, as softmax's
           if (dx.numel() > 0) kernels::log_softmax_backward(v.outer, v.n, v.inner, y.data(), dy.data(), dx.data());
           return {dx};
         });
  return out;
}

// d2l's masked_softmax (d2l.ai, "Attention Scoring Functions"):
//   x (B, Q, K) scores; valid_lens (B) or (B, Q)
//   x[b, q, k] = -1e6  where k ≥ valid_lens[b] (or valid_lens[b, q])
//   softmax(x, -1)     -> (B, Q, K), zero weight on the masked keys
// The mask is applied while the kernel copies each row (no comparison mask, no
// `where`); the masked keys get no gradient, as they would through where.
// NOTE: -1e6, not -inf, as d2l: a row whose valid length is 0 then gets
// uniform weights 1/K instead of 0/0 = NaN. A length above K keeps every key.
Tensor masked_softmax(const Tensor& x, const IntTensor& valid_lens) {
  detail::check_input(x, "masked_softmax", "x");
  if (!valid_lens.defined()) return softmax(x, -1);
  if (x.dim() != 3) fail("masked_softmax: x must be 3-D (B, Q, K), got {}", x.shape());
  const int64_t B = x.size(0), Q = x.size(1), K = x.size(2);
  const bool per_batch = valid_lens.shape() == Shape{B};   // (B): one length for every query of batch b
  const bool per_row = valid_lens.shape() == Shape{B, Q};  // (B, Q): one length per query row
  if (!per_batch && !per_row) {
    fail("masked_softmax: valid_lens {} does not fit x {}: expected ({}) or ({}, {})", valid_lens.shape(), x.shape(), B,
         B, Q);
  }

  const int64_t* lens = valid_lens.data();
  for (int64_t i = 0; i < valid_lens.numel(); ++i) {
    if (lens[i] < 0) {
      std::string at = per_batch ? fmt::format("[{}]", i) : fmt::format("[{}, {}]", i / Q, i % Q);
      fail("masked_softmax: valid_lens{} is {}; lengths must be ≥ 0", at, lens[i]);
    }
  }

  // One length per row of x seen as (B·Q, K): valid_lens[b] for every q, or valid_lens[b, q].
  std::vector<int64_t> row_lens(static_cast<size_t>(B * Q));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t q = 0; q < Q; ++q) row_lens[static_cast<size_t>(b * Q + q)] = lens[per_batch ? b : b * Q + q];

  Tensor out = Tensor::empty(x.shape());  // (B, Q, K)
  if (out.numel() > 0) kernels::masked_softmax(B * Q, K, row_lens.data(), x.data(), out.data());
  record(out, "MaskedSoftmaxBackward", {x}, /*saved=*/{out},
         [row_lens = std::move(row_lens), B, Q, K](const SavedTensors& saved, const Tensor& dy) -> std::vector<Tensor> {
           const Tensor& y = saved[0];
           Tensor dx = reuse_or_empty(dy);  // over dy when nothing else sees it, as softmax's
           if (dx.numel() > 0)
             kernels::masked_softmax_backward(B * Q, K, row_lens.data(), y.data(), dy.data(), dx.data());
           return {dx};
         });
  return out;
}

// --- as Tensor methods (tensor.hpp): x.softmax(d) is softmax(x, d) ---------------

Tensor Tensor::softmax(int64_t dim) const { return qkv::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return qkv::log_softmax(*this, dim); }

}  // namespace qkv
