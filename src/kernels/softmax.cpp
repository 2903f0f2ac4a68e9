// Softmax and log-softmax along the middle axis of an (outer, n, inner) view.
//
//   softmax(x)ₖ     = exp(xₖ - m) / Σⱼ exp(xⱼ - m)
//   log_softmax(x)ₖ = (xₖ - m) - log Σⱼ exp(xⱼ - m)          with m = maxⱼ xⱼ
//
// inner == 1 (the last dim: every attention row, every classifier's logits) is
// the SIMD path, one contiguous row at a time in three passes: max, exp-and-sum,
// write. inner > 1 runs the reference's scalar code down each strided column.
//
// x and y may be the same array: every pass reads xₖ before it writes yₖ.
//
// Left out on purpose: the one-pass "online" softmax that FlashAttention uses
// (it rescales a running sum whenever the max grows), and SIMD for inner > 1.
#include "kernels/softmax.hpp"

#include <cmath>
#include <limits>

#include "kernels/simd.hpp"

namespace qkv::kernels {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- scalar: one column x[k · stride], k < n ---------------------------------------

// NOTE: a NaN may be skipped by the max, but it still reaches the sum, so a
// row holding a NaN comes out all NaN, as in PyTorch.
float column_max(int64_t n, int64_t stride, const float* x) {
  float m = -kInf;
  for (int64_t k = 0; k < n; ++k) m = std::max(m, x[k * stride]);
  return m;
}

void softmax_column(int64_t n, int64_t stride, const float* x, float* y) {
  float m = column_max(n, stride, x);
  float sum = 0.0f;
  for (int64_t k = 0; k < n; ++k) sum += std::exp(x[k * stride] - m);  // every term ≤ 1
  for (int64_t k = 0; k < n; ++k) y[k * stride] = std::exp(x[k * stride] - m) / sum;
}

void log_softmax_column(int64_t n, int64_t stride, const float* x, float* y) {
  float m = column_max(n, stride, x);
  float sum = 0.0f;
  for (int64_t k = 0; k < n; ++k) sum += std::exp(x[k * stride] - m);
  // Subtract m first, then log Σ: (xₖ - m) is exact for nearby values, while
  // folding m + log Σ into one number would round log Σ away next to a large m.
  float log_sum = std::log(sum);
  for (int64_t k = 0; k < n; ++k) y[k * stride] = (x[k * stride] - m) - log_sum;
}

// ---- SIMD: one contiguous row x[0:n] ---------------------------------------------

float row_max(int64_t n, const float* x) {
  batch m(-kInf);
  int64_t k = 0;
  for (; k + W <= n; k += W) m = xsimd::max(m, batch::load_unaligned(x + k));
  alignas(64) float lanes[W];
  m.store_aligned(lanes);
  float r = -kInf;
  for (int64_t l = 0; l < W; ++l) r = std::max(r, lanes[l]);
  for (; k < n; ++k) r = std::max(r, x[k]);
  return r;
}

void softmax_row(int64_t n, const float* x, float* y) {
  const float m = row_max(n, x);
  const batch vm(m);

  // y = exp(x - m), summed on the way.
  batch vsum(0.0f);
  int64_t k = 0;
  for (; k + W <= n; k += W) {
    batch e = xsimd::exp(batch::load_unaligned(x + k) - vm);
    e.store_unaligned(y + k);
    vsum += e;
  }
  float sum = xsimd::hadd(vsum);
  for (; k < n; ++k) {
    y[k] = std::exp(x[k] - m);
    sum += y[k];
  }

  // y /= Σ: one division, then multiplications.
  const float inv_sum = 1.0f / sum;
  const batch vinv(inv_sum);
  k = 0;
  for (; k + W <= n; k += W) (batch::load_unaligned(y + k) * vinv).store_unaligned(y + k);
  for (; k < n; ++k) y[k] *= inv_sum;
}

void log_softmax_row(int64_t n, const float* x, float* y) {
  const float m = row_max(n, x);
  const batch vm(m);

  // Σ exp(x - m); unlike softmax the exponentials are not kept.
  batch vsum(0.0f);
  int64_t k = 0;
  for (; k + W <= n; k += W) vsum += xsimd::exp(batch::load_unaligned(x + k) - vm);
  float sum = xsimd::hadd(vsum);
  for (; k < n; ++k) sum += std::exp(x[k] - m);

  // y = (x - m) - log Σ, in that order (see log_softmax_column).
  const float log_sum = std::log(sum);
  const batch vlog_sum(log_sum);
  k = 0;
  for (; k + W <= n; k += W) ((batch::load_unaligned(x + k) - vm) - vlog_sum).store_unaligned(y + k);
  for (; k < n; ++k) y[k] = (x[k] - m) - log_sum;
}

}  // namespace

// ---- public kernels --------------------------------------------------------------

// Column (o, i) of the (outer, n, inner) view starts at x[o·n·inner + i] and
// has stride inner.
void softmax_reference(int64_t outer, int64_t n, int64_t inner, const float* x, float* y) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) softmax_column(n, inner, x + o * n * inner + i, y + o * n * inner + i);
}

void softmax(int64_t outer, int64_t n, int64_t inner, const float* x, float* y) {
  if (inner != 1) return softmax_reference(outer, n, inner, x, y);
  for (int64_t o = 0; o < outer; ++o) softmax_row(n, x + o * n, y + o * n);
}

void log_softmax_reference(int64_t outer, int64_t n, int64_t inner, const float* x, float* y) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) log_softmax_column(n, inner, x + o * n * inner + i, y + o * n * inner + i);
}

void log_softmax(int64_t outer, int64_t n, int64_t inner, const float* x, float* y) {
  if (inner != 1) return log_softmax_reference(outer, n, inner, x, y);
  for (int64_t o = 0; o < outer; ++o) log_softmax_row(n, x + o * n, y + o * n);
}

}  // namespace qkv::kernels
