// The elementwise part of one GRU step (PyTorch's fused GRU cell), B rows of
// H, given the two gate pre-activations, each three blocks of H per row:
//   xw = W_ih x + b_ih = [x_r | x_z | x_n]        (B, 3H)
//   hw = W_hh h + b_hh = [h_r | h_z | h_n]        (B, 3H)
//   r  = σ(x_r + h_r)
//   z  = σ(x_z + h_z)
//   n  = tanh(x_n + r ⊙ h_n)
//   h' = (1 - z) ⊙ n + z ⊙ h                      (B, H)
// gates (B, 3H) receives [r | z | n] for the backward.
#pragma once
#include <cstdint>

namespace qkv::kernels {

void gru_cell(int64_t B, int64_t H, const float* xw, const float* hw, const float* h, float* h_next, float* gates);
void gru_cell_reference(int64_t B, int64_t H, const float* xw, const float* hw, const float* h, float* h_next,
                        float* gates);

// Given dh' (B, H), the chain rule through the four lines above:
//   dn = dh' ⊙ (1 - z)     dz = dh' ⊙ (h - n)     dh = dh' ⊙ z   (h's direct share)
//   da_n = dn ⊙ (1 - n²)                         (a_n = x_n + r ⊙ h_n)
//   da_r = da_n ⊙ h_n ⊙ r(1 - r)     da_z = dz ⊙ z(1 - z)
//   dxw = [da_r | da_z | da_n]       dhw = [da_r | da_z | da_n ⊙ r]
// (h's gradient through hw = W_hh h + b_hh is the caller's: it is linear's.)
void gru_cell_backward(int64_t B, int64_t H, const float* hw, const float* h, const float* gates, const float* dh_next,
                       float* dxw, float* dhw, float* dh);
void gru_cell_backward_reference(int64_t B, int64_t H, const float* hw, const float* h, const float* gates,
                                 const float* dh_next, float* dxw, float* dhw, float* dh);

}  // namespace qkv::kernels
