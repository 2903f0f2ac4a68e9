// GEMM: C = op(A)·op(B), the kernel under every matmul, bmm and Linear.
//
// This file is the fast GEMM, the SIMD section of the GEMM kernels
// (simd.hpp); their reference section, the loops that define the product
// and the scalar build's gemm_rows, is gemm_reference.cpp. It follows the
// GotoBLAS / BLIS design kept to its bones:
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
//      multiply-adds. The tile MR × NR is chosen per CPU (gemm_tile.hpp).
//   4. The driver walks the blocks and hands them to threads
//      (kernels/parallel.hpp): C's rows, or rows and columns, never K, so
//      that every element is summed in one order whatever the thread count;
//      a batch of products is split by matrices.
//
// Beside it: gemm_edges.cpp, the blocks at C's bottom and right edges, which
// run kernels of their own size (and C's last 1 or 2 columns, often, dot
// products); gemm_simd.hpp, the few SIMD operations xsimd 8.1 lacks. And
// docs/gemm.md: the design at more length, with what was measured.
//
// Left out on purpose: prefetching the operands (only C's block is
// prefetched, see micro_kernel), hand-written assembly, and separate kernels
// for small or skinny shapes (small shapes only skip packing: A, and B when
// not transposed). Those buy the last 20-40 % in a real BLAS; here they would
// bury the idea.
#include "kernels/gemm.hpp"

#include <algorithm>
#include <utility>

#include "kernels/simd.hpp"

#if QKV_SIMD
#include "kernels/gemm_edges.hpp"
#include "kernels/gemm_simd.hpp"
#include "kernels/gemm_tile.hpp"
#include "kernels/parallel.hpp"

namespace qkv::kernels {

namespace {

using namespace gemm_detail;  // the tile, the edges and the SIMD helpers beside this file

// ---- cache blocks ----------------------------------------------------------------

// Cache blocks. A KC×NR panel of B (16-32 KB) is reused by every A panel, so
// it should sit in L1 (Zen 4's 64 KB one sits in L2, which feeds its 4 B
// loads per 16 FMAs easily); the MC×KC block of A (~100 KB) in L2; the
// KC×NC block of B (~2 MB) in L2/L3. MC and NC are multiples of MR and NR.
constexpr int64_t KC = GEMM_KC;  // gemm.hpp: part of the order of every sum
constexpr int64_t MC = 96;       // a multiple of 4, 6 and 8
static_assert(MC % MR == 0);
constexpr int64_t NC = 2048;

// ---- packing ---------------------------------------------------------------------

// One whole panel of R rows, gathered into columns (packed[k][r] = x[r, k]),
// RUN rows at a time: for each k the RUN values of one k, one per row, so
// the lines of those RUN rows must stay in L1 from one k to the next. That
// fails when the R rows span more than L1 holds at a power-of-two stride:
// they fall into a few of its sets and evict each other (Bᵀ with 512
// columns: rows 2 KB apart, 64 of them in 2 sets of 8 lines). Such rows go
// 16 at a time, which fit; rows that fit in L1 anyway go all R at a time,
// as one vector store per k, which small products need.
constexpr int64_t L1_FLOATS = int64_t{8} * 1024;  // 32 KB, the L1 data cache of Zen 4 (Intel's: 32-48 KB)

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
// followed by zero rows: all of them, or at least up to a whole SIMD batch,
// the most an edge kernel reads (B's columns; A's edge kernels read only
// valid rows). Zeros rather than leftovers keep stale NaNs and denormals
// out of that arithmetic.
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
  // The last panel, if rows ends inside one: its valid rows, and zeros (gemm_edges.cpp).
  if (whole < rows)
    pack_edge_panel<R>(rows - whole, depth, X + whole * row_stride, row_stride, k_stride, packed + whole * depth);
}

// ---- when not to pack -------------------------------------------------------------

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

// B as stored (not transposed) holds each k's NR columns of a panel side by
// side, so the micro-kernel can read its panels in place too (rows ldb
// apart, unaligned loads) while A is read in place. For a small product
// packing B is a pass over all of it against only 2·M flops per element.
// Only an edge panel whose kernels would read past its last column (see
// columns_read) is still packed: masked loads in the k loop cost far more
// than that copy. Up to 64K floats of B (256²) with rows up to 256 floats
// apart: further apart, the kc rows of a panel crowd a few L1 sets, and a
// packed panel is faster.
constexpr int64_t B_IN_PLACE_FLOATS = int64_t{256} * 256, B_IN_PLACE_LDB = 256;

// ---- the micro-kernel ---------------------------------------------------------------

// C[0:MR, 0:NR] (+)= Apanel(MR × kc) · Bpanel(kc × NR), for a whole tile of C.
//
// a is A's panel in one of the layouts of ALayout (lda is read only by the
// in-place ones); b is a packed panel of B (rows NR apart, aligned) or, with
// B_IN_PLACE, B itself (rows ldb apart).
template <ALayout LAYOUT, bool B_IN_PLACE>
void micro_kernel(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* C, int64_t ldc,
                  bool accumulate, bool prefetch_c) {
  // A(r, k) = a[r·a_rs + k·a_cs]
  const int64_t a_rs = LAYOUT == ALayout::rows ? lda : 1;
  const int64_t a_cs = LAYOUT == ALayout::packed ? MR : LAYOUT == ALayout::rows ? 1 : lda;
  batch acc[MR][NB];
  for (auto& acc_row : acc)
    for (batch& a_rc : acc_row) a_rc = batch(0.0f);

  // Ask for the C block now, so that its lines arrive while the k loop runs
  // instead of stalling the write-back. C's rows are ldc apart, too far for
  // the hardware prefetcher to guess, and C is often not in cache at all: a
  // new output, or one too large for L2. One prefetch per 64-byte line (16
  // floats) of a row, and its last float for the line an unaligned row spills
  // into. Not for a C small enough to be in cache already: see
  // PREFETCH_C_FLOATS.
  constexpr int64_t LINE = 16;
  for (int64_t r = 0; r < MR && prefetch_c; ++r) {
    for (int64_t j = 0; j < NR; j += LINE) __builtin_prefetch(C + r * ldc + j, /*for writing*/ 1);
    __builtin_prefetch(C + r * ldc + NR - 1, 1);
  }

  // The whole of GEMM's arithmetic happens in this loop: for each k, the
  // outer product of one A column (MR values) and one B row (NR values)
  // added into acc. Unrolled by 4, so that the loop's own counting takes
  // less of the ports the FMAs and loads need.
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    batch b_row[NB];
    for (int64_t c = 0; c < NB; ++c)
      b_row[c] = B_IN_PLACE ? batch::load_unaligned(b + c * W) : batch::load_aligned(b + c * W);
    for (int64_t r = 0; r < MR; ++r) {
      const batch a_rk(a[r * a_rs]);  // broadcast A(r, k) to every lane
      for (int64_t c = 0; c < NB; ++c) acc[r][c] = fmadd(a_rk, b_row[c], acc[r][c]);
    }
    a += a_cs;
    b += B_IN_PLACE ? ldb : NR;
  }

  // C (+)= acc
  for (int64_t r = 0; r < MR; ++r) {
    for (int64_t c = 0; c < NB; ++c) {
      float* c_at = C + r * ldc + c * W;
      batch sum = acc[r][c];
      if (accumulate) sum += batch::load_unaligned(c_at);
      sum.store_unaligned(c_at);
    }
  }
}

// C[0:mr, 0:nr] (+)= Apanel · Bpanel for a block of mr ≤ MR rows and nr ≤ NR
// columns: the micro-kernel for a whole tile, else the edge kernel built for
// the block's size (gemm_edges.cpp).
template <ALayout LAYOUT, bool B_IN_PLACE>
void block_kernel(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* C, int64_t ldc,
                  int64_t mr, int64_t nr, bool accumulate, bool prefetch_c) {
  if (mr == MR && nr == NR) return micro_kernel<LAYOUT, B_IN_PLACE>(kc, a, lda, b, ldb, C, ldc, accumulate, prefetch_c);
  edge_kernel(LAYOUT, B_IN_PLACE, mr, nr)(kc, a, lda, b, ldb, C, ldc, nr, accumulate, prefetch_c);
}

// ---- the driver -------------------------------------------------------------------

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
constexpr int64_t PREFETCH_C_FLOATS = int64_t{128} * 1024;

// NOTE: C is written later, through the Operands it is stored in (clang-tidy 14
// misses the store in the braced initialiser and asks for a const pointer).
Operands operands(bool trans_a, bool trans_b, int64_t M, int64_t N, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float* C, int64_t ldc) {  // NOLINT(readability-non-const-parameter)
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

// Where the driver copies a block's dot-product columns (dot_columns in
// gemm_edges.hpp), after the block's panels in packed_b, and the stride of
// their rows: dot_products' bt and ldbt.
int64_t dot_columns_at(int64_t nc, int64_t kc) { return round_up(nc, NR) * kc; }
int64_t dot_columns_ld(int64_t kc) { return round_up(kc, W); }

// C[rows, cols] (+)= op(A)[rows, pc : pc+kc] · (the packed B block)[:, cols]:
// one task's share of one K slice. cols are counted from the block's first
// column jc and start at a panel boundary (a multiple of NR). The block's
// last columns that run as dot products, if any, the driver copied out as
// rows right after packed_b's panels.
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
  const int64_t dot = dot_columns(nc, !x.trans_a && in_place), ldbt = dot_columns_ld(kc);
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
      dot_products(dot, mc, kc, a_block, x.a_row, bt, ldbt, x.C + ic * x.ldc + jc + nc - dot, x.ldc, acc);
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
  // (KC, NC) at most, and the dot-product columns (see dot_columns_at) after it
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
    if (row_parts < 2 * int64_t{threads}) col_parts = (2 * int64_t{threads} + row_parts - 1) / row_parts;
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
      const int64_t dot = dot_columns(nc, !x.trans_a && a_in_place(x, nc));
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
  if (K == 0 || tasks < threads || (tasks < 4 * int64_t{threads} && flops >= 4 * PARALLEL_FLOPS)) {
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

#else  // the scalar build: gemm is gemm_rows, one matrix at a time

namespace qkv::kernels {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  gemm_rows(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, const float* A,
                  const int64_t* a_offsets, int64_t lda, const float* B, const int64_t* b_offsets, int64_t ldb,
                  float* C, int64_t c_stride, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < batch; ++i)
    gemm_rows(trans_a, trans_b, M, N, K, A + a_offsets[i], lda, B + b_offsets[i], ldb, C + i * c_stride, ldc,
              accumulate);
}

}  // namespace qkv::kernels

#endif  // QKV_SIMD
