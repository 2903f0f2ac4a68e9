// Softmax and log-softmax along the middle axis of an (outer, n, inner) view,
// their backwards, d2l's masked softmax, and cross-entropy.
//
//   softmax(x)ₖ     = exp(xₖ - m) / Σⱼ exp(xⱼ - m)
//   log_softmax(x)ₖ = (xₖ - m) - log Σⱼ exp(xⱼ - m)          with m = maxⱼ xⱼ
//
// The file has the two sections every kernel file has (simd.hpp): the
// reference, plain loops down one column x[k · inner] of the view at a time,
// and the SIMD kernels, for inner == 1 (the last dim: every attention row,
// every classifier's logits), one contiguous row at a time in three passes:
// max, exp-and-sum, write. inner > 1 runs the reference down each column.
//
// Why the backwards and cross-entropy are kernels and not ops: composed from
// ops, each is four or five full-size temporaries and graph nodes per call,
// which for the lessons' small rows (10 keys, 201 classes) costs more than the
// arithmetic. Here each is one pass over a row that reads what it needs.
//
// x and y may be the same array: every pass reads xₖ before it writes yₖ.
//
// Every sum over a row is an ordered_sum (simd.hpp) and every exp and log
// qkv's own (math.hpp), in both sections, so the SIMD kernels and their
// references agree bit for bit, on every register width.
//
// Left out on purpose: the one-pass "online" softmax that FlashAttention uses
// (it rescales a running sum whenever the max grows), and SIMD for inner > 1.
// What was measured and tried: docs/kernel_notes.md.
#include "kernels/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/math.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace qkv::kernels {

// ==== reference: one column x[k · stride], k < n, at a time ==========================

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// NOTE: a NaN may be skipped by the max, but it still reaches the sum, so a
// row holding a NaN comes out all NaN, as in PyTorch.
float column_max(int64_t n, int64_t stride, const float* x) {
  float m = -kInf;
  for (int64_t k = 0; k < n; ++k) m = std::max(m, x[k * stride]);
  return m;
}

// Σₖ exp(xₖ - m), writing exp(xₖ - m) to y unless y is null (every term ≤ 1).
float exp_sum_column(int64_t n, int64_t stride, const float* x, float m, float* y) {
  return ordered_sum<float>(n, [&](float s, int64_t k) {
    const float e = math::exp(x[k * stride] - m);
    if (y != nullptr) y[k * stride] = e;
    return s + e;
  });
}

// y = exp(x - m) · (1 / Σ): one division, then multiplications.
void softmax_column(int64_t n, int64_t stride, const float* x, float* y) {
  const float m = column_max(n, stride, x);
  const float inv_sum = 1.0f / exp_sum_column(n, stride, x, m, y);
  for (int64_t k = 0; k < n; ++k) y[k * stride] *= inv_sum;
}

void log_softmax_column(int64_t n, int64_t stride, const float* x, float* y) {
  const float m = column_max(n, stride, x);
  // Subtract m first, then log Σ: (xₖ - m) is exact for nearby values, while
  // folding m + log Σ into one number would round log Σ away next to a large m.
  const float log_sum = math::log(exp_sum_column(n, stride, x, m, nullptr));
  for (int64_t k = 0; k < n; ++k) y[k * stride] = (x[k * stride] - m) - log_sum;
}

// dx = y ⊙ (dy - Σⱼ dyⱼ yⱼ)
void softmax_backward_column(int64_t n, int64_t stride, const float* y, const float* dy, float* dx) {
  const float dot = ordered_sum<float>(n, [&](float s, int64_t k) { return madd(dy[k * stride], y[k * stride], s); });
  for (int64_t k = 0; k < n; ++k) dx[k * stride] = y[k * stride] * (dy[k * stride] - dot);
}

// dx = dy - exp(y) · Σⱼ dyⱼ
void log_softmax_backward_column(int64_t n, int64_t stride, const float* y, const float* dy, float* dx) {
  const float sum = ordered_sum<float>(n, [&](float s, int64_t k) { return s + dy[k * stride]; });
  for (int64_t k = 0; k < n; ++k) dx[k * stride] = madd(-math::exp(y[k * stride]), sum, dy[k * stride]);
}

// d2l's mask, written while copying: x' = x on the first len entries, -1e6 after.
void mask_row(int64_t n, int64_t len, const float* x, float* y) {
  for (int64_t k = 0; k < n; ++k) y[k] = k < len ? x[k] : -1e6f;
}

// The masked entries get no gradient: dx = 0 from len on.
void zero_masked(int64_t n, int64_t len, float* dx) {
  for (int64_t k = std::max<int64_t>(len, 0); k < n; ++k) dx[k] = 0.0f;
}

// Column (o, i) of the (outer, n, inner) view starts at x[o·n·inner + i] and
// has stride inner: column(at) is called with that offset for every column.
template <class Column>
void each_column(int64_t outer, int64_t n, int64_t inner, Column column) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) column(o * n * inner + i);
}

}  // namespace

void softmax_reference(int64_t outer, int64_t n, int64_t inner, const float* x, float* y) {
  each_column(outer, n, inner, [&](int64_t at) { softmax_column(n, inner, x + at, y + at); });
}

void log_softmax_reference(int64_t outer, int64_t n, int64_t inner, const float* x, float* y) {
  each_column(outer, n, inner, [&](int64_t at) { log_softmax_column(n, inner, x + at, y + at); });
}

void softmax_backward_reference(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy, float* dx) {
  each_column(outer, n, inner, [&](int64_t at) { softmax_backward_column(n, inner, y + at, dy + at, dx + at); });
}

void log_softmax_backward_reference(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy,
                                    float* dx) {
  each_column(outer, n, inner, [&](int64_t at) { log_softmax_backward_column(n, inner, y + at, dy + at, dx + at); });
}

// ---- masked softmax ------------------------------------------------------------------

void masked_softmax_reference(int64_t rows, int64_t n, const int64_t* lens, const float* x, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    mask_row(n, lens[r], x + r * n, y + r * n);
    softmax_column(n, 1, y + r * n, y + r * n);
  }
}

// masked_softmax's backward: softmax's on each row, then 0 at the masked
// entries. NOTE: softmax's backward alone would send y·(dy - Σ dy y) to the
// masked entries, which is 0 where y underflowed to 0 but not in a row of
// length 0 (y = 1/n everywhere): those entries were replaced by -1e6, so x
// gets none.
void masked_softmax_backward_reference(int64_t rows, int64_t n, const int64_t* lens, const float* y, const float* dy,
                                       float* dx) {
  for (int64_t r = 0; r < rows; ++r) {
    softmax_backward_column(n, 1, y + r * n, dy + r * n, dx + r * n);
    zero_masked(n, lens[r], dx + r * n);
  }
}

// ---- cross-entropy ------------------------------------------------------------------
// Row i: logits x[i·C : (i+1)·C], stats[2i] = m, stats[2i + 1] = log Σ exp(x - m).

void cross_entropy_reference(int64_t N, int64_t C, const float* x, const int64_t* target, const float* weight,
                             int64_t ignore_index, float smoothing, float* loss, float* stats) {
  for (int64_t i = 0; i < N; ++i) {
    const float* row = x + i * C;
    const float m = column_max(C, 1, row);
    const float log_sum = math::log(exp_sum_column(C, 1, row, m, nullptr));
    stats[2 * i] = m;
    stats[2 * i + 1] = log_sum;
    const int64_t t = target[i];
    if (t == ignore_index) {
      loss[i] = 0.0f;
      continue;
    }
    const float w_t = weight != nullptr ? weight[t] : 1.0f;
    loss[i] = -w_t * ((row[t] - m) - log_sum);
    if (smoothing == 0) continue;
    // smooth = -Σ_c w[c] · logp[c], logp[c] = (x[c] - m) - log Σ
    const float smooth = -ordered_sum<float>(C, [&](float s, int64_t c) {
      const float logp = (row[c] - m) - log_sum;
      return weight != nullptr ? madd(weight[c], logp, s) : s + logp;
    });
    loss[i] = (1 - smoothing) * loss[i] + smoothing / static_cast<float>(C) * smooth;
  }
}

namespace {

// Σ_c w[c]: the smoothing term's share of dx is ε/C · (Σw · p - w).
float weight_sum(int64_t C, const float* weight) {
  if (weight == nullptr) return static_cast<float>(C);
  return ordered_sum<float>(C, [&](float s, int64_t c) { return s + weight[c]; });
}

}  // namespace

// dx = g·a·p - g·ε/C·w, p = exp((x - m) - log Σ), a = (1-ε)·w[t] + ε/C·Σw; then
// dx[t] -= g·(1-ε)·w[t], the one-hot target.
void cross_entropy_backward_reference(int64_t N, int64_t C, const float* x, const float* stats, const int64_t* target,
                                      const float* weight, int64_t ignore_index, float smoothing, const float* dloss,
                                      float* dx) {
  const float eps_c = smoothing / static_cast<float>(C);
  const float w_sum = weight_sum(C, weight);
  for (int64_t i = 0; i < N; ++i) {
    const float* row = x + i * C;
    float* d = dx + i * C;
    const int64_t t = target[i];
    if (t == ignore_index) {
      for (int64_t c = 0; c < C; ++c) d[c] = 0.0f;
      continue;
    }
    const float w_t = weight != nullptr ? weight[t] : 1.0f;
    const float g = dloss[i];
    const float ga = g * ((1 - smoothing) * w_t + eps_c * w_sum), g_eps = g * eps_c;
    for (int64_t c = 0; c < C; ++c) {
      const float p = math::exp((row[c] - stats[2 * i]) - stats[2 * i + 1]);
      d[c] = madd(ga, p, -(g_eps * (weight != nullptr ? weight[c] : 1.0f)));
    }
    d[t] -= g * (1 - smoothing) * w_t;
  }
}

// ==== SIMD: one contiguous row x[0:n] at a time (inner == 1) =========================
#if QKV_SIMD

namespace {

float row_max(int64_t n, const float* x) {
  batch m(-kInf);
  int64_t k = 0;
  for (; k + W <= n; k += W) m = xsimd::max(m, batch::load_unaligned(x + k));
  alignas(64) float lanes[W];
  m.store_aligned(lanes);
  float r = -kInf;
  for (float lane : lanes) r = std::max(r, lane);
  for (; k < n; ++k) r = std::max(r, x[k]);
  return r;
}

// Σ exp(xₖ - m) over the row, writing exp(xₖ - m) to y unless y is null:
// exp_sum_column's sum, 16 running sums in SUM_LANES / W registers.
float exp_sum(int64_t n, const float* x, float m, float* y) {
  const batch vm(m);
  return ordered_sum_simd<batch>(
      n,
      [&](batch acc, int64_t k) {
        const batch e = math::exp(batch::load_unaligned(x + k) - vm);
        if (y != nullptr) e.store_unaligned(y + k);
        return acc + e;
      },
      [&](float s, int64_t k) {
        const float e = math::exp(x[k] - m);
        if (y != nullptr) y[k] = e;
        return s + e;
      });
}

void softmax_row(int64_t n, const float* x, float* y) {
  const float m = row_max(n, x);
  const float sum = exp_sum(n, x, m, y);  // y = exp(x - m)

  // y /= Σ: one division, then multiplications.
  const float inv_sum = 1.0f / sum;
  const batch vinv(inv_sum);
  int64_t k = 0;
  for (; k + W <= n; k += W) (batch::load_unaligned(y + k) * vinv).store_unaligned(y + k);
  for (; k < n; ++k) y[k] *= inv_sum;
}

void log_softmax_row(int64_t n, const float* x, float* y) {
  const float m = row_max(n, x);
  const batch vm(m);
  const float sum = exp_sum(n, x, m, nullptr);  // unlike softmax, the exponentials are not kept

  // y = (x - m) - log Σ, in that order (see log_softmax_column).
  const float log_sum = math::log(sum);
  const batch vlog_sum(log_sum);
  int64_t k = 0;
  for (; k + W <= n; k += W) ((batch::load_unaligned(x + k) - vm) - vlog_sum).store_unaligned(y + k);
  for (; k < n; ++k) y[k] = (x[k] - m) - log_sum;
}

// dx = y ⊙ (dy - Σ dy y)
void softmax_backward_row(int64_t n, const float* y, const float* dy, float* dx) {
  const float dot = ordered_sum_simd<batch>(
      n, [&](batch acc, int64_t k) { return fmadd(batch::load_unaligned(dy + k), batch::load_unaligned(y + k), acc); },
      [&](float s, int64_t k) { return madd(dy[k], y[k], s); });

  const batch vd(dot);
  int64_t k = 0;
  for (; k + W <= n; k += W)
    (batch::load_unaligned(y + k) * (batch::load_unaligned(dy + k) - vd)).store_unaligned(dx + k);
  for (; k < n; ++k) dx[k] = y[k] * (dy[k] - dot);
}

// dx = dy - exp(y) · Σ dy
void log_softmax_backward_row(int64_t n, const float* y, const float* dy, float* dx) {
  const float sum = ordered_sum_simd<batch>(
      n, [&](batch acc, int64_t k) { return acc + batch::load_unaligned(dy + k); },
      [&](float s, int64_t k) { return s + dy[k]; });

  const batch vs(sum);
  int64_t k = 0;
  for (; k + W <= n; k += W)
    fmadd(-math::exp(batch::load_unaligned(y + k)), vs, batch::load_unaligned(dy + k)).store_unaligned(dx + k);
  for (; k < n; ++k) dx[k] = madd(-math::exp(y[k]), sum, dy[k]);
}

// Threads: every row (and every column) is computed alone, so the rows are
// shared out among the threads whole (each_row), the same numbers on any
// count. A task should take ~10 µs: about 16K floats of exp.
constexpr int64_t GRAIN = 1 << 14;

template <class Row>
void each_row(int64_t rows, int64_t n, Row row) {
  parallel_ranges(rows, rows_grain(GRAIN, n), 1, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) row(r);
  });
}

}  // namespace

void softmax(int64_t outer, int64_t n, int64_t inner, const float* x, float* y) {
  if (inner != 1) return softmax_reference(outer, n, inner, x, y);
  each_row(outer, n, [&](int64_t o) { softmax_row(n, x + o * n, y + o * n); });
}

void log_softmax(int64_t outer, int64_t n, int64_t inner, const float* x, float* y) {
  if (inner != 1) return log_softmax_reference(outer, n, inner, x, y);
  each_row(outer, n, [&](int64_t o) { log_softmax_row(n, x + o * n, y + o * n); });
}

void softmax_backward(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy, float* dx) {
  if (inner != 1) return softmax_backward_reference(outer, n, inner, y, dy, dx);
  each_row(outer, n, [&](int64_t o) { softmax_backward_row(n, y + o * n, dy + o * n, dx + o * n); });
}

void log_softmax_backward(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy, float* dx) {
  if (inner != 1) return log_softmax_backward_reference(outer, n, inner, y, dy, dx);
  each_row(outer, n, [&](int64_t o) { log_softmax_backward_row(n, y + o * n, dy + o * n, dx + o * n); });
}

void masked_softmax(int64_t rows, int64_t n, const int64_t* lens, const float* x, float* y) {
  each_row(rows, n, [&](int64_t r) {
    mask_row(n, lens[r], x + r * n, y + r * n);
    softmax_row(n, y + r * n, y + r * n);
  });
}

// As the reference: softmax's backward on each row, then 0 at the masked entries.
void masked_softmax_backward(int64_t rows, int64_t n, const int64_t* lens, const float* y, const float* dy, float* dx) {
  each_row(rows, n, [&](int64_t r) {
    softmax_backward_row(n, y + r * n, dy + r * n, dx + r * n);
    zero_masked(n, lens[r], dx + r * n);
  });
}

void cross_entropy(int64_t N, int64_t C, const float* x, const int64_t* target, const float* weight,
                   int64_t ignore_index, float smoothing, float* loss, float* stats) {
  each_row(N, C, [&](int64_t i) {
    const float* row = x + i * C;
    const float m = row_max(C, row);
    const float log_sum = math::log(exp_sum(C, row, m, nullptr));
    stats[2 * i] = m;
    stats[2 * i + 1] = log_sum;
    const int64_t t = target[i];
    if (t == ignore_index) {
      loss[i] = 0.0f;
      return;
    }
    const float w_t = weight != nullptr ? weight[t] : 1.0f;
    loss[i] = -w_t * ((row[t] - m) - log_sum);
    if (smoothing == 0) return;  // the smoothing term is the one pass over C the loss adds

    // smooth = -Σ_c w[c] · ((x[c] - m) - log Σ)
    const batch vm(m), vlog_sum(log_sum);
    const float smooth = -ordered_sum_simd<batch>(
        C,
        [&](batch acc, int64_t c) {
          const batch logp = (batch::load_unaligned(row + c) - vm) - vlog_sum;
          return weight != nullptr ? fmadd(batch::load_unaligned(weight + c), logp, acc) : acc + logp;
        },
        [&](float s, int64_t c) {
          const float logp = (row[c] - m) - log_sum;
          return weight != nullptr ? madd(weight[c], logp, s) : s + logp;
        });
    loss[i] = (1 - smoothing) * loss[i] + smoothing / static_cast<float>(C) * smooth;
  });
}

void cross_entropy_backward(int64_t N, int64_t C, const float* x, const float* stats, const int64_t* target,
                            const float* weight, int64_t ignore_index, float smoothing, const float* dloss, float* dx) {
  const float eps_c = smoothing / static_cast<float>(C);
  const float w_sum = weight_sum(C, weight);
  each_row(N, C, [&](int64_t i) {
    const float* row = x + i * C;
    float* d = dx + i * C;
    const int64_t t = target[i];
    if (t == ignore_index) {
      for (int64_t c = 0; c < C; ++c) d[c] = 0.0f;
      return;
    }
    const float w_t = weight != nullptr ? weight[t] : 1.0f;
    const float g = dloss[i];
    // dx = g·a·p - g·ε/C·w, with p = exp((x - m) - log Σ)
    const float ga = g * ((1 - smoothing) * w_t + eps_c * w_sum), g_eps = g * eps_c;
    const batch vm(stats[2 * i]), vlog_sum(stats[2 * i + 1]), vga(ga), vg_eps(g_eps);
    int64_t c = 0;
    for (; c + W <= C; c += W) {
      const batch p = math::exp((batch::load_unaligned(row + c) - vm) - vlog_sum);
      const batch w = weight != nullptr ? batch::load_unaligned(weight + c) : batch(1.0f);
      fmadd(vga, p, -(vg_eps * w)).store_unaligned(d + c);
    }
    for (; c < C; ++c) {
      const float p = math::exp((row[c] - stats[2 * i]) - stats[2 * i + 1]);
      d[c] = madd(ga, p, -(g_eps * (weight != nullptr ? weight[c] : 1.0f)));
    }
    d[t] -= g * (1 - smoothing) * w_t;  // the one-hot target
  });
}

#else  // the scalar build: each kernel is its reference

void softmax(int64_t outer, int64_t n, int64_t inner, const float* x, float* y) {
  softmax_reference(outer, n, inner, x, y);
}
void log_softmax(int64_t outer, int64_t n, int64_t inner, const float* x, float* y) {
  log_softmax_reference(outer, n, inner, x, y);
}
void softmax_backward(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy, float* dx) {
  softmax_backward_reference(outer, n, inner, y, dy, dx);
}
void log_softmax_backward(int64_t outer, int64_t n, int64_t inner, const float* y, const float* dy, float* dx) {
  log_softmax_backward_reference(outer, n, inner, y, dy, dx);
}
void masked_softmax(int64_t rows, int64_t n, const int64_t* lens, const float* x, float* y) {
  masked_softmax_reference(rows, n, lens, x, y);
}
void masked_softmax_backward(int64_t rows, int64_t n, const int64_t* lens, const float* y, const float* dy, float* dx) {
  masked_softmax_backward_reference(rows, n, lens, y, dy, dx);
}
void cross_entropy(int64_t N, int64_t C, const float* x, const int64_t* target, const float* weight,
                   int64_t ignore_index, float smoothing, float* loss, float* stats) {
  cross_entropy_reference(N, C, x, target, weight, ignore_index, smoothing, loss, stats);
}
void cross_entropy_backward(int64_t N, int64_t C, const float* x, const float* stats, const int64_t* target,
                            const float* weight, int64_t ignore_index, float smoothing, const float* dloss, float* dx) {
  cross_entropy_backward_reference(N, C, x, stats, target, weight, ignore_index, smoothing, dloss, dx);
}

#endif  // QKV_SIMD

}  // namespace qkv::kernels
