// The GRU cell's elementwise part, forward and backward (see gru.hpp).
//
// Why a kernel: composed from ops, one step is two chunks, three adds, two
// sigmoids, a tanh, three muls and a sub, each a (B, H) temporary and a graph
// node, and their backward about twice that; for the lessons' GRU (B = 64,
// H = 32) recording them cost more than the arithmetic. Here a step is one
// pass over the B·H elements each way.
//
// The two sections every kernel file has (simd.hpp): the reference, one
// element at a time, and the SIMD kernels, which run each row over the full
// registers of H, then the reference's code for the tail. In a row, x_, h_ and g point at the three
// blocks [r | z | n] of xw, hw and gates: block j, element k is at j·H + k.
#include "kernels/gru.hpp"

#include <cmath>

#include "kernels/math.hpp"
#include "kernels/simd.hpp"

namespace qkv::kernels {

// ==== reference: element k of one row ================================================

namespace {

void forward_element(int64_t H, int64_t k, const float* x_, const float* h_, const float* h, float* h_next, float* g) {
  // σ and tanh are qkv's (math.hpp), as the elementwise kernels compute them.
  const float r = math::sigmoid(x_[k] + h_[k]);
  const float z = math::sigmoid(x_[H + k] + h_[H + k]);
  const float n = math::tanh(x_[2 * H + k] + r * h_[2 * H + k]);
  h_next[k] = (1 - z) * n + z * h[k];
  g[k] = r, g[H + k] = z, g[2 * H + k] = n;
}

void backward_element(int64_t H, int64_t k, const float* h_, const float* h, const float* g, const float* dh_next,
                      float* dx_, float* dh_, float* dh) {
  const float r = g[k], z = g[H + k], n = g[2 * H + k];
  const float dn = dh_next[k] * (1 - z);
  const float dz = dh_next[k] * (h[k] - n);
  const float da_n = dn * (1 - n * n);
  const float da_r = da_n * h_[2 * H + k] * r * (1 - r);
  const float da_z = dz * z * (1 - z);
  dx_[k] = dh_[k] = da_r;
  dx_[H + k] = dh_[H + k] = da_z;
  dx_[2 * H + k] = da_n;
  dh_[2 * H + k] = da_n * r;
  dh[k] = dh_next[k] * z;
}

}  // namespace

void gru_cell_reference(int64_t B, int64_t H, const float* xw, const float* hw, const float* h, float* h_next,
                        float* gates) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < H; ++k)
      forward_element(H, k, xw + b * 3 * H, hw + b * 3 * H, h + b * H, h_next + b * H, gates + b * 3 * H);
}

void gru_cell_backward_reference(int64_t B, int64_t H, const float* hw, const float* h, const float* gates,
                                 const float* dh_next, float* dxw, float* dhw, float* dh) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < H; ++k)
      backward_element(H, k, hw + b * 3 * H, h + b * H, gates + b * 3 * H, dh_next + b * H, dxw + b * 3 * H,
                       dhw + b * 3 * H, dh + b * H);
}

// ==== SIMD: W elements of a row at a time ============================================
#if QKV_SIMD

void gru_cell(int64_t B, int64_t H, const float* xw, const float* hw, const float* h, float* h_next, float* gates) {
  const batch one(1.0f);
  for (int64_t b = 0; b < B; ++b) {
    const float* x_ = xw + b * 3 * H;
    const float* h_ = hw + b * 3 * H;
    float* g = gates + b * 3 * H;
    int64_t k = 0;
    for (; k + W <= H; k += W) {
      auto at = [k](const float* p) { return batch::load_unaligned(p + k); };
      const batch r = math::sigmoid(at(x_) + at(h_));
      const batch z = math::sigmoid(at(x_ + H) + at(h_ + H));
      const batch n = math::tanh(at(x_ + 2 * H) + r * at(h_ + 2 * H));
      ((one - z) * n + z * at(h + b * H)).store_unaligned(h_next + b * H + k);
      r.store_unaligned(g + k);
      z.store_unaligned(g + H + k);
      n.store_unaligned(g + 2 * H + k);
    }
    for (; k < H; ++k) forward_element(H, k, x_, h_, h + b * H, h_next + b * H, g);
  }
}

void gru_cell_backward(int64_t B, int64_t H, const float* hw, const float* h, const float* gates, const float* dh_next,
                       float* dxw, float* dhw, float* dh) {
  const batch one(1.0f);
  for (int64_t b = 0; b < B; ++b) {
    const float* h_ = hw + b * 3 * H;
    const float* g = gates + b * 3 * H;
    float* dx_ = dxw + b * 3 * H;
    float* dh_ = dhw + b * 3 * H;
    int64_t k = 0;
    for (; k + W <= H; k += W) {
      auto at = [k](const float* p) { return batch::load_unaligned(p + k); };
      const batch r = at(g), z = at(g + H), n = at(g + 2 * H), dh_next_k = at(dh_next + b * H);
      const batch dn = dh_next_k * (one - z);
      const batch dz = dh_next_k * (at(h + b * H) - n);
      const batch da_n = dn * (one - n * n);
      const batch da_r = da_n * at(h_ + 2 * H) * r * (one - r);
      const batch da_z = dz * z * (one - z);
      da_r.store_unaligned(dx_ + k);
      da_r.store_unaligned(dh_ + k);
      da_z.store_unaligned(dx_ + H + k);
      da_z.store_unaligned(dh_ + H + k);
      da_n.store_unaligned(dx_ + 2 * H + k);
      (da_n * r).store_unaligned(dh_ + 2 * H + k);
      (dh_next_k * z).store_unaligned(dh + b * H + k);
    }
    for (; k < H; ++k) backward_element(H, k, h_, h + b * H, g, dh_next + b * H, dx_, dh_, dh + b * H);
  }
}

#else  // the scalar build: each kernel is its reference

void gru_cell(int64_t B, int64_t H, const float* xw, const float* hw, const float* h, float* h_next, float* gates) {
  gru_cell_reference(B, H, xw, hw, h, h_next, gates);
}
void gru_cell_backward(int64_t B, int64_t H, const float* hw, const float* h, const float* gates, const float* dh_next,
                       float* dxw, float* dhw, float* dh) {
  gru_cell_backward_reference(B, H, hw, h, gates, dh_next, dxw, dhw, dh);
}

#endif  // QKV_SIMD

}  // namespace qkv::kernels
