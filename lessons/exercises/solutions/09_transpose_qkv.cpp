// Exercise 09, a reference solution: transpose_qkv and transpose_output.
#include "09_transpose_qkv.hpp"

namespace qkv::exercises {

Tensor transpose_qkv(const Tensor& X, int64_t num_heads) {
  const int64_t B = X.size(0), T = X.size(1), H = X.size(2), h = num_heads;
  Tensor heads = X.reshape({B, T, h, H / h});  // (B, T, H) -> (B, T, h, H/h)
  heads = heads.permute({0, 2, 1, 3});         // -> (B, h, T, H/h)
  return heads.reshape({B * h, T, H / h});     // -> (B·h, T, H/h)
}

Tensor transpose_output(const Tensor& X, int64_t num_heads) {
  const int64_t Bh = X.size(0), T = X.size(1), d = X.size(2), h = num_heads;
  Tensor heads = X.reshape({Bh / h, h, T, d});  // (B·h, T, H/h) -> (B, h, T, H/h)
  heads = heads.permute({0, 2, 1, 3});          // -> (B, T, h, H/h)
  return heads.reshape({Bh / h, T, h * d});     // -> (B, T, H)
}

}  // namespace qkv::exercises
