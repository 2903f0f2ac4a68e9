// GEMM: C = op(A)·op(B), the kernel under every matmul, bmm and Linear.
//
// The SIMD version follows the GotoBLAS / BLIS design, kept to its bones:
//
//   1. Cut K into slices of KC, N into blocks of NC and M into blocks of MC,
//      so the pieces being worked on stay in cache.
//   2. Pack each block into a contiguous buffer laid out in exactly the order
//      the micro-kernel reads it: B into panels of NR columns, A into panels
//      of MR rows. Packing is also where transposes vanish and where edges are
//      zero-padded, so the micro-kernel never sees either. (Against a narrow
//      block of B, A is read in place instead: see A_IN_PLACE_N; and a small
//      B as well: see B_IN_PLACE_FLOATS.)
//   3. A micro-kernel computes one MR×NR block of C in registers: for each k it
//      loads one row of the B panel (NR floats = NR/W SIMD batches),
//      broadcasts MR values of the A panel, and does MR·NR/W fused
//      multiply-adds. Blocks at
//      C's bottom and right edges run the same kernel built for their size
//      (but C's last 1 or 2 columns, often: see dot_kernel).
//   4. Threads (kernels/parallel.hpp) split C into blocks of rows, or of rows
//      and columns, never K, so that every element is summed in one order
//      whatever the thread count; a batch of products is split by matrices.
//
// Left out on purpose: prefetching the operands (only C's block is
// prefetched, see micro_kernel), hand-written assembly, and separate kernels
// for small or skinny shapes (small shapes only skip packing: A, and B when
// not transposed). Those buy
// the last 20-40 % in a real BLAS; here they would bury the idea.
#include "kernels/gemm.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "kernels/gemm_simd.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace qkv::kernels {

// ---- reference -------------------------------------------------------------------

// C[i, j] (+)= Σₖ op(A)[i, k] · op(B)[k, j]
void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      float sum = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        float a = trans_a ? A[k * lda + i] : A[i * lda + k];
        float b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
        sum += a * b;
      }
      C[i * ldc + j] = accumulate ? C[i * ldc + j] + sum : sum;
    }
  }
}

// ---- SIMD ------------------------------------------------------------------------

namespace {

using namespace gemm_detail;  // the SIMD operations xsimd 8.1 lacks (gemm_simd.hpp)

// An aligned buffer: packed panels are read with aligned loads.
using aligned_floats = std::vector<float, xsimd::aligned_allocator<float>>;

// Register block: the micro-kernel keeps MR × NR of C in MR·(NR/W)
// registers, plus NR/W B batches and the A broadcast, and for each k does
// MR·NR/W fused multiply-adds against NR/W + MR loads (B's row, A's
// broadcasts). The accumulators must also outnumber the FMAs in flight
// (latency × FMA units: 4 × 2 = 8 on Intel, 4 × 1 = 4 on AMD Zen 4).
//   AVX2, 16 registers: 6 × 2W, 12 accumulators.
//   AVX-512 on Intel (two 512-bit FMA units): 8 × 2W, 16 accumulators.
//   AVX-512 on AMD Zen 4 (one 512-bit FMA a cycle): 4 × 4W, 16
//     accumulators, and 8 loads per 16 FMAs rather than 10.
//     (GCC 12's -march=native calls Zen 4 znver3.)
// The shapes measured against each: docs/gemm.md.
#if defined(__znver3__) || defined(__znver4__) || defined(__znver5__)
constexpr int64_t MR = W >= 16 ? 4 : 6, NR = (W >= 16 ? 4 : 2) * W;
#else
constexpr int64_t MR = W >= 16 ? 8 : 6, NR = 2 * W;
#endif

// Cache blocks. A KC×NR panel of B (16-32 KB) is reused by every A panel, so
// it should sit in L1 (Zen 4's 64 KB one sits in L2, which feeds its 4 B
// loads per 16 FMAs easily); the MC×KC block of A (~100 KB) in L2; the
// KC×NC block of B (~2 MB) in L2/L3. MC and NC are multiples of MR and NR.
constexpr int64_t KC = 256;
constexpr int64_t MC = 96;  // a multiple of 4, 6 and 8
static_assert(MC % MR == 0);
constexpr int64_t NC = 2048;

// Packing A as stored is a transpose (MR rows gathered into columns), about a
// cycle per element, and the packed block then serves nc / NR micro-kernels,
// 2·nc flops per element. For nc ≤ 512 that copy is 6 % or more of the
// arithmetic, so A is read in place instead: the micro-kernel broadcasts
// straight from MR rows of A. For wider blocks the copy is paid back by
// unit-stride reads (rows a power of two apart crowd a few L1 sets).
constexpr int64_t A_IN_PLACE_N = 512;

// A stored transposed, (K, M), holds the MR values of one k side by side, so
// its panels can be read in place too (a_rs = 1, a_cs = lda). But packing it
// is a plain copy, cheaper than the transpose above, while the kc rows of A
// that the micro-kernel then walks, lda apart, must stay in L1 from one B
// panel to the next: with 6- or 8-row panels that holds for blocks up to
// 128 columns, with 4-row panels (16 bytes of each of the kc rows) up to 512.
constexpr int64_t A_T_IN_PLACE_N = MR <= 4 ? 512 : 128;

// One whole panel of R rows, gathered into columns (packed[k][r] = x[r, k]),
// RUN rows at a time: for each k the RUN values of one k, one per row, so
// the lines of those RUN rows must stay in L1 from one k to the next. That
// fails when the R rows span more than L1 holds at a power-of-two stride:
// they fall into a few of its sets and evict each other (Bᵀ with 512
// columns: rows 2 KB apart, 64 of them in 2 sets of 8 lines). Such rows go
// 16 at a time, which fit; rows that fit in L1 anyway go all R at a time,
// as one vector store per k, which small products need.
constexpr int64_t L1_FLOATS = 8 * 1024;  // 32 KB, the L1 data cache of Zen 4 (Intel's: 32-48 KB)

template <int64_t R, int64_t RUN>
void gather_panel(int64_t depth, const float* x, int64_t row_stride, int64_t k_stride, float* panel) {
  for (int64_t r0 = 0; r0 < R; r0 += RUN)
    for (int64_t k = 0; k < depth; ++k)
      for (int64_t r = r0; r < r0 + RUN; ++r) panel[k * R + r] = x[r * row_stride + k * k_stride];
}

// Pack a rows × depth slice of a matrix into panels of R rows each:
//
//   packed[p][k][r] = X(p·R + r, k)     where X(r, k) = X[r·row_stride + k·k_stride]
//
// so a micro-kernel reading panel p walks memory straight through, R values per
// k. The last panel keeps the same layout, R floats per k, its valid rows
// followed by zero rows: all of them, or (see below) at least up to a whole
// SIMD batch, the most an edge kernel reads (B's columns; A's edge kernels
// read only valid rows). Zeros rather than leftovers keep stale NaNs and
// denormals out of that arithmetic.
//
// Both operands go through here. For A the "rows" are C's rows (i); for B they
// are C's columns (j). A transpose only swaps the two strides.
//
// R is a compile-time constant so that the copy of one k (R floats) unrolls
// into whole SIMD loads and stores. When the panel's R values at one k lie
// next to each other in X (row_stride 1: B as stored, or Aᵀ) that copy is a
// plain vector copy; otherwise (A as stored, or Bᵀ) it gathers R rows, each
// read front to back. Packing costs one pass over the operand against
// 2·(other dimension) flops per element, so a small product has time only
// for a copy at vector speed, not a scalar, branchy one.
template <int64_t R>
void pack_panels(int64_t rows, int64_t depth, const float* X, int64_t row_stride, int64_t k_stride, float* packed) {
  const int64_t whole = rows / R * R;  // rows in whole panels; panel p0 / R starts at packed + p0·depth
  if (row_stride == 1) {
    // The R values of one k are a plain vector copy. Whole panels are packed
    // K_RUN values of k at a time across all of them, so that X is read
    // along its rows (K_RUN streams the prefetcher follows) rather than down
    // a column of rows, one page apart when X is wide.
    constexpr int64_t K_RUN = 8;
    for (int64_t k0 = 0; k0 < depth; k0 += K_RUN) {
      const int64_t k1 = std::min(depth, k0 + K_RUN);
      for (int64_t p0 = 0; p0 < whole; p0 += R) {
        float* panel = packed + p0 * depth;
        for (int64_t k = k0; k < k1; ++k)
          for (int64_t r = 0; r < R; ++r) panel[k * R + r] = X[p0 + k * k_stride + r];
      }
    }
  } else {
    // R rows gathered into columns; see gather_panel for the row runs.
    constexpr int64_t ROW_RUN = R < 16 ? R : 16;
    const bool rows_fit_l1 = R * row_stride <= L1_FLOATS;
    for (int64_t p0 = 0; p0 < whole; p0 += R) {
      float* panel = packed + p0 * depth;
      const float* x = X + p0 * row_stride;
      if (rows_fit_l1)
        gather_panel<R, R>(depth, x, row_stride, k_stride, panel);
      else
        gather_panel<R, ROW_RUN>(depth, x, row_stride, k_stride, panel);
    }
  }
  if (whole == rows) return;
  // The edge panel: its valid rows, each walked along X's contiguous
  // direction, and zeros.
  const int64_t valid = rows - whole;
  float* panel = packed + whole * depth;
  const float* x = X + whole * row_stride;
  if (row_stride == 1) {
    // k by k, and zeros only up to `used`, the last batch an edge kernel
    // reads: a 64-wide panel of B is mostly padding for a 10-column edge.
    // With AVX-512 each k is whole batches and one masked load that zeros
    // the lanes past `valid` (the loop below compiles to a vectorized copy
    // with blends).
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
  } else {
    std::fill(panel, panel + R * depth, 0.0f);
    for (int64_t r = 0; r < valid; ++r)
      for (int64_t k = 0; k < depth; ++k) panel[k * R + r] = x[r * row_stride + k * k_stride];
  }
}

// C[0:n] (+)= the first n lanes of v, or all of them when n is more: a
// block cut by C's right edge writes only its valid columns (masked
// loads and stores: gemm_simd.hpp).
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

// Where the micro-kernel finds A(r, k), the element of its A panel in row r
// (of C's block) and at depth k:
//   packed:  a packed panel, a[k·MR + r]: the MR values of one k side by side
//   rows:    A as stored, read in place, a[r·lda + k]: one row of A per row of C
//   columns: Aᵀ as stored, read in place, a[r + k·lda]: one row of Aᵀ per k
// Each layout gets a micro-kernel of its own, so that the unit stride (and
// MR) are constants in the k loop: one loop serving all three keeps both
// strides and their multiples in registers, and with 8 rows GCC ran out of
// general registers and parked row offsets in vector registers.
enum class ALayout { packed, rows, columns };

// C[0:ROWS, 0:nr] (+)= Apanel(ROWS × kc) · Bpanel(kc × BATCHES·W)
//
// b holds kc rows of NR floats, of which the kernel reads the first
// BATCHES·W, and with HALF_TAIL half a batch more (columns read on a
// half_batch: see block_kernel). Inside C blocks are MR × NR (ROWS = MR,
// BATCHES = NR / W); at C's bottom and right edges, see block_kernel. lda
// is only read by the in-place layouts.
template <int64_t ROWS, int64_t BATCHES, ALayout LAYOUT, bool B_IN_PLACE, class V = batch, bool HALF_TAIL = false>
void micro_kernel(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* C, int64_t ldc,
                  int64_t nr, bool accumulate, bool prefetch_c) {
  constexpr int64_t VW = V::size;  // W, or W / 2 for a half_batch
  using H = half_batch;
  constexpr int64_t HW = HALF_TAIL ? H::size : 0, TAILS = HALF_TAIL ? ROWS : 1;
  constexpr int64_t COLS = BATCHES * VW + HW;
  // A(r, k) = a[r·a_rs + k·a_cs]
  const int64_t a_rs = LAYOUT == ALayout::rows ? lda : 1;
  const int64_t a_cs = LAYOUT == ALayout::packed ? MR : LAYOUT == ALayout::rows ? 1 : lda;
  V acc[ROWS][BATCHES];
  H tail[TAILS];  // the half batch past the whole ones, with HALF_TAIL
  for (int64_t r = 0; r < ROWS; ++r)
    for (int64_t c = 0; c < BATCHES; ++c) acc[r][c] = V(0.0f);
  for (int64_t r = 0; r < TAILS; ++r) tail[r] = H(0.0f);

  // Ask for the C block now, so that its lines arrive while the k loop runs
  // instead of stalling the write-back. C's rows are ldc apart, too far for
  // the hardware prefetcher to guess, and C is often not in cache at all: a
  // new output, or one too large for L2. One prefetch per 64-byte line (16
  // floats) of a row, and its last float for the line an unaligned row spills
  // into. (A prefetch never faults, so edge blocks may ask past C.) Not
  // for a C small enough to be in cache already: see PREFETCH_C_FLOATS.
  constexpr int64_t LINE = 16;
  for (int64_t r = 0; r < ROWS && prefetch_c; ++r) {
    for (int64_t j = 0; j < COLS; j += LINE) __builtin_prefetch(C + r * ldc + j, /*for writing*/ 1);
    __builtin_prefetch(C + r * ldc + COLS - 1, 1);
  }

  // The whole of GEMM's arithmetic happens in this step: an outer product of
  // one A column (ROWS values) and one B row (COLS values) added into sum.
  auto step = [&](V(&sum)[ROWS][BATCHES], H(&tail_sum)[TAILS]) {
    V b_row[BATCHES];
    for (int64_t c = 0; c < BATCHES; ++c)
      b_row[c] = B_IN_PLACE ? V::load_unaligned(b + c * VW) : V::load_aligned(b + c * VW);
    H b_tail = HALF_TAIL ? H::load_unaligned(b + BATCHES * VW) : H(0.0f);
    for (int64_t r = 0; r < ROWS; ++r) {
      V a_rk(a[r * a_rs]);  // broadcast A(r, k) to every lane
      for (int64_t c = 0; c < BATCHES; ++c) sum[r][c] = xsimd::fma(a_rk, b_row[c], sum[r][c]);
      if constexpr (HALF_TAIL)
        tail_sum[r] = xsimd::fma(BATCHES > 1 ? low_half(a_rk) : H(a[r * a_rs]), b_tail, tail_sum[r]);
    }
    a += a_cs;
    b += B_IN_PLACE ? ldb : NR;
  };
  if (ROWS * (BATCHES + HALF_TAIL) >= 8 || kc < 32) {
    // Unrolled by 4: the loop's own counting then takes less of the ports
    // the FMAs and loads need.
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) step(acc, tail);
  } else {
    // An edge kernel with fewer than 8 accumulators would wait on the FMA
    // latency (each accumulator takes one FMA per k, 4 cycles apart), so it
    // sums even and odd k apart and adds the two at the end. Not for a short
    // k loop, where the extra sums cost more than the wait.
    V odd[ROWS][BATCHES];
    H odd_tail[TAILS];
    for (int64_t r = 0; r < ROWS; ++r)
      for (int64_t c = 0; c < BATCHES; ++c) odd[r][c] = V(0.0f);
    for (int64_t r = 0; r < TAILS; ++r) odd_tail[r] = H(0.0f);
    int64_t k = 0;
#pragma GCC unroll 2
    for (; k + 2 <= kc; k += 2) {
      step(acc, tail);
      step(odd, odd_tail);
    }
    if (k < kc) step(acc, tail);
    for (int64_t r = 0; r < ROWS; ++r)
      for (int64_t c = 0; c < BATCHES; ++c) acc[r][c] += odd[r][c];
    for (int64_t r = 0; r < TAILS; ++r) tail[r] += odd_tail[r];
  }

  // Write back: whole batches straight to C, and a block cut by C's right
  // edge touching nothing past C's nr valid columns (see store_c).
  for (int64_t r = 0; r < ROWS; ++r) {
    float* c_row = C + r * ldc;
    for (int64_t c = 0; c < BATCHES; ++c)
      if (c * VW < nr) store_c(c_row + c * VW, acc[r][c], nr - c * VW, accumulate);
    if constexpr (HALF_TAIL)
      if (BATCHES * VW < nr) store_c(c_row + BATCHES * VW, tail[r], nr - BATCHES * VW, accumulate);
  }
}

// C[0:mr, 0:nr] (+)= Apanel · Bpanel for a block of mr ≤ MR rows and nr ≤ NR
// columns. The packed panels are zero-padded to MR × NR either way, but an
// edge block runs the micro-kernel built for exactly mr rows and just enough
// batches for nr columns, so that it does only the work it keeps: at n = 61
// a full-size kernel on the last row of C would do MR rows' arithmetic for it.
using MicroKernel = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, bool,
                             bool);
constexpr int64_t NB = NR / W;  // SIMD batches in a row of the block
template <ALayout LAYOUT, bool B_IN_PLACE, int64_t ROWS, int64_t... B>
constexpr std::array<MicroKernel, NB> row_of_kernels(std::integer_sequence<int64_t, B...>) {
  return {micro_kernel<ROWS, B + 1, LAYOUT, B_IN_PLACE>...};
}
template <ALayout LAYOUT, bool B_IN_PLACE, int64_t... R>
constexpr std::array<std::array<MicroKernel, NB>, MR> micro_kernels(std::integer_sequence<int64_t, R...>) {
  return {row_of_kernels<LAYOUT, B_IN_PLACE, R + 1>(std::make_integer_sequence<int64_t, NB>{})...};
}
template <ALayout LAYOUT, bool B_IN_PLACE>  // [rows - 1][batches - 1]
constexpr auto kMicroKernels = micro_kernels<LAYOUT, B_IN_PLACE>(std::make_integer_sequence<int64_t, MR>{});

// The last few columns of an edge block, at most half a batch, run on
// registers half as wide (8 floats of AVX-512, 4 of AVX2): a full batch
// would do twice the arithmetic they keep. The last 1 or 2 columns,
// when A is read in place as stored, are dot products instead (see
// dot_kernel).
template <ALayout LAYOUT, bool B_IN_PLACE, int64_t... R>
constexpr std::array<MicroKernel, MR> half_kernels(std::integer_sequence<int64_t, R...>) {
  return {micro_kernel<R + 1, 1, LAYOUT, B_IN_PLACE, half_batch>...};
}
template <ALayout LAYOUT, bool B_IN_PLACE>  // [rows - 1]
constexpr auto kHalfKernels = half_kernels<LAYOUT, B_IN_PLACE>(std::make_integer_sequence<int64_t, MR>{});

// After whole batches, that half batch runs in the same kernel as they do
// (HALF_TAIL), which shares the loop (a kernel of its own for a few
// columns is mostly overhead) and, after 2 or 3 batches, the A broadcasts
// (the low half of the full one; after 1 batch, a broadcast of its own is
// faster).
template <ALayout LAYOUT, bool B_IN_PLACE, int64_t ROWS, int64_t... B>
constexpr std::array<MicroKernel, NB - 1> row_of_tail_kernels(std::integer_sequence<int64_t, B...>) {
  return {micro_kernel<ROWS, B + 1, LAYOUT, B_IN_PLACE, batch, true>...};
}
template <ALayout LAYOUT, bool B_IN_PLACE, int64_t... R>
constexpr std::array<std::array<MicroKernel, NB - 1>, MR> tail_kernels(std::integer_sequence<int64_t, R...>) {
  return {row_of_tail_kernels<LAYOUT, B_IN_PLACE, R + 1>(std::make_integer_sequence<int64_t, NB - 1>{})...};
}
template <ALayout LAYOUT, bool B_IN_PLACE>  // [rows - 1][whole batches - 1]
constexpr auto kTailKernels = tail_kernels<LAYOUT, B_IN_PLACE>(std::make_integer_sequence<int64_t, MR>{});

// The last 1 or 2 columns of C (n = 97: 1 past 6 whole batches) as dot
// products along k instead: rows of A read in place, along their rows,
// against those columns of B copied out as rows (bt), W values of k per
// FMA, and one horizontal add per W sums (sums_of). A half-batch tail
// costs a half-width FMA for every row and k (on Zen 4 half a cycle), this
// COLS / W of a full one. Not for 3 or 4 columns, whose tail shares the
// whole batches' loop and A broadcasts and is no slower. Not for A packed
// or stored transposed, whose rows are not contiguous along k; and not
// without half batches (SSE), which has no tails either.
constexpr int64_t DOT_COLS = HAS_HALF_BATCH ? 2 : 0;

// C[0:rows, 0:COLS] (+)= A(rows × kc, rows lda apart) · bt(COLS × kc)ᵀ,
// bt's rows ldbt apart and zero from kc to ldbt (a multiple of W).
//
// W / COLS rows at a time, so that their W sums fill one sums_of (per MR
// rows, 1 column's 4 sums would take a whole reduction). A last group past `rows` reads
// the last row again for the rows it lacks and drops their sums. Where a
// row falls in its group (threads cut C's rows at multiples of MR) changes
// nothing in its sums: every lane of sums_of adds in the same order.
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
        for (int64_t j = 0; j < COLS; ++j) sum[r * COLS + j] = xsimd::fma(a_rk, b[j], sum[r * COLS + j]);
      }
    };
    int64_t k = 0;
    for (; k + W <= kc; k += W) step(k, [](const float* p) { return batch::load_unaligned(p); });
    if (k < kc) step(k, [n = kc - k](const float* p) { return load_first(p, n); });
    alignas(64) float total[W];
    sums_of(sum).store_aligned(total);
    for (int64_t r = 0; r < std::min(ROWS, rows - r0); ++r) {
      float* c = C + (r0 + r) * ldc;
      for (int64_t j = 0; j < COLS; ++j) c[j] = accumulate ? c[j] + total[r * COLS + j] : total[r * COLS + j];
    }
  }
}

using DotKernel = void (*)(int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, bool);
constexpr std::array<DotKernel, 2> kDotKernels = {dot_kernel<1>, dot_kernel<2>};  // [columns - 1]

// The columns the kernels of a block nr columns wide read from each row of
// its B panel: whole batches, and a last part of at most half a batch on a
// half batch (see block_kernel).
int64_t columns_read(int64_t nr) {
  const int64_t rest = nr % W;
  if (rest == 0 || rest > W / 2 || !HAS_HALF_BATCH) return (nr + W - 1) / W * W;
  return nr / W * W + W / 2;
}

// b is a packed panel (B_IN_PLACE false) or B itself, rows ldb apart.
template <ALayout LAYOUT, bool B_IN_PLACE>
void block_kernel(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* C, int64_t ldc,
                  int64_t mr, int64_t nr, bool accumulate, bool prefetch_c) {
  if (mr == MR && nr == NR)
    return micro_kernel<MR, NR / W, LAYOUT, B_IN_PLACE>(kc, a, lda, b, ldb, C, ldc, nr, accumulate, prefetch_c);
  const int64_t whole = nr / W, rest = nr % W;  // whole batches, and the columns past them
  if (rest == 0 || rest > W / 2 || !HAS_HALF_BATCH)
    return kMicroKernels<LAYOUT, B_IN_PLACE>[mr - 1][(nr + W - 1) / W - 1](kc, a, lda, b, ldb, C, ldc, nr, accumulate,
                                                                           prefetch_c);
  if (whole > 0)
    return kTailKernels<LAYOUT, B_IN_PLACE>[mr - 1][whole - 1](kc, a, lda, b, ldb, C, ldc, nr, accumulate, prefetch_c);
  kHalfKernels<LAYOUT, B_IN_PLACE>[mr - 1](kc, a, lda, b, ldb, C, ldc, rest, accumulate, prefetch_c);  // whole == 0
}

// ---- the driver -------------------------------------------------------------------

// B as stored (not transposed) holds each k's NR columns of a panel side by
// side, so the micro-kernel can read its panels in place too (rows ldb
// apart, unaligned loads) while A is read in place. For a small product
// packing B is a pass over all of it against only 2·M flops per element.
// Only an edge panel whose kernels would read past its last column (see
// columns_read) is still packed: masked loads in the k loop cost far more
// than that copy. Up to 64K floats of B (256²) with rows up to 256 floats
// apart: further apart, the kc rows of a panel crowd a few L1 sets, and a
// packed panel is faster.
constexpr int64_t B_IN_PLACE_FLOATS = 256 * 256, B_IN_PLACE_LDB = 256;

// Below this many flops (2·M·N·K) a product stays on one thread: waking the
// pool's workers costs tens of microseconds, a 128³ product about 30.
constexpr double PARALLEL_FLOPS = 4e6;

// A product's operands, the transposes turned into strides:
//   op(A)(i, k) = A[i·a_row + k·a_k]      op(B)(k, j) = B[k·b_k + j·b_col]
struct Operands {
  const float* A;
  int64_t a_row, a_k;
  const float* B;
  int64_t b_k, b_col;
  float* C;
  int64_t ldc;
  bool trans_a;
  bool prefetch_c = true;  // false when C (M × N) is below PREFETCH_C_FLOATS
};

// A C under 512 KB (half of Zen 4's 1 MB L2) is most likely still in cache
// from its last use, and prefetching its blocks in the micro-kernel costs
// more than it brings; a larger C is not, and waiting for it costs more.
constexpr int64_t PREFETCH_C_FLOATS = 128 * 1024;

Operands operands(bool trans_a, bool trans_b, int64_t M, int64_t N, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float* C, int64_t ldc) {
  Operands x{A, trans_a ? 1 : lda, trans_a ? lda : 1, B, trans_b ? 1 : ldb, trans_b ? ldb : 1, C, ldc, trans_a};
  x.prefetch_c = M * N >= PREFETCH_C_FLOATS;
  return x;
}

int64_t round_up(int64_t x, int64_t r) { return (x + r - 1) / r * r; }

// Part p of `parts` of [0, n): the pieces are whole multiples of `unit`
// (but the last, cut by n) and differ by at most one unit.
std::pair<int64_t, int64_t> part(int64_t n, int64_t unit, int64_t parts, int64_t p) {
  const int64_t units = (n + unit - 1) / unit;
  return {units * p / parts * unit, std::min(n, units * (p + 1) / parts * unit)};
}

bool a_in_place(const Operands& x, int64_t nc) { return nc <= (x.trans_a ? A_T_IN_PLACE_N : A_IN_PLACE_N); }

// How many of a block's last columns run as dot products (see dot_kernel):
// the 1 to DOT_COLS past its whole batches, while A is read in place as
// stored; else 0.
int64_t dot_columns(const Operands& x, int64_t nc) {
  const int64_t rest = nc % W;
  return !x.trans_a && a_in_place(x, nc) && rest <= DOT_COLS ? rest : 0;
}

// Where the driver copies those columns, after the block's panels in
// packed_b, and the stride of their rows: dot_kernel's bt and ldbt.
int64_t dot_columns_at(int64_t nc, int64_t kc) { return round_up(nc, NR) * kc; }
int64_t dot_columns_ld(int64_t kc) { return round_up(kc, W); }

// Those columns of a block of op(B), kc deep, as rows for dot_kernel:
// bt[j·ldbt + k] = op(B)(k, j), zeros from kc to ldbt.
void pack_dot_columns(int64_t cols, int64_t kc, const float* b, int64_t b_k, int64_t b_col, float* bt, int64_t ldbt) {
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t k = 0; k < kc; ++k) bt[j * ldbt + k] = b[k * b_k + j * b_col];
    std::fill(bt + j * ldbt + kc, bt + (j + 1) * ldbt, 0.0f);
  }
}

// C[rows, cols] (+)= op(A)[rows, pc : pc+kc] · (the packed B block)[:, cols]:
// one task's share of one K slice. cols are counted from the block's first
// column jc and start at a panel boundary (a multiple of NR). The block's
// last dot_columns(x, nc) columns, if any, the driver copied out as rows
// right after packed_b's panels.
void multiply_block(const Operands& x, std::pair<int64_t, int64_t> rows, std::pair<int64_t, int64_t> cols, int64_t jc,
                    int64_t nc, int64_t pc, int64_t kc, const float* packed_b, bool b_in_place, bool acc) {
  // NOTE: thread_local and only ever growing, so the many small products of
  // attention (one per head) don't each allocate, and every thread of the
  // pool packs its A blocks into its own buffer.
  thread_local aligned_floats packed_a;
  const size_t a_size = static_cast<size_t>(MC * kc);
  if (packed_a.size() < a_size) packed_a.resize(a_size);

  // A is read in place while the block of B is narrow (see A_IN_PLACE_N and
  // A_T_IN_PLACE_N): the micro-kernel takes any strides for A, and an edge
  // kernel reads only the rows it has, so no padding is needed. B may be
  // read in place as well (b_in_place, see B_IN_PLACE_FLOATS), all but an
  // edge panel whose kernels would read past C's last column: that one the
  // driver packed, at its usual place in packed_b.
  const bool in_place = a_in_place(x, nc);
  const int64_t dot = dot_columns(x, nc), ldbt = dot_columns_ld(kc);
  const float* bt = packed_b + dot_columns_at(nc, kc);
  for (int64_t ic = rows.first; ic < rows.second; ic += MC) {
    const int64_t mc = std::min(MC, rows.second - ic);
    // A block: rows ic..ic+mc of op(A), columns pc..pc+kc, as panels of MR rows.
    const float* a_block = x.A + ic * x.a_row + pc * x.a_k;
    if (!in_place) pack_panels<MR>(mc, kc, a_block, x.a_row, x.a_k, packed_a.data());

    // Panel p of B starts p·NR·kc floats in; with p = jr / NR that is jr·kc.
    for (int64_t jr = cols.first; jr < cols.second; jr += NR) {
      for (int64_t ir = 0; ir < mc; ir += MR) {
        float* c_block = x.C + (ic + ir) * x.ldc + (jc + jr);
        const float* b_panel = packed_b + jr * kc;
        const int64_t mr = std::min(MR, mc - ir);
        int64_t nr = std::min(NR, cols.second - jr);
        if (jr + nr == nc) nr -= dot;  // the block's last columns, as dot products below
        if (nr == 0) continue;
        if (b_in_place && (nr == NR || columns_read(nr) == nr)) {
          const float* b = x.B + pc * x.b_k + jc + jr;
          if (x.trans_a)
            block_kernel<ALayout::columns, true>(kc, a_block + ir, x.a_k, b, x.b_k, c_block, x.ldc, mr, nr, acc,
                                                 x.prefetch_c);
          else
            block_kernel<ALayout::rows, true>(kc, a_block + ir * x.a_row, x.a_row, b, x.b_k, c_block, x.ldc, mr, nr,
                                              acc, x.prefetch_c);
        } else if (!in_place) {
          block_kernel<ALayout::packed, false>(kc, packed_a.data() + ir * kc, 0, b_panel, NR, c_block, x.ldc, mr, nr,
                                               acc, x.prefetch_c);
        } else if (x.trans_a) {
          block_kernel<ALayout::columns, false>(kc, a_block + ir, x.a_k, b_panel, NR, c_block, x.ldc, mr, nr, acc,
                                                x.prefetch_c);
        } else {
          block_kernel<ALayout::rows, false>(kc, a_block + ir * x.a_row, x.a_row, b_panel, NR, c_block, x.ldc, mr, nr,
                                             acc, x.prefetch_c);
        }
      }
    }
    if (dot > 0 && cols.second == nc)
      kDotKernels[dot - 1](mc, kc, a_block, x.a_row, bt, ldbt, x.C + ic * x.ldc + jc + nc - dot, x.ldc, acc);
  }
}

// The whole product on up to `threads` threads.
//
// NOTE: the result does not depend on the thread count. Threads split C's
// rows and columns, never K: each element of C is computed by one micro-kernel
// call per K slice, slices in order, k in order within a slice, whichever
// thread runs it and however big its block is (blocks start at multiples of
// MR and NR whatever the split, so the kernel that sums an element, an edge
// kernel or the full one, depends only on where the element is in C).
void gemm_driver(const Operands& x, int64_t M, int64_t N, int64_t K, bool accumulate, int threads) {
  // The packed B block, shared by the tasks of a K slice.
  // NOTE: a task must reach it through `packed`: the name packed_b, inside a
  // task on a worker thread, would be that worker's own (thread_local) buffer.
  thread_local aligned_floats packed_b;
  // (KC, NC) at most, and dot_kernel's columns (see dot_columns) after it
  const int64_t kc_max = std::min(K, KC);
  const size_t b_size =
      static_cast<size_t>(dot_columns_at(std::min(N, NC), kc_max) + DOT_COLS * dot_columns_ld(kc_max));
  if (packed_b.size() < b_size) packed_b.resize(b_size);
  float* const packed = packed_b.data();

  // Tasks: C's rows cut into row_parts pieces of at most MC rows, and, when
  // there are too few of those to keep every thread busy, its columns too.
  // Whole rounds of tasks (a multiple of the thread count) keep the threads
  // evenly loaded. The split changes nothing in the result (see above).
  const int64_t row_panels = (M + MR - 1) / MR;
  int64_t row_parts = (M + MC - 1) / MC, col_parts = 1;
  const bool parallel = threads > 1 && 2.0 * static_cast<double>(M * N) * static_cast<double>(K) >= PARALLEL_FLOPS;
  if (parallel) {
    row_parts = std::min(round_up(row_parts, threads), row_panels);
    if (row_parts < 2 * threads) col_parts = (2 * threads + row_parts - 1) / row_parts;
  }

  // B is read in place when small and not transposed (B_IN_PLACE_FLOATS),
  // for blocks that read A in place: no kernel reads packed A and B in place.
  const bool b_small = x.b_col == 1 && K * N <= B_IN_PLACE_FLOATS && x.b_k <= B_IN_PLACE_LDB;
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t nc = std::min(NC, N - jc);
    const int64_t col_panels = (nc + NR - 1) / NR, cparts = std::min(col_parts, col_panels);
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = std::min(KC, K - pc);
      // Slice pc of K adds onto what slices before it wrote; the first one
      // overwrites C unless the caller asked to accumulate.
      const bool acc = accumulate || pc > 0;
      // B block: rows pc..pc+kc of op(B), columns jc..jc+nc, as panels of NR
      // columns, packed in pieces of whole panels (64K floats or more each).
      const float* b_block = x.B + pc * x.b_k + jc * x.b_col;
      const bool b_in_place = b_small && a_in_place(x, nc);
      const int64_t dot = dot_columns(x, nc);
      if (dot > 0)
        pack_dot_columns(dot, kc, b_block + (nc - dot) * x.b_col, x.b_k, x.b_col, packed + dot_columns_at(nc, kc),
                         dot_columns_ld(kc));
      if (b_in_place) {
        // Only the edge panel, if its kernels would read past its columns.
        const int64_t whole = nc / NR * NR;
        if (whole < nc && dot == 0 && columns_read(nc - whole) != nc - whole)
          pack_panels<NR>(nc - whole, kc, b_block + whole, 1, x.b_k, packed + whole * kc);
      } else {
        const int64_t pack_parts = parallel ? std::min(col_panels, tasks_for(nc * kc, 1 << 16)) : 1;
        parallel_for(pack_parts, [&](int64_t p) {
          auto [j0, j1] = part(nc, NR, pack_parts, p);
          pack_panels<NR>(j1 - j0, kc, b_block + j0 * x.b_col, x.b_col, x.b_k, packed + j0 * kc);
        });
      }
      parallel_for(row_parts * cparts, [&](int64_t t) {
        multiply_block(x, part(M, MR, row_parts, t / cparts), part(nc, NR, cparts, t % cparts), jc, nc, pc, kc, packed,
                       b_in_place, acc);
      });
    }
  }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    // An empty sum is 0: C = 0, or C unchanged when accumulating.
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    return;
  }
  gemm_driver(operands(trans_a, trans_b, M, N, A, lda, B, ldb, C, ldc), M, N, K, accumulate, available_threads());
}

void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, const float* A,
                  const int64_t* a_offsets, int64_t lda, const float* B, const int64_t* b_offsets, int64_t ldb,
                  float* C, int64_t c_stride, int64_t ldc, bool accumulate) {
  if (batch == 0 || M == 0 || N == 0) return;
  // Matrices go to threads whole: tasks of consecutive matrices, each task
  // about 1 MFLOP (or one matrix, when a matrix is bigger), so a batch of
  // tiny products is not cut finer than waking a thread pays for. Each
  // matrix is then one single-threaded gemm. A batch too short to share out
  // evenly (fewer than 4 tasks a thread) of products big enough to split on
  // their own goes one matrix at a time, each on all the threads.
  const double flops = 2.0 * static_cast<double>(M * N) * static_cast<double>(K);
  const int64_t per_task = std::max<int64_t>(1, static_cast<int64_t>(1e6 / std::max(flops, 1.0)));
  const int64_t tasks = (batch + per_task - 1) / per_task;
  const int threads = available_threads();
  auto one = [&](int64_t i, int t) {
    gemm_driver(operands(trans_a, trans_b, M, N, A + a_offsets[i], lda, B + b_offsets[i], ldb, C + i * c_stride, ldc),
                M, N, K, accumulate, t);
  };
  if (K == 0 || tasks < threads || (tasks < 4 * threads && flops >= 4 * PARALLEL_FLOPS)) {
    for (int64_t i = 0; i < batch; ++i) {
      if (K > 0) {
        one(i, threads);
      } else if (!accumulate) {
        for (int64_t r = 0; r < M; ++r) std::fill(C + i * c_stride + r * ldc, C + i * c_stride + r * ldc + N, 0.0f);
      }
    }
    return;
  }
  parallel_for(tasks, [&](int64_t t) {
    for (int64_t i = t * per_task; i < std::min(batch, (t + 1) * per_task); ++i) one(i, 1);
  });
}

}  // namespace qkv::kernels
