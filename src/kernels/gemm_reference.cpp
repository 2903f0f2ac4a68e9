// GEMM's reference section (simd.hpp): the plain loops that define C = op(A)·op(B).
//
//   gemm_reference  the triple loop, k innermost: the definition, and what
//                   the tests hold gemm to (tests/kernels/test_gemm.cpp).
//   gemm_rows       the same floats, bit for bit, with the loops turned so
//                   that memory is read along rows: the scalar build's gemm
//                   (gemm.cpp), which WebAssembly runs; emscripten's -msimd128
//                   vectorises its inner loops, as no sum is reordered.
//
// Both sum in gemm.hpp's order (GEMM_KC), with madd: the fast GEMM's floats.
//
// The fast GEMM, blocked and packed for SIMD registers, is gemm.cpp.
#include "kernels/gemm.hpp"

#include <algorithm>
#include <vector>

#include "kernels/simd.hpp"

namespace qkv::kernels {

namespace {

// One slice of K (kc ≤ GEMM_KC deep) of gemm_rows: C (+)= op(A)·op(B).
void gemm_slice(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  std::vector<float> b_rows;  // op(B) (K, N), when B is stored transposed
  if (trans_b) {
    b_rows.resize(static_cast<size_t>(K * N));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) b_rows[static_cast<size_t>(k * N + j)] = B[j * ldb + k];
    B = b_rows.data();
    ldb = N;
  }
  auto a_at = [&](int64_t i, int64_t k) { return trans_a ? A[k * lda + i] : A[i * lda + k]; };
  float* const out = C;  // written through store
  auto store = [&](int64_t i, int64_t j, float sum) {
    float& c = out[i * ldc + j];
    c = accumulate ? c + sum : sum;
  };
  // Row i, columns [j0, N): a row of running sums.
  std::vector<float> sums(static_cast<size_t>(N));
  auto row = [&](int64_t i, int64_t j0) {
    std::fill(sums.begin() + j0, sums.end(), 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float a = a_at(i, k);
      const float* b = B + k * ldb;
      for (int64_t j = j0; j < N; ++j) sums[static_cast<size_t>(j)] = madd(a, b[j], sums[static_cast<size_t>(j)]);
    }
    for (int64_t j = j0; j < N; ++j) store(i, j, sums[static_cast<size_t>(j)]);
  };
  constexpr int TR = 4, TW = 8;                             // the tile: TR rows × TW columns of C
  std::vector<float> a_panel(static_cast<size_t>(K * TR));  // a_panel[k·TR + r] = op(A)[i + r, k]
  int64_t i = 0;
  for (; i + TR <= M; i += TR) {
    for (int64_t k = 0; k < K; ++k)
      for (int r = 0; r < TR; ++r) a_panel[static_cast<size_t>(k * TR + r)] = a_at(i + r, k);
    int64_t j = 0;
    for (; j + TW <= N; j += TW) {
      float tile[TR][TW] = {};
      for (int64_t k = 0; k < K; ++k) {
        const float* a = a_panel.data() + k * TR;
        float b[TW];
        for (int w = 0; w < TW; ++w) b[w] = B[k * ldb + j + w];
        for (int r = 0; r < TR; ++r)
          for (int w = 0; w < TW; ++w) tile[r][w] = madd(a[r], b[w], tile[r][w]);
      }
      for (int r = 0; r < TR; ++r)
        for (int w = 0; w < TW; ++w) store(i + r, j + w, tile[r][w]);
    }
    if (j < N)
      for (int r = 0; r < TR; ++r) row(i + r, j);
  }
  for (; i < M; ++i) row(i, 0);
}

}  // namespace

// C[i, j] (+)= Σₖ op(A)[i, k] · op(B)[k, j]: k in slices of GEMM_KC, each
// summed from 0 in order with madd, and added into C slice after slice (the
// first written, unless accumulating). What gemm computes, in another order
// of loops (tests/kernels/test_gemm.cpp holds the two equal).
void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      float c = accumulate ? C[i * ldc + j] : 0.0f;
      for (int64_t k0 = 0; k0 < K; k0 += GEMM_KC) {
        float sum = 0.0f;
        for (int64_t k = k0; k < std::min(K, k0 + GEMM_KC); ++k) {
          float a = trans_a ? A[k * lda + i] : A[i * lda + k];
          float b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
          sum = madd(a, b, sum);
        }
        c = k0 == 0 && !accumulate ? sum : c + sum;
      }
      C[i * ldc + j] = c;
    }
  }
}

// Every C[i, j] is gemm_reference's float: per slice of GEMM_KC, a sum that
// starts at 0 and adds op(A)[i, k] · op(B)[k, j] for k in order (madd), then
// goes into C. Only the order of the loops differs, so that memory is read
// along rows and a compiler can vectorise without reordering any sum. A tile
// of 4 rows × 8 columns of C keeps its 32 sums in registers while k runs:
// each k reads 8 floats of a row of op(B) and the 4 rows' values of op(A),
// packed side by side for the tile's rows first. The edges that fill no tile
// keep a row of running sums instead. A transposed B is first copied into rows.
void gemm_rows(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
               int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  if (K == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    return;
  }
  for (int64_t k0 = 0; k0 < K; k0 += GEMM_KC) {
    const int64_t kc = std::min(GEMM_KC, K - k0);
    const float* a_slice = trans_a ? A + k0 * lda : A + k0;
    const float* b_slice = trans_b ? B + k0 : B + k0 * ldb;
    gemm_slice(trans_a, trans_b, M, N, kc, a_slice, lda, b_slice, ldb, C, ldc, accumulate || k0 > 0);
  }
}

}  // namespace qkv::kernels
