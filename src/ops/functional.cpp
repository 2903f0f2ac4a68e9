// Layer-level functions: dropout, layer_norm, fused_gru_cell, cross_entropy,
// mse_loss, cosine_similarity and normalize.
//
// Most of them have no hand-written backward. Each is a few primitive ops
// (elementwise, reduction, softmax, shape_ops) in a row, and autograd
// differentiates it through them. Three are called so often in training that
// each is one kernel each way, its backward written out beside it:
// layer_norm (every Transformer block), fused_gru_cell (every GRU step) and
// cross_entropy (every step's loss, on the largest output). dropout is one
// kernel forward that draws the mask and writes y.
//
// Dims: N batch, C classes, D the features a row is normalised over.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/ops.hpp>

#include <cmath>
#include <utility>
#include <vector>

#include "kernels/dropout.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/gru.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/softmax.hpp"
#include "ops/util.hpp"

namespace qkv {

namespace {

// max(x, lo) elementwise, with clamp_min's gradient: it passes where x ≥ lo
// and is 0 where lo was taken (masked_fill sends no gradient to filled elements).
Tensor clamp_min(const Tensor& x, float lo) { return masked_fill(x, lt(x, lo), lo); }

// The p-norm along dim, kept as a size-1 dim and never below eps:
//   max(‖x‖_p, eps) = max((Σ |x|^p)^(1/p), eps)              (*, D, *) -> (*, 1, *)
// NOTE: the clamp is applied to Σ|x|^p (at eps^p), before the root. The value
// is the same (the root is increasing), but a zero vector then sends no
// gradient into the root, whose derivative at 0 is infinite (0·∞ = NaN).
Tensor clamped_norm(const Tensor& x, float p, int64_t dim, float eps) {
  if (std::isinf(p)) return clamp_min(max(abs(x), dim, /*keepdim=*/true), eps);  // max |x|
  if (p == 2) return sqrt(clamp_min(sum(x * x, dim, /*keepdim=*/true), eps * eps));
  const float eps_p = static_cast<float>(std::pow(static_cast<double>(eps), static_cast<double>(p)));
  return pow(clamp_min(sum(pow(abs(x), p), dim, /*keepdim=*/true), eps_p), 1 / p);
}

// (N, C, d1, …) -> (N, d1, …, C) -> (R, C): row n·d1·… + j is target element n·d1·… + j.
Tensor class_last_rows(const Tensor& logits, int64_t R, int64_t C) {
  std::vector<int64_t> class_last{0};
  for (int64_t d = 2; d < logits.dim(); ++d) class_last.push_back(d);
  class_last.push_back(1);
  return reshape(permute(logits, class_last), Shape{R, C});
}

}  // namespace

// --- dropout -------------------------------------------------------------------

// y = x ⊙ mask,  mask = 0 with probability p, else 1/(1-p)   (so E[y] = x)
// dx = dy ⊙ mask. The mask and y come from one kernel pass (kernels/dropout.hpp)
// that draws the generator's next numel() uniforms, the same numbers, in the
// same order, as calling gen.uniform() once per element.
Tensor dropout(const Tensor& x, float p, bool training, Generator& gen) {
  detail::check_input(x, "dropout", "x");
  if (!(p >= 0 && p <= 1)) fail("dropout: probability has to be between 0 and 1, but got {}", p);
  if (!training || p == 0) return x;
  // p == 1 drops every element: the mask is all zeros (never 1/0), as PyTorch's.
  const float scale = p < 1 ? 1 / (1 - p) : 0.0f;
  Tensor mask = Tensor::empty(x.shape());
  Tensor y = Tensor::empty(x.shape());
  // take: this mask's stretch of the stream, which no other thread drawing from gen can get.
  const uint64_t start = gen.take(static_cast<uint64_t>(x.numel()));
  kernels::dropout(x.numel(), start, p, scale, x.data(), y.data(), mask.data());
  record(y, "DropoutBackward", {x}, /*saved=*/{mask},
         [](const SavedTensors& saved, const Tensor& dy) -> std::vector<Tensor> {
           Tensor dx = reuse_or_empty(dy);  // over dy when nothing else sees it
           kernels::binary(kernels::Binary::Mul, dy.numel(), dy.data(), 1, saved[0].data(), 1, dx.data());
           return {dx};
         });
  return y;
}

// --- layer_norm ----------------------------------------------------------------

// Each row of D = normalized_shape.numel() trailing elements is normalised:
//   μ = mean(x)   σ² = mean((x - μ)²)   y = (x - μ) / sqrt(σ² + eps) · weight + bias
// One kernel pass each way (kernels/layer_norm.hpp), which keeps μ and
// 1/sqrt(σ² + eps) per row for the backward:
//   dx = rstd · (g - mean(g) - x̂ · mean(g ⊙ x̂))    g = dy ⊙ weight, x̂ = (x - μ) · rstd
//   dweight = Σ_rows dy ⊙ x̂,   dbias = Σ_rows dy
// The same normalisation composed from mean, sub, mul, sqrt and div is nine
// ops and temporaries; tests/ops/test_functional.cpp keeps that composition
// and holds this op equal to it.
// NOTE: σ² is computed from the centred values (two passes), not as
// E[x²] - μ², which in float32 cancels to garbage when |μ| ≫ σ (x ≈ 1e4 + noise).
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias, float eps) {
  detail::check_input(x, "layer_norm", "x");
  const int64_t k = normalized_shape.ndim();
  if (k == 0) fail("layer_norm: normalized_shape is empty; give the trailing dims to normalise over");
  bool fits = k <= x.dim();
  for (int64_t i = 0; fits && i < k; ++i) fits = x.shape()[x.dim() - k + i] == normalized_shape[i];
  if (!fits)
    fail("layer_norm: normalized_shape {} does not match the trailing dims of x {}", normalized_shape, x.shape());
  if (weight.defined() && weight.shape() != normalized_shape)
    fail("layer_norm: weight shape {} should be normalized_shape {}", weight.shape(), normalized_shape);
  if (bias.defined() && bias.shape() != normalized_shape)
    fail("layer_norm: bias shape {} should be normalized_shape {}", bias.shape(), normalized_shape);

  const int64_t D = normalized_shape.numel();
  const int64_t R = D > 0 ? x.numel() / D : 0;  // the rows: the product of the leading (not normalised) dims
  const float* w = weight.defined() ? weight.data() : nullptr;
  const float* b = bias.defined() ? bias.data() : nullptr;

  Tensor y = Tensor::empty(x.shape());    // x's shape, seen as (R, D)
  Tensor mean = Tensor::empty(Shape{R});  // (R)
  Tensor rstd = Tensor::empty(Shape{R});  // (R): 1 / sqrt(σ² + eps)
  kernels::layer_norm(R, D, x.data(), w, b, eps, y.data(), mean.data(), rstd.data());
  record(y, "LayerNormBackward", {x, weight, bias}, /*saved=*/{x, weight, mean, rstd},
         [has_bias = bias.defined(), R, D, normalized_shape](const SavedTensors& saved,
                                                             const Tensor& dy) -> std::vector<Tensor> {
           const bool has_weight = saved[1].defined();
           Tensor dx = Tensor::empty(saved[0].shape());
           Tensor dweight = has_weight ? zeros(normalized_shape) : Tensor();  // the kernel adds into these
           Tensor dbias = has_bias ? zeros(normalized_shape) : Tensor();
           kernels::layer_norm_backward(R, D, saved[0].data(), has_weight ? saved[1].data() : nullptr, saved[2].data(),
                                        saved[3].data(), dy.data(), dx.data(), has_weight ? dweight.data() : nullptr,
                                        has_bias ? dbias.data() : nullptr);
           return {dx, dweight, dbias};
         });
  return y;
}

// --- the GRU cell ----------------------------------------------------------------

// One GRU step from its gate pre-activations (see functional.hpp), forward and
// backward one kernel pass each (kernels/gru.hpp). The same step composed from
// chunk, sigmoid, tanh, mul and add is twelve ops and graph nodes;
// tests/nn/test_rnn.cpp keeps that composition and holds this op equal to it.
Tensor fused_gru_cell(const Tensor& xw, const Tensor& hw, const Tensor& h) {
  detail::check_input(xw, "fused_gru_cell", "xw", 2, 2);
  detail::check_input(hw, "fused_gru_cell", "hw", 2, 2);
  detail::check_input(h, "fused_gru_cell", "h", 2, 2);
  const int64_t B = h.size(0), H = h.size(1);
  if (xw.shape() != Shape{B, 3 * H} || hw.shape() != Shape{B, 3 * H})
    fail("fused_gru_cell: xw {} and hw {} should both be ({}, {}) for h {}", xw.shape(), hw.shape(), B, 3 * H,
         h.shape());

  Tensor h_next = Tensor::empty(Shape{B, H});     // (B, H)
  Tensor gates = Tensor::empty(Shape{B, 3 * H});  // (B, 3H): r, z, n, for the backward
  kernels::gru_cell(B, H, xw.data(), hw.data(), h.data(), h_next.data(), gates.data());
  record(h_next, "FusedGruCellBackward", {xw, hw, h}, /*saved=*/{hw, h, gates},
         [B, H](const SavedTensors& saved, const Tensor& dh_next) -> std::vector<Tensor> {
           Tensor dxw = Tensor::empty(Shape{B, 3 * H}), dhw = Tensor::empty(Shape{B, 3 * H});
           Tensor dh = Tensor::empty(Shape{B, H});
           kernels::gru_cell_backward(B, H, saved[0].data(), saved[1].data(), saved[2].data(), dh_next.data(),
                                      dxw.data(), dhw.data(), dh.data());
           return {dxw, dhw, dh};
         });
  return h_next;
}

// --- losses --------------------------------------------------------------------

// loss[n, …] = (1-ε) · nll[n, …] + ε/C · smooth[n, …]                 (PyTorch 1.13's definition)
//   nll[n, …]    = -w[t] · logp[n, t, …]          t = target[n, …], logp = log_softmax(logits, 1)
//   smooth[n, …] = -Σ_c w[c] · logp[n, c, …]      the loss against the uniform distribution
// w is `weight` (1 for every class when undefined). Targets equal to
// ignore_index get 0 in both terms, and Mean divides the sum of both by
// Σ w[t] over the targets that count.
//
// One kernel pass per row of C logits gives the loss (kernels/softmax.hpp),
// and one more the gradient, dlogits = dloss · (a·softmax - (1-ε)·w[t]·onehot(t) - ε/C·w)
// with a = (1-ε)·w[t] + ε/C·Σw. The same loss composed from log_softmax,
// index_select, masked_fill and sum makes six full-size temporaries in its
// backward; tests/ops/test_functional.cpp keeps that composition and holds
// this op equal to it. Logits (N, C, d1, …) are first permuted to rows of C.
Tensor cross_entropy(const Tensor& logits, const IntTensor& target, const Tensor& weight, int64_t ignore_index,
                     Reduction reduction, float label_smoothing) {
  detail::check_input(logits, "cross_entropy", "logits");
  detail::check_input(target, "cross_entropy", "target");
  if (logits.dim() == 0) fail("cross_entropy: logits must be (C), (N, C) or (N, C, d1, ...), got {}", logits.shape());
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    fail("cross_entropy: label_smoothing must be between 0.0 and 1.0, got {}", label_smoothing);
  if (reduction != Reduction::None && reduction != Reduction::Mean && reduction != Reduction::Sum)
    fail("cross_entropy: reduction {} is not Reduction::None, Mean or Sum", static_cast<int>(reduction));
  const int64_t C = logits.size(logits.dim() == 1 ? 0 : 1);
  if (C == 0) fail("cross_entropy: logits {} have no classes (C = 0)", logits.shape());
  if (weight.defined() && weight.shape() != Shape{C})
    fail("cross_entropy: weight {} should be ({}), one per class of logits {}", weight.shape(), C, logits.shape());
  if (logits.dim() == 1) {  // unbatched: logits (C) with target () is a batch of one
    if (target.dim() != 0)
      fail("cross_entropy: target shape {} does not match logits {}: expected ()", target.shape(), logits.shape());
    Tensor loss = cross_entropy(reshape(logits, Shape{1, C}), target.reshape(Shape{1}), weight, ignore_index, reduction,
                                label_smoothing);
    return reduction == Reduction::None ? reshape(loss, Shape{}) : loss;
  }
  const Shape expected = detail::reduced_shape(logits.shape(), 1, /*keepdim=*/false);  // (N, d1, …)
  if (target.shape() != expected)
    fail("cross_entropy: target shape {} does not match logits {}: expected {}", target.shape(), logits.shape(),
         expected);

  const float* w = weight.defined() ? weight.data() : nullptr;
  const int64_t R = target.numel();  // one row of C logits per target
  const int64_t* t = target.data();
  double total_weight = 0;  // the Mean's divisor: Σ w[t] over the targets that count
  for (int64_t i = 0; i < R; ++i) {
    if (t[i] == ignore_index) continue;
    if (t[i] < 0 || t[i] >= C)
      fail("cross_entropy: target {} out of range for {} classes (at index {} of target {})", t[i], C, i,
           target.shape());
    total_weight += w != nullptr ? w[t[i]] : 1.0f;
  }

  const Tensor rows = logits.dim() > 2 ? class_last_rows(logits, R, C) : logits;  // (R, C)
  Tensor loss = Tensor::empty(Shape{R});                                          // (R)
  Tensor stats = Tensor::empty(Shape{R, 2});  // (R, 2): each row's max and log Σ exp, for the backward
  kernels::cross_entropy(R, C, rows.data(), t, w, ignore_index, label_smoothing, loss.data(), stats.data());
  // NOTE: weight is a constant here, as in PyTorch: no gradient reaches it.
  record(loss, "CrossEntropyBackward", {rows}, /*saved=*/{rows, target, weight, stats},
         [R, C, ignore_index, label_smoothing](const SavedTensors& saved, const Tensor& dloss) -> std::vector<Tensor> {
           const Tensor& class_weight = saved[2];  // undefined without one
           Tensor dx = Tensor::empty(Shape{R, C});
           kernels::cross_entropy_backward(R, C, saved[0].data(), saved[3].data(), saved.int_tensor(1).data(),
                                           class_weight.defined() ? class_weight.data() : nullptr, ignore_index,
                                           label_smoothing, dloss.data(), dx.data());
           return {dx};
         });
  loss = reshape(loss, expected);  // (N, d1, …)

  switch (reduction) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return sum(loss);
    case Reduction::Mean:
      break;
  }
  // With every target ignored this is 0/0 = NaN, as in PyTorch.
  return sum(loss) / static_cast<float>(total_weight);
}

// loss = (x - target)², reduced; the gradient reaches both x and target.
Tensor mse_loss(const Tensor& x, const Tensor& target, Reduction reduction) {
  detail::check_input(x, "mse_loss", "x");
  detail::check_input(target, "mse_loss", "target");
  if (x.shape() != target.shape())
    fail("mse_loss: x {} and target {} have different shapes", x.shape(), target.shape());
  Tensor diff = x - target;
  Tensor sq = diff * diff;
  switch (reduction) {
    case Reduction::None:
      return sq;
    case Reduction::Sum:
      return sum(sq);
    case Reduction::Mean:
      break;
  }
  return mean(sq);
}

// --- similarity and normalisation ------------------------------------------------

// cos(x1, x2) = Σ (x1 / max(‖x1‖, eps)) ⊙ (x2 / max(‖x2‖, eps))   along dim
// PyTorch's current formula: each norm is clamped on its own (older PyTorch
// docs clamp the product, max(‖x1‖·‖x2‖, eps)). Dividing by the norms before
// multiplying keeps the result in [-1, 1]. x1 and x2 broadcast, and dim indexes the
// broadcast shape: (*, D, *) , (*, D, *) -> (*, *).
// NOTE: where 0 < ‖x‖ < eps, PyTorch lets the gradient through its clamp and
// qkv does not (as clamp_min), so gradients differ there; values agree.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, float eps) {
  detail::check_input(x1, "cosine_similarity", "x1");
  detail::check_input(x2, "cosine_similarity", "x2");
  const Shape shape = broadcast_shapes(x1.shape(), x2.shape(), "cosine_similarity");
  const int64_t d = normalize_dim(dim, shape.ndim(), "cosine_similarity");
  // Expand first: if x1 has size 1 along dim, its norm is that of the repeated vector.
  Tensor a = x1.shape() == shape ? x1 : expand(x1, shape);  // (*, D, *)
  Tensor b = x2.shape() == shape ? x2 : expand(x2, shape);  // (*, D, *)
  Tensor a_unit = a / clamped_norm(a, 2, d, eps);           // (*, D, *) / (*, 1, *)
  Tensor b_unit = b / clamped_norm(b, 2, d, eps);
  return sum(a_unit * b_unit, d);  // (*, *)
}

// y = x / max(‖x‖_p, eps)   along dim; p = 2 by default, p = ∞ is max |x|.
Tensor normalize(const Tensor& x, float p, int64_t dim, float eps) {
  detail::check_input(x, "normalize", "x");
  if (!(p > 0)) fail("normalize: p must be positive (or inf), got {}", p);
  const int64_t d = normalize_dim(dim, x.dim(), "normalize");
  return x / clamped_norm(x, p, d, eps);  // (*, D, *) / (*, 1, *)
}

}  // namespace qkv
