// Reductions along the middle axis of an (outer, n, inner) view: sum, max,
// min, argmax, argmin.
//
// Memory order decides which way the vectors can run:
//   inner == 1  every output reduces one contiguous row, so W lanes walk the
//               row side by side and are folded into one float at the end;
//   inner > 1   slice k, x[o, k, :], is contiguous, so whole slices are
//               combined elementwise into out[o, :], W outputs at a time.
//
// The two sections every kernel file has (simd.hpp): the reference, one
// output at a time down its column, and the SIMD kernels, which run the way
// the memory does. Large reductions run on the kernels' threads, with the
// same result whatever their number (see "threads" below).
//
// A sum along a row is an ordered_sum (simd.hpp), 16 running sums whatever
// the register width, and a row longer than 2·ROW_PIECE is summed in pieces
// (see "threads" below), in the reference too: the two sections agree bit
// for bit. Down a column (inner > 1) every output is a plain running sum in
// order of k, in both. A max or a min is exact, so its order changes nothing.
//
// Left out on purpose: pairwise summation (more accurate, but more to read),
// and a SIMD argmax.
#include "kernels/reduce.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace qkv::kernels {

// ==== reference: one output at a time ================================================

namespace {

// The start value that leaves any x unchanged: 0 for a sum, -∞ for a max, +∞ for a min.
float identity(Reduce op) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  return op == Reduce::Sum ? 0.0f : (op == Reduce::Max ? -inf : inf);
}

// acc ∘ v for one float. NOTE: IEEE max/min return the other operand when one
// is NaN (max(NaN, 1) = 1); PyTorch's max and min propagate the NaN, so a NaN
// is checked for first (and acc + v is then NaN).
float combine(Reduce op, float acc, float v) {
  if (op == Reduce::Sum) return acc + v;
  if (std::isnan(acc) || std::isnan(v)) return acc + v;
  return op == Reduce::Max ? std::max(acc, v) : std::min(acc, v);
}

// A row reduction this long is cut into pieces of ROW_PIECE floats (the last
// takes the rest), each summed alone, and the pieces' sums are added left to
// right: the threads' share of a long row (see "threads" below).
constexpr int64_t ROW_PIECE = 1 << 15;

// Σ x[0:n] for a row, in pieces when it is long: row_sum(count, start)
// sums one piece.
template <class RowSum>
float sum_in_pieces(int64_t n, const float* x, RowSum row_sum) {
  if (n < 2 * ROW_PIECE) return row_sum(n, x);
  const int64_t pieces = n / ROW_PIECE;
  float r = row_sum(ROW_PIECE, x);
  for (int64_t p = 1; p < pieces; ++p) {
    const int64_t begin = p * ROW_PIECE, end = p + 1 == pieces ? n : begin + ROW_PIECE;
    r += row_sum(end - begin, x + begin);
  }
  return r;
}

float row_sum_reference(int64_t n, const float* x) {
  return ordered_sum<float>(n, [&](float s, int64_t k) { return s + x[k]; });
}

}  // namespace

// out[o, i] = x[o, 0, i] ∘ x[o, 1, i] ∘ … ∘ x[o, n-1, i]; a sum along a row
// (inner == 1) in the order above.
void reduce_reference(Reduce op, int64_t outer, int64_t n, int64_t inner, const float* x, float* out) {
  if (op == Reduce::Sum && inner == 1) {
    for (int64_t o = 0; o < outer; ++o) out[o] = sum_in_pieces(n, x + o * n, row_sum_reference);
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      float acc = identity(op);
      for (int64_t k = 0; k < n; ++k) acc = combine(op, acc, x[(o * n + k) * inner + i]);
      out[o * inner + i] = acc;
    }
  }
}

// ---- argmax / argmin (scalar) ----------------------------------------------------

namespace {

// out[o, i] = the k whose x[o, k, i] is largest (or smallest). Only a strictly
// better value takes over, so ties keep the first index. NaN counts as better
// than anything (PyTorch: a NaN is both the max and the min), and once found it
// is kept.
void arg_best(bool largest, int64_t outer, int64_t n, int64_t inner, const float* x, int64_t* out) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float* column = x + o * n * inner + i;  // column[k * inner] = x[o, k, i]
      int64_t best = 0;
      for (int64_t k = 1; k < n && !std::isnan(column[best * inner]); ++k) {
        float v = column[k * inner], b = column[best * inner];
        if (std::isnan(v) || (largest ? v > b : v < b)) best = k;
      }
      out[o * inner + i] = best;
    }
  }
}

}  // namespace

void argmax(int64_t outer, int64_t n, int64_t inner, const float* x, int64_t* out) {
  arg_best(true, outer, n, inner, x, out);
}

void argmin(int64_t outer, int64_t n, int64_t inner, const float* x, int64_t* out) {
  arg_best(false, outer, n, inner, x, out);
}

// ==== SIMD: W lanes along a row, or W columns side by side ===========================
#if QKV_SIMD

namespace {

// combine on W lanes at once. Op is a template parameter so the choice is
// made once per call, not once per batch.
template <Reduce Op>
batch combine(batch acc, batch v) {
  if constexpr (Op == Reduce::Sum) {
    return acc + v;
  } else {
    auto nan = xsimd::isnan(acc) || xsimd::isnan(v);
    return xsimd::select(nan, acc + v, Op == Reduce::Max ? xsimd::max(acc, v) : xsimd::min(acc, v));
  }
}

// Fold the W lanes of a max or a min into one float.
template <Reduce Op>
float fold_lanes(batch acc) {
  alignas(64) float lanes[W];
  acc.store_aligned(lanes);
  float r = lanes[0];
  for (int64_t l = 1; l < W; ++l) r = combine(Op, r, lanes[l]);
  return r;
}

// reduce over a contiguous row x[0:n] (inner == 1). A sum is an ordered_sum.
template <Reduce Op>
float reduce_row(int64_t n, const float* x) {
  if constexpr (Op == Reduce::Sum)
    return ordered_sum_simd<batch>(
        n, [&](batch acc, int64_t k) { return acc + batch::load_unaligned(x + k); },
        [&](float s, int64_t k) { return s + x[k]; });
  batch acc(identity(Op));  // lane l holds the result over x[l], x[l+W], x[l+2W], …
  int64_t k = 0;
  for (; k + W <= n; k += W) acc = combine<Op>(acc, batch::load_unaligned(x + k));
  float r = fold_lanes<Op>(acc);
  for (; k < n; ++k) r = combine(Op, r, x[k]);
  return r;
}

// out[0:cols] = reduce over k of x[k, 0:cols] (inner > 1), where slice k
// starts at x + k·stride (stride = inner; cols = inner unless a thread takes a
// part of the columns): start from the identity and fold in one slice after
// another, W columns at a time.
template <Reduce Op>
void reduce_slices(int64_t n, int64_t cols, int64_t stride, const float* x, float* out) {
  std::fill(out, out + cols, identity(Op));
  for (int64_t k = 0; k < n; ++k) {
    const float* slice = x + k * stride;
    int64_t i = 0;
    for (; i + W <= cols; i += W) {
      batch so_far = batch::load_unaligned(out + i);
      combine<Op>(so_far, batch::load_unaligned(slice + i)).store_unaligned(out + i);
    }
    for (; i < cols; ++i) out[i] = combine(Op, out[i], slice[i]);
  }
}

// ---- threads ---------------------------------------------------------------------
//
// NOTE: the result does not depend on the thread count. Threads take whole
// outputs (rows of out, or runs of W columns of it), each reduced by one
// thread in the serial order. A row too long for that is cut into pieces of
// ROW_PIECE floats, a size fixed here and not by the threads, each reduced
// as above, and the pieces' results are combined left to right: on 1 thread
// or 4, the same sums in the same order.

// Floats a task should read, at least: reading 64K floats takes ~10 µs, about
// what waking a thread costs.
constexpr int64_t GRAIN = 1 << 16;

// Rows of length n (inner == 1), out[o] = reduce of x[o, :].
template <Reduce Op>
void reduce_rows(int64_t outer, int64_t n, const float* x, float* out) {
  if (n < 2 * ROW_PIECE) {
    // Whole rows to each task.
    const int64_t tasks = std::min(outer, tasks_for(outer * n, GRAIN));
    parallel_for(tasks, [&](int64_t t) {
      for (int64_t o = outer * t / tasks; o < outer * (t + 1) / tasks; ++o) out[o] = reduce_row<Op>(n, x + o * n);
    });
    return;
  }
  // Long rows: piece p of row o is x[o, p·ROW_PIECE : (p+1)·ROW_PIECE] (the
  // last piece takes the rest); one task per piece.
  const int64_t pieces = n / ROW_PIECE;
  std::vector<float> partial(static_cast<size_t>(outer * pieces));
  parallel_for(outer * pieces, [&](int64_t t) {
    const int64_t o = t / pieces, p = t % pieces;
    const int64_t begin = p * ROW_PIECE, end = p + 1 == pieces ? n : begin + ROW_PIECE;
    partial[static_cast<size_t>(t)] = reduce_row<Op>(end - begin, x + o * n + begin);
  });
  for (int64_t o = 0; o < outer; ++o) {
    float r = partial[static_cast<size_t>(o * pieces)];
    for (int64_t p = 1; p < pieces; ++p) r = combine(Op, r, partial[static_cast<size_t>(o * pieces + p)]);
    out[o] = r;
  }
}

// inner > 1: out[o, i] = reduce over k of x[o, k, i]. Tasks take runs of
// whole outer indices, or, when there are too few of those, runs of W
// columns of every o.
template <Reduce Op>
void reduce_columns(int64_t outer, int64_t n, int64_t inner, const float* x, float* out) {
  const int64_t tasks = tasks_for(outer * n * inner, GRAIN);
  if (tasks <= outer) {
    parallel_for(tasks, [&](int64_t t) {
      for (int64_t o = outer * t / tasks; o < outer * (t + 1) / tasks; ++o)
        reduce_slices<Op>(n, inner, inner, x + o * n * inner, out + o * inner);
    });
    return;
  }
  const int64_t groups = (inner + W - 1) / W, parts = std::min(groups, tasks / outer);
  parallel_for(outer * parts, [&](int64_t t) {
    const int64_t o = t / parts, p = t % parts;
    const int64_t begin = groups * p / parts * W, end = std::min(inner, groups * (p + 1) / parts * W);
    reduce_slices<Op>(n, end - begin, inner, x + o * n * inner + begin, out + o * inner + begin);
  });
}

template <Reduce Op>
void reduce_simd(int64_t outer, int64_t n, int64_t inner, const float* x, float* out) {
  if (inner == 1)
    reduce_rows<Op>(outer, n, x, out);
  else
    reduce_columns<Op>(outer, n, inner, x, out);
}

}  // namespace

void reduce(Reduce op, int64_t outer, int64_t n, int64_t inner, const float* x, float* out) {
  switch (op) {
    case Reduce::Sum:
      return reduce_simd<Reduce::Sum>(outer, n, inner, x, out);
    case Reduce::Max:
      return reduce_simd<Reduce::Max>(outer, n, inner, x, out);
    case Reduce::Min:
      return reduce_simd<Reduce::Min>(outer, n, inner, x, out);
  }
}

#else  // the scalar build: the kernel is its reference

void reduce(Reduce op, int64_t outer, int64_t n, int64_t inner, const float* x, float* out) {
  reduce_reference(op, outer, n, inner, x, out);
}

#endif  // QKV_SIMD

}  // namespace qkv::kernels
