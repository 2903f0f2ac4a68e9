// GEMM's edges: the blocks of C that are not a whole MR × NR register tile,
// and C's last 1 or 2 columns as dot products. gemm.cpp has the idea and
// the micro-kernel for whole tiles; this file makes the edges cost what
// they compute:
//
//   - A block at C's bottom or right edge runs a kernel built for its own
//     rows and columns, not the whole tile's: the packed panels are
//     zero-padded, so the tile's kernel would get the sums right, but at
//     n = 61 it would do MR rows' arithmetic for C's last row.
//   - Its last columns, if at most half a batch, run on half-width
//     registers (half_batch), in the same loop as the whole batches before
//     them: a whole batch would do twice the arithmetic they keep.
//   - A kernel with fewer than 8 accumulators sums even and odd k apart.
//   - A block cut by C's right edge writes only C's columns (store_c).
//   - The last panel of a packed operand is zero-padded only as far as an
//     edge kernel reads (pack_edge_panel).
//   - C's last 1 or 2 columns, when A is read in place as stored, are dot
//     products along k (dot_kernel).
//
// Which kernel sums an element of C depends only on where the element is
// in C (blocks start at multiples of MR and NR whatever the threads), so
// the result does not depend on the thread count.
//
// All of it is SIMD: one SIMD section (simd.hpp), empty in the scalar build.
#include "kernels/simd.hpp"

#if QKV_SIMD
#include <algorithm>
#include <utility>

#include "kernels/gemm_edges.hpp"

namespace qkv::kernels::gemm_detail {

// ---- the last panel of a packed operand -------------------------------------------

// Its valid rows, each walked along X's contiguous direction, and zeros.
template <int64_t R>
void pack_edge_panel(int64_t valid, int64_t depth, const float* x, int64_t row_stride, int64_t k_stride, float* panel) {
  if (row_stride != 1) {
    std::fill(panel, panel + R * depth, 0.0f);
    for (int64_t r = 0; r < valid; ++r)
      for (int64_t k = 0; k < depth; ++k) panel[k * R + r] = x[r * row_stride + k * k_stride];
    return;
  }
  // k by k, and zeros only up to the end of the last batch an edge kernel
  // reads: a 64-wide panel of B is mostly padding for a 10-column edge.
  // With AVX-512 each k is whole batches and one masked load that zeros the
  // lanes past `valid` (the scalar loop compiles to a vectorized copy with
  // blends).
  if constexpr (W == 16 && R % W == 0) {
    const int64_t full = valid / W, rest = valid % W;
    for (int64_t k = 0; k < depth; ++k) {
      const float* from = x + k * k_stride;
      float* to = panel + k * R;
      for (int64_t c = 0; c < full; ++c) batch::load_unaligned(from + c * W).store_unaligned(to + c * W);
      if (rest != 0) load_first(from + full * W, rest).store_unaligned(to + full * W);
    }
    return;
  }
  const int64_t used = std::min(R, (valid + W - 1) / W * W);
  for (int64_t k = 0; k < depth; ++k)
    for (int64_t r = 0; r < used; ++r) panel[k * R + r] = r < valid ? x[k * k_stride + r] : 0.0f;
}

static_assert(MR != NR);  // one instance each
template void pack_edge_panel<MR>(int64_t, int64_t, const float*, int64_t, int64_t, float*);
template void pack_edge_panel<NR>(int64_t, int64_t, const float*, int64_t, int64_t, float*);

// ---- blocks smaller than the tile --------------------------------------------------

namespace {

// C[0:n] (+)= the first n lanes of v, or all of them when n is more: a
// block cut by C's right edge writes only its valid columns.
template <class V>
void store_c(float* c, V v, int64_t n, bool accumulate) {
  if (n >= static_cast<int64_t>(V::size)) {
    if (accumulate) v += V::load_unaligned(c);
    v.store_unaligned(c);
    return;
  }
  if (accumulate) v += load_first<V>(c, n);
  store_first(c, v, n);
}

// C[0:ROWS, 0:nr] (+)= Apanel(ROWS × kc) · Bpanel(kc × COLS), where the
// kernel reads COLS = BATCHES whole batches and, with HALF, a half batch
// after them: gemm.cpp's micro_kernel for a smaller block (it has the
// comments), with three additions.
template <int64_t ROWS, int64_t BATCHES, bool HALF, ALayout LAYOUT, bool B_IN_PLACE>
void edge_micro_kernel(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* C, int64_t ldc,
                       int64_t nr, bool accumulate, bool prefetch_c) {
  using H = half_batch;
  constexpr int64_t COLS = BATCHES * W + (HALF ? H::size : 0);
  constexpr int64_t ACC_BATCHES = std::max<int64_t>(BATCHES, 1), ACC_HALVES = HALF ? ROWS : 1;  // (no empty arrays)
  const int64_t a_rs = LAYOUT == ALayout::rows ? lda : 1;
  const int64_t a_cs = LAYOUT == ALayout::packed ? MR : LAYOUT == ALayout::rows ? 1 : lda;
  batch acc[ROWS][ACC_BATCHES];
  H half_acc[ACC_HALVES];  // the half batch, with HALF
  for (int64_t r = 0; r < ROWS; ++r)
    for (int64_t c = 0; c < BATCHES; ++c) acc[r][c] = batch(0.0f);
  for (int64_t r = 0; r < ACC_HALVES; ++r) half_acc[r] = H(0.0f);

  constexpr int64_t LINE = 16;  // ask for the C block now, as micro_kernel does
  for (int64_t r = 0; r < ROWS && prefetch_c; ++r) {
    for (int64_t j = 0; j < COLS; j += LINE) __builtin_prefetch(C + r * ldc + j, /*for writing*/ 1);
    __builtin_prefetch(C + r * ldc + COLS - 1, 1);
  }

  // 1. The half batch shares the loop and, after 2 or more whole batches,
  //    the low half of their A broadcast; after one, a broadcast of its own
  //    is faster.
  auto step = [&](batch(&sum)[ROWS][ACC_BATCHES], H(&half_sum)[ACC_HALVES]) {
    batch b_row[ACC_BATCHES];
    for (int64_t c = 0; c < BATCHES; ++c)
      b_row[c] = B_IN_PLACE ? batch::load_unaligned(b + c * W) : batch::load_aligned(b + c * W);
    const H b_half = !HALF        ? H(0.0f)
                     : B_IN_PLACE ? H::load_unaligned(b + BATCHES * W)
                                  : H::load_aligned(b + BATCHES * W);
    for (int64_t r = 0; r < ROWS; ++r) {
      const batch a_rk(a[r * a_rs]);  // broadcast A(r, k) to every lane
      for (int64_t c = 0; c < BATCHES; ++c) sum[r][c] = fmadd(a_rk, b_row[c], sum[r][c]);
      if constexpr (HALF) half_sum[r] = fmadd(BATCHES > 1 ? low_half(a_rk) : H(a[r * a_rs]), b_half, half_sum[r]);
    }
    a += a_cs;
    b += B_IN_PLACE ? ldb : NR;
  };
  if (QKV_SAME_NUMBERS || ROWS * (BATCHES + HALF) >= 8 || kc < 32) {
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) step(acc, half_acc);
  } else {
    // 2. With fewer than 8 accumulators each would wait on the FMA latency
    //    (one FMA per k, 4 cycles apart), so even and odd k go to two sets
    //    added at the end. Not for a short k loop, where the extra sums cost
    //    more than the wait. Nor in a QKV_SAME_NUMBERS build: the two sets
    //    are another order of the sum, which follows the block's size (and
    //    so the register width), where gemm.hpp's order is k after k.
    batch odd[ROWS][ACC_BATCHES];
    H odd_half[ACC_HALVES];
    for (int64_t r = 0; r < ROWS; ++r)
      for (int64_t c = 0; c < BATCHES; ++c) odd[r][c] = batch(0.0f);
    for (int64_t r = 0; r < ACC_HALVES; ++r) odd_half[r] = H(0.0f);
    int64_t k = 0;
#pragma GCC unroll 2
    for (; k + 2 <= kc; k += 2) {
      step(acc, half_acc);
      step(odd, odd_half);
    }
    if (k < kc) step(acc, half_acc);
    for (int64_t r = 0; r < ROWS; ++r)
      for (int64_t c = 0; c < BATCHES; ++c) acc[r][c] += odd[r][c];
    for (int64_t r = 0; r < ACC_HALVES; ++r) half_acc[r] += odd_half[r];
  }

  // 3. A block cut by C's right edge writes only C's nr columns.
  for (int64_t r = 0; r < ROWS; ++r) {
    float* c_row = C + r * ldc;
    for (int64_t c = 0; c < BATCHES; ++c)
      if (c * W < nr) store_c(c_row + c * W, acc[r][c], nr - c * W, accumulate);
    if constexpr (HALF)
      if (BATCHES * W < nr) store_c(c_row + BATCHES * W, half_acc[r], nr - BATCHES * W, accumulate);
  }
}

// The kernel for ROWS rows and HALVES half batches of columns: HALVES / 2
// whole batches and, if HALVES is odd, a half batch. (None for an odd count
// without half batches: half_batches never asks for one.)
template <ALayout LAYOUT, bool B_IN_PLACE, int64_t ROWS, int64_t HALVES>
constexpr EdgeKernel kernel_for() {
  constexpr bool HALF = HALVES % 2 == 1;
  if constexpr (HALF && !HAS_HALF_BATCH)
    return nullptr;
  else
    return edge_micro_kernel<ROWS, HALVES / 2, HALF, LAYOUT, B_IN_PLACE>;
}

template <ALayout LAYOUT, bool B_IN_PLACE, int64_t ROWS, int64_t... H>
constexpr std::array<EdgeKernel, 2 * NB> row_of_kernels(std::integer_sequence<int64_t, H...>) {
  return {kernel_for<LAYOUT, B_IN_PLACE, ROWS, H + 1>()...};
}
template <ALayout LAYOUT, bool B_IN_PLACE, int64_t... R>
constexpr std::array<std::array<EdgeKernel, 2 * NB>, MR> table_of_kernels(std::integer_sequence<int64_t, R...>) {
  return {row_of_kernels<LAYOUT, B_IN_PLACE, R + 1>(std::make_integer_sequence<int64_t, 2 * NB>{})...};
}
// [rows - 1][half batches - 1]
template <ALayout LAYOUT, bool B_IN_PLACE>
constexpr auto kernels_for() {
  return table_of_kernels<LAYOUT, B_IN_PLACE>(std::make_integer_sequence<int64_t, MR>{});
}

}  // namespace

// (A packed is never read with B in place: no kernels for that.)
constexpr EdgeKernels kEdgeKernels = {{
    {kernels_for<ALayout::packed, false>(), {}},
    {kernels_for<ALayout::rows, false>(), kernels_for<ALayout::rows, true>()},
    {kernels_for<ALayout::columns, false>(), kernels_for<ALayout::columns, true>()},
}};

// ---- C's last columns as dot products ----------------------------------------------

void pack_dot_columns(int64_t cols, int64_t kc, const float* b, int64_t b_k, int64_t b_col, float* bt, int64_t ldbt) {
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t k = 0; k < kc; ++k) bt[j * ldbt + k] = b[k * b_k + j * b_col];
    std::fill(bt + j * ldbt + kc, bt + (j + 1) * ldbt, 0.0f);
  }
}

namespace {

// C[0:rows, 0:COLS] (+)= A(rows × kc, rows lda apart) · bt(COLS × kc)ᵀ,
// bt's rows ldbt apart and zero from kc to ldbt (a multiple of W).
//
// A half-batch tail costs a half-width FMA for every row and k of C's last
// columns; one column's dot product costs COLS / W of a full one. So the
// last 1 or 2 columns of C (n = 97: 1 past 6 whole batches) are rows of A,
// read in place along k, against those columns of B copied out as rows, W
// values of k per FMA, and one horizontal add per W sums (sums_of). Not for
// 3 or 4 columns, whose tail shares the whole batches' loop and A
// broadcasts; not for A packed or stored transposed, whose rows are not
// contiguous along k.
//
// W / COLS rows at a time, so that their W sums fill one sums_of (per MR
// rows, 1 column's 4 sums would take a whole reduction). A last group past
// `rows` reads the last row again for the rows it lacks and drops their
// sums. Where a row falls in its group (threads cut C's rows at multiples
// of MR) changes nothing in its sums: every lane of sums_of adds in the
// same order.
template <int64_t COLS>
void dot_kernel(int64_t rows, int64_t kc, const float* a, int64_t lda, const float* bt, int64_t ldbt, float* C,
                int64_t ldc, bool accumulate) {
  constexpr int64_t ROWS = W / COLS;
  static_assert(ROWS * COLS == W);
  for (int64_t r0 = 0; r0 < rows; r0 += ROWS) {
    const float* a_r[ROWS];
    for (int64_t r = 0; r < ROWS; ++r) a_r[r] = a + std::min(r0 + r, rows - 1) * lda;
    batch sum[W];  // C(r0 + r, j) in sum[r·COLS + j]
    for (batch& x : sum) x = batch(0.0f);
    auto step = [&](int64_t k, auto load_a) {
      batch b[COLS];
      for (int64_t j = 0; j < COLS; ++j) b[j] = batch::load_aligned(bt + j * ldbt + k);
      for (int64_t r = 0; r < ROWS; ++r) {
        const batch a_rk = load_a(a_r[r] + k);  // A(r0 + r, k : k + W)
        for (int64_t j = 0; j < COLS; ++j) sum[r * COLS + j] = fmadd(a_rk, b[j], sum[r * COLS + j]);
      }
    };
    int64_t k = 0;
    for (; k + W <= kc; k += W) step(k, [](const float* p) { return batch::load_unaligned(p); });
    // The last step reads A's row only up to kc: A's last row may end where its memory does.
    if (k < kc) step(k, [n = kc - k](const float* p) { return load_first(p, n); });
    alignas(64) float total[W];
    sums_of(sum).store_aligned(total);
    for (int64_t r = 0; r < std::min(ROWS, rows - r0); ++r) {
      float* c = C + (r0 + r) * ldc;
      for (int64_t j = 0; j < COLS; ++j) c[j] = accumulate ? c[j] + total[r * COLS + j] : total[r * COLS + j];
    }
  }
}

}  // namespace

void dot_products(int64_t cols, int64_t rows, int64_t kc, const float* a, int64_t lda, const float* bt, int64_t ldbt,
                  float* C, int64_t ldc, bool accumulate) {
  if constexpr (DOT_COLS >= 2)
    if (cols == 2) return dot_kernel<2>(rows, kc, a, lda, bt, ldbt, C, ldc, accumulate);
  dot_kernel<1>(rows, kc, a, lda, bt, ldbt, C, ldc, accumulate);
}

}  // namespace qkv::kernels::gemm_detail

#endif  // QKV_SIMD
