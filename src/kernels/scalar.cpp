// The scalar build (CMake option QKV_SCALAR_KERNELS, for targets xsimd cannot
// compile to, such as WebAssembly): every kernel is its reference twin, the
// plain loop that defines it and that the tests hold the SIMD kernel equal
// to (GEMM: gemm_rows, the reference's floats read along rows). The SIMD
// kernels' files leave their SIMD code out of this build
// (#ifndef QKV_SCALAR_KERNELS), and nothing includes xsimd.
//
// Left out on purpose: threads. A twin is one loop on the calling thread.
#ifdef QKV_SCALAR_KERNELS

#include <algorithm>

#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gru.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/optim.hpp"
#include "kernels/reduce.hpp"
#include "kernels/softmax.hpp"

namespace qkv::kernels {

// ---- elementwise.hpp -------------------------------------------------------------

void unary(Unary op, int64_t n, const float* x, float* y) { unary_reference(op, n, x, y); }
void binary(Binary op, int64_t n, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out) {
  binary_reference(op, n, a, a_step, b, b_step, out);
}
void axpy(int64_t n, float alpha, const float* x, float* y) { axpy_reference(n, alpha, x, y); }

// ---- gemm.hpp --------------------------------------------------------------------

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  gemm_rows(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

// One gemm_rows per matrix of the batch.
void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, const float* A,
                  const int64_t* a_offsets, int64_t lda, const float* B, const int64_t* b_offsets, int64_t ldb,
                  float* C, int64_t c_stride, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < batch; ++i)
    gemm_rows(trans_a, trans_b, M, N, K, A + a_offsets[i], lda, B + b_offsets[i], ldb, C + i * c_stride, ldc,
              accumulate);
}

// ---- gru.hpp ---------------------------------------------------------------------

void gru_cell(int64_t B, int64_t H, const float* xw, const float* hw, const float* h, float* h_next, float* gates) {
  gru_cell_reference(B, H, xw, hw, h, h_next, gates);
}
void gru_cell_backward(int64_t B, int64_t H, const float* hw, const float* h, const float* gates, const float* dh_next,
                       float* dxw, float* dhw, float* dh) {
  gru_cell_backward_reference(B, H, hw, h, gates, dh_next, dxw, dhw, dh);
}

// ---- layer_norm.hpp --------------------------------------------------------------

void layer_norm(int64_t rows, int64_t D, const float* x, const float* weight, const float* bias, float eps, float* y,
                float* mean, float* rstd) {
  layer_norm_reference(rows, D, x, weight, bias, eps, y, mean, rstd);
}
void layer_norm_backward(int64_t rows, int64_t D, const float* x, const float* weight, const float* mean,
                         const float* rstd, const float* dy, float* dx, float* dweight, float* dbias) {
  layer_norm_backward_reference(rows, D, x, weight, mean, rstd, dy, dx, dweight, dbias);
}

// ---- optim.hpp -------------------------------------------------------------------

void adam(const AdamStep& s, int64_t n, float* p, const float* g, float* m, float* v) {
  adam_reference(s, n, p, g, m, v);
}
void sgd(const SgdStep& s, int64_t n, float* p, const float* g, float* buf) { sgd_reference(s, n, p, g, buf); }
double sum_squares(int64_t n, const float* x) { return sum_squares_reference(n, x); }
void scale(int64_t n, float c, float* x) { scale_reference(n, c, x); }

// ---- reduce.hpp ------------------------------------------------------------------

void reduce(Reduce op, int64_t outer, int64_t n, int64_t inner, const float* x, float* out) {
  reduce_reference(op, outer, n, inner, x, out);
}

// ---- softmax.hpp -----------------------------------------------------------------

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
// masked_softmax's backward: softmax's on each row, then 0 at the masked
// entries (softmax.cpp says why).
void masked_softmax_backward(int64_t rows, int64_t n, const int64_t* lens, const float* y, const float* dy, float* dx) {
  for (int64_t r = 0; r < rows; ++r) {
    softmax_backward_reference(1, n, 1, y + r * n, dy + r * n, dx + r * n);
    for (int64_t k = std::max<int64_t>(lens[r], 0); k < n; ++k) dx[r * n + k] = 0.0f;
  }
}
void cross_entropy(int64_t N, int64_t C, const float* x, const int64_t* target, const float* weight,
                   int64_t ignore_index, float smoothing, float* loss, float* stats) {
  cross_entropy_reference(N, C, x, target, weight, ignore_index, smoothing, loss, stats);
}
void cross_entropy_backward(int64_t N, int64_t C, const float* x, const float* stats, const int64_t* target,
                            const float* weight, int64_t ignore_index, float smoothing, const float* dloss, float* dx) {
  cross_entropy_backward_reference(N, C, x, stats, target, weight, ignore_index, smoothing, dloss, dx);
}

}  // namespace qkv::kernels

#endif
