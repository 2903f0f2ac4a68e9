// GEMM's edges: what gemm.cpp calls in gemm_edges.cpp for what is not a
// whole register tile, the blocks at C's edges and the last panel of a
// packed operand. Private to the two.
//
// A block at C's bottom or right edge (mr < MR rows, or nr < NR columns)
// runs a micro-kernel built for its size, with its last columns on
// half-width registers; C's last 1 or 2 columns, when A is read in place
// as stored, are dot products along k instead. gemm_edges.cpp says why.
#pragma once
#include <array>
#include <cstdint>

#include "kernels/gemm_simd.hpp"
#include "kernels/gemm_tile.hpp"

namespace qkv::kernels::gemm_detail {

// ---- the last panel of a packed operand -------------------------------------------

// pack_panels' last panel (gemm.cpp), `valid` < R rows of X, depth deep:
// panel[k·R + r] = X(r, k) = x[r·row_stride + k·k_stride] for r < valid,
// and zero after, at least up to a whole batch. For R = MR and NR.
template <int64_t R>
void pack_edge_panel(int64_t valid, int64_t depth, const float* x, int64_t row_stride, int64_t k_stride, float* panel);

// ---- blocks smaller than the tile --------------------------------------------------

// An edge kernel's signature: C[0:rows, 0:nr] (+)= A panel · B panel, kc
// deep, for the rows and the columns the kernel is built for (of which it
// writes only C's first nr). a and lda as for the micro-kernel (ALayout);
// b is a packed panel (rows NR apart) or B itself (rows ldb apart).
using EdgeKernel = void (*)(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* C, int64_t ldc,
                            int64_t nr, bool accumulate, bool prefetch_c);

// A block's kernel reads its columns in half batches (W / 2 floats): nr
// rounded up to whole half batches, or to whole batches in a build without
// half batches (SSE).
inline int64_t half_batches(int64_t nr) {
  constexpr int64_t HALF = W / 2;
  return HAS_HALF_BATCH ? (nr + HALF - 1) / HALF : (nr + W - 1) / W * 2;
}

// The columns a block nr columns wide reads from each row of its B panel.
inline int64_t columns_read(int64_t nr) { return half_batches(nr) * W / 2; }

// Every edge kernel: kEdgeKernels[layout][B read in place][rows - 1][half batches - 1].
using EdgeKernels = std::array<std::array<std::array<std::array<EdgeKernel, 2 * NB>, MR>, 2>, 3>;
extern const EdgeKernels kEdgeKernels;

// The kernel for a block of mr ≤ MR rows and nr ≤ NR columns.
inline EdgeKernel edge_kernel(ALayout layout, bool b_in_place, int64_t mr, int64_t nr) {
  return kEdgeKernels[static_cast<int>(layout)][b_in_place][mr - 1][half_batches(nr) - 1];
}

// ---- C's last columns as dot products ----------------------------------------------

// At most this many of C's last columns run as dot products (none in an
// SSE build, which has no half batches to save). A dot product sums W
// values of k side by side, an order that follows the width: none in a
// QKV_SAME_NUMBERS build either (simd.hpp), whose every C[i, j] is summed
// in gemm.hpp's order. (Nor does such a build sum even and odd k apart in a
// small edge block, gemm_edges.cpp's other order of the default build.)
constexpr int64_t DOT_COLS = HAS_HALF_BATCH && !QKV_SAME_NUMBERS ? 2 : 0;

// How many of a block's nc columns run as dot products: the 1 to DOT_COLS
// past its whole batches, while A is read in place as stored (its rows
// contiguous along k); else 0.
inline int64_t dot_columns(int64_t nc, bool a_rows_in_place) {
  const int64_t rest = nc % W;
  return a_rows_in_place && rest <= DOT_COLS ? rest : 0;
}

// cols ≤ DOT_COLS columns of op(B), kc deep, copied out as rows:
// bt[j·ldbt + k] = op(B)(k, j) = b[k·b_k + j·b_col], zeros from kc to ldbt.
void pack_dot_columns(int64_t cols, int64_t kc, const float* b, int64_t b_k, int64_t b_col, float* bt, int64_t ldbt);

// C[0:rows, 0:cols] (+)= A(rows × kc, rows lda apart) · bt(cols × kc)ᵀ, with
// bt as pack_dot_columns wrote it (ldbt a multiple of W).
void dot_products(int64_t cols, int64_t rows, int64_t kc, const float* a, int64_t lda, const float* bt, int64_t ldbt,
                  float* C, int64_t ldc, bool accumulate);

}  // namespace qkv::kernels::gemm_detail
