// Layer normalisation, forward and backward (see layer_norm.hpp).
//
// Why a kernel: composed from ops (mean, sub, mul, mean, add, sqrt, div, mul,
// add) a LayerNorm is nine temporaries of the input's size and nine graph
// nodes, and its backward more; the Transformer calls it twice or three times
// per block. Here the forward is three passes over a row (mean, variance,
// write) and the backward two (the two means, then dx), with no temporaries.
//
// The two sections every kernel file has (simd.hpp): the reference's plain
// loops, and the SIMD kernels. Every sum over a row is an ordered_sum and
// every multiply-add a madd or fmadd (simd.hpp), so the two agree bit for bit.
//
// The backward's formula: with x̂ = (x - μ)·rstd and g = dy ⊙ w, the
// Jacobian of x̂ with respect to x is rstd·(I - 1/D - x̂ x̂ᵀ/D), so
//   dx = rstd · (g - mean(g) - x̂ · mean(g ⊙ x̂)).
#include "kernels/layer_norm.hpp"

#include <cmath>

#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace qkv::kernels {

// ==== reference: plain loops =========================================================

void layer_norm_reference(int64_t rows, int64_t D, const float* x, const float* weight, const float* bias, float eps,
                          float* y, float* mean, float* rstd) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * D;
    const float mu = ordered_sum<float>(D, [&](float s, int64_t k) { return s + xr[k]; }) / static_cast<float>(D);
    const float sq = ordered_sum<float>(D, [&](float s, int64_t k) { return madd(xr[k] - mu, xr[k] - mu, s); });
    const float inv = 1.0f / std::sqrt(sq / static_cast<float>(D) + eps);
    for (int64_t k = 0; k < D; ++k) {
      const float xhat = (xr[k] - mu) * inv;
      y[r * D + k] = madd(xhat, weight != nullptr ? weight[k] : 1.0f, bias != nullptr ? bias[k] : 0.0f);
    }
    mean[r] = mu;
    rstd[r] = inv;
  }
}

void layer_norm_backward_reference(int64_t rows, int64_t D, const float* x, const float* weight, const float* mean,
                                   const float* rstd, const float* dy, float* dx, float* dweight, float* dbias) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * D;
    const float* dyr = dy + r * D;
    auto xhat = [&](int64_t k) { return (xr[k] - mean[r]) * rstd[r]; };
    auto g = [&](int64_t k) { return dyr[k] * (weight != nullptr ? weight[k] : 1.0f); };
    const float g_sum = ordered_sum<float>(D, [&](float s, int64_t k) { return s + g(k); });                 // Σ g
    const float gx_sum = ordered_sum<float>(D, [&](float s, int64_t k) { return madd(g(k), xhat(k), s); });  // Σ g ⊙ x̂
    const float g_mean = g_sum / static_cast<float>(D), gx_mean = gx_sum / static_cast<float>(D);
    for (int64_t k = 0; k < D; ++k) {
      dx[r * D + k] = rstd[r] * madd(-xhat(k), gx_mean, g(k) - g_mean);
      if (dweight != nullptr) dweight[k] = madd(dyr[k], xhat(k), dweight[k]);
      if (dbias != nullptr) dbias[k] += dyr[k];
    }
  }
}

// ==== SIMD: a register of D at a time, then the tail =================================
#if QKV_SIMD

namespace {

float row_sum(int64_t D, const float* x) {
  return ordered_sum_simd<batch>(
      D, [&](batch acc, int64_t k) { return acc + batch::load_unaligned(x + k); },
      [&](float s, int64_t k) { return s + x[k]; });
}

// Σ (x - μ)²
float row_centred_squares(int64_t D, const float* x, float mu) {
  const batch vmu(mu);
  return ordered_sum_simd<batch>(
      D,
      [&](batch acc, int64_t k) {
        const batch c = batch::load_unaligned(x + k) - vmu;
        return fmadd(c, c, acc);
      },
      [&](float s, int64_t k) { return madd(x[k] - mu, x[k] - mu, s); });
}

batch load_or(const float* p, int64_t k, float absent) {
  return p != nullptr ? batch::load_unaligned(p + k) : batch(absent);
}
float at_or(const float* p, int64_t k, float absent) { return p != nullptr ? p[k] : absent; }

// One row: its mean and 1/std, then y = x̂ ⊙ w + b.
void layer_norm_row(int64_t D, const float* xr, const float* weight, const float* bias, float eps, float* yr,
                    float& mean, float& rstd) {
  const float mu = row_sum(D, xr) / static_cast<float>(D);
  const float inv = 1.0f / std::sqrt(row_centred_squares(D, xr, mu) / static_cast<float>(D) + eps);
  const batch vmu(mu), vinv(inv);
  int64_t k = 0;
  for (; k + W <= D; k += W) {
    const batch xhat = (batch::load_unaligned(xr + k) - vmu) * vinv;
    fmadd(xhat, load_or(weight, k, 1.0f), load_or(bias, k, 0.0f)).store_unaligned(yr + k);
  }
  for (; k < D; ++k) yr[k] = madd((xr[k] - mu) * inv, at_or(weight, k, 1.0f), at_or(bias, k, 0.0f));
  mean = mu;
  rstd = inv;
}

// The forward's rows are computed alone, so they are shared out among the
// threads whole: the same numbers on any count. (The backward adds every
// row into dweight and dbias, in row order, and stays on one thread.)
constexpr int64_t GRAIN = 1 << 15;  // floats a task should take: ~10 µs

}  // namespace

void layer_norm(int64_t rows, int64_t D, const float* x, const float* weight, const float* bias, float eps, float* y,
                float* mean, float* rstd) {
  parallel_ranges(rows, rows_grain(GRAIN, D), 1, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) layer_norm_row(D, x + r * D, weight, bias, eps, y + r * D, mean[r], rstd[r]);
  });
}

void layer_norm_backward(int64_t rows, int64_t D, const float* x, const float* weight, const float* mean,
                         const float* rstd, const float* dy, float* dx, float* dweight, float* dbias) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * D;
    const float* dyr = dy + r * D;
    float* dxr = dx + r * D;
    const batch vmu(mean[r]), vinv(rstd[r]);

    // Σ g and Σ g ⊙ x̂, with g = dy ⊙ w.
    auto g_at = [&](int64_t k) { return batch::load_unaligned(dyr + k) * load_or(weight, k, 1.0f); };
    auto xhat_at = [&](int64_t k) { return (batch::load_unaligned(xr + k) - vmu) * vinv; };
    auto g_of = [&](int64_t k) { return dyr[k] * at_or(weight, k, 1.0f); };
    auto xhat_of = [&](int64_t k) { return (xr[k] - mean[r]) * rstd[r]; };
    const float g_sum = ordered_sum_simd<batch>(
        D, [&](batch acc, int64_t k) { return acc + g_at(k); }, [&](float s, int64_t k) { return s + g_of(k); });
    const float gx_sum = ordered_sum_simd<batch>(
        D, [&](batch acc, int64_t k) { return fmadd(g_at(k), xhat_at(k), acc); },
        [&](float s, int64_t k) { return madd(g_of(k), xhat_of(k), s); });
    const float g_mean = g_sum / static_cast<float>(D), gx_mean = gx_sum / static_cast<float>(D);

    // dx = rstd · (g - mean(g) - x̂ · mean(g ⊙ x̂)); dweight += dy ⊙ x̂; dbias += dy.
    const batch vg_mean(g_mean), vgx_mean(gx_mean);
    int64_t k = 0;
    for (; k + W <= D; k += W) {
      const batch d = batch::load_unaligned(dyr + k);
      const batch g = d * load_or(weight, k, 1.0f);
      const batch xhat = (batch::load_unaligned(xr + k) - vmu) * vinv;
      (vinv * fmadd(-xhat, vgx_mean, g - vg_mean)).store_unaligned(dxr + k);
      if (dweight != nullptr) fmadd(d, xhat, batch::load_unaligned(dweight + k)).store_unaligned(dweight + k);
      if (dbias != nullptr) (batch::load_unaligned(dbias + k) + d).store_unaligned(dbias + k);
    }
    for (; k < D; ++k) {
      const float xhat = (xr[k] - mean[r]) * rstd[r];
      dxr[k] = rstd[r] * madd(-xhat, gx_mean, dyr[k] * at_or(weight, k, 1.0f) - g_mean);
      if (dweight != nullptr) dweight[k] = madd(dyr[k], xhat, dweight[k]);
      if (dbias != nullptr) dbias[k] += dyr[k];
    }
  }
}

#else  // the scalar build: each kernel is its reference

void layer_norm(int64_t rows, int64_t D, const float* x, const float* weight, const float* bias, float eps, float* y,
                float* mean, float* rstd) {
  layer_norm_reference(rows, D, x, weight, bias, eps, y, mean, rstd);
}
void layer_norm_backward(int64_t rows, int64_t D, const float* x, const float* weight, const float* mean,
                         const float* rstd, const float* dy, float* dx, float* dweight, float* dbias) {
  layer_norm_backward_reference(rows, D, x, weight, mean, rstd, dy, dx, dweight, dbias);
}

#endif  // QKV_SIMD

}  // namespace qkv::kernels
