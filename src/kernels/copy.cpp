// Copies: strided_copy, copy_rows, gather and scatter_add (see copy.hpp).
//
// Each fast kernel finds the longest runs it can and moves them whole: a
// memcpy for a run of contiguous floats, a tiled transpose for a matrix read
// by columns, axpy for a run of gradient added back. Its `_reference` twin
// moves one element at a time, straight from the definition.
#include "kernels/copy.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/elementwise.hpp"
#include "kernels/walk.hpp"

namespace qkv::kernels {

// ---- strided_copy ------------------------------------------------------------------
// The walk (walk.hpp) first drops size-1 dims and merges the dims src also
// holds one after the other. Then each row of the last dim is
//   - one contiguous run of src (stride 1: permute(0, 2, 1, 3), which leaves
//     the last dim in place): a memcpy;
//   - or, when the last two dims are src's last two swapped (transpose(-2, -1)),
//     a column of a matrix: each such matrix is copied by transpose_matrix;
//   - or else gathered element by element (stride 0 included: expand).

namespace {

// dst[r·cols + c] = src[c·ld + r] for r < rows, c < cols: a (cols, rows)
// matrix (rows ld apart) transposed into a row-major (rows, cols) one. In
// square tiles, so that both the rows read and the rows written stay in
// cache while a tile is copied; element by element, src would be read a
// whole column apart at every step.
template <class T>
void transpose_matrix(const T* src, int64_t rows, int64_t cols, int64_t ld, T* dst) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) dst[r * cols + c] = src[c * ld + r];
    }
  }
}

template <class T>
void strided_copy_impl(std::span<const int64_t> sizes, std::span<const int64_t> strides, const T* src, T* dst) {
  const StridedWalk<1> walk(sizes, {strides});
  const auto& dims = walk.dims();
  const size_t nd = dims.size();
  if (nd >= 2 && dims[nd - 2].stride[0] == 1 && dims[nd - 1].stride[0] != 1) {
    // A (rows, cols) matrix per index of the dims before the last two: src's (cols, rows) one transposed.
    const int64_t rows = dims[nd - 2].size, cols = dims[nd - 1].size, ld = dims[nd - 1].stride[0];
    walk.for_each_block(2, [&](int64_t first, const StridedWalk<1>::Offsets& at) {
      transpose_matrix(src + at[0], rows, cols, ld, dst + first);
    });
    return;
  }
  const int64_t len = walk.row_length(), step = walk.row_step(0);
  walk.for_each_row([&](int64_t first, const StridedWalk<1>::Offsets& at) {
    if (step == 1)
      std::memcpy(dst + first, src + at[0], static_cast<size_t>(len) * sizeof(T));
    else
      for (int64_t j = 0; j < len; ++j) dst[first + j] = src[at[0] + j * step];
  });
}

}  // namespace

void strided_copy(std::span<const int64_t> sizes, std::span<const int64_t> strides, const float* src, float* dst) {
  strided_copy_impl(sizes, strides, src, dst);
}
void strided_copy(std::span<const int64_t> sizes, std::span<const int64_t> strides, const int64_t* src, int64_t* dst) {
  strided_copy_impl(sizes, strides, src, dst);
}

// One element at a time: its flat index in dst, split into (i₀, i₁, …) from the last dim up.
void strided_copy_reference(std::span<const int64_t> sizes, std::span<const int64_t> strides, const float* src,
                            float* dst) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  for (int64_t flat = 0; flat < numel; ++flat) {
    int64_t rest = flat, offset = 0;
    for (size_t d = sizes.size(); d-- > 0;) {
      offset += (rest % sizes[d]) * strides[d];
      rest /= sizes[d];
    }
    dst[flat] = src[offset];
  }
}

// ---- copy_rows ------------------------------------------------------------------------

void copy_rows(int64_t rows, int64_t cols, const float* src, int64_t src_ld, float* dst, int64_t dst_ld) {
  if (cols == 0) return;
  const size_t bytes = static_cast<size_t>(cols) * sizeof(float);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * dst_ld, src + r * src_ld, bytes);
}

void copy_rows_reference(int64_t rows, int64_t cols, const float* src, int64_t src_ld, float* dst, int64_t dst_ld) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[r * dst_ld + c] = src[r * src_ld + c];
}

// ---- gather -----------------------------------------------------------------------------
// A run of positions is one memcpy per outer row; other positions copy
// `inner` values each.

namespace {

// Whether pos is p, p+1, p+2, …: then what gather takes from each outer row
// of src is one contiguous run.
bool is_run(int64_t m, const int64_t* pos) {
  for (int64_t j = 1; j < m; ++j)
    if (pos[j] != pos[0] + j) return false;
  return true;
}

}  // namespace

void gather(int64_t outer, int64_t n, int64_t inner, int64_t m, const int64_t* pos, const float* src, float* dst) {
  if (outer * m * inner == 0) return;
  if (is_run(m, pos)) {  // narrow, split, a slice of step 1: one memcpy per outer row
    const size_t bytes = static_cast<size_t>(m * inner) * sizeof(float);
    for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * m * inner, src + (o * n + pos[0]) * inner, bytes);
    return;
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j) std::copy_n(src + (o * n + pos[j]) * inner, inner, dst + (o * m + j) * inner);
}

void gather_reference(int64_t outer, int64_t n, int64_t inner, int64_t m, const int64_t* pos, const float* src,
                      float* dst) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t i = 0; i < inner; ++i) dst[(o * m + j) * inner + i] = src[(o * n + pos[j]) * inner + i];
}

// ---- scatter_add ------------------------------------------------------------------------
// A run of positions is one axpy per outer row (long enough to share among
// the threads); other positions add their `inner` values in a plain loop,
// which the compiler vectorises: an embedding's rows are short, and a call
// of axpy per row would cost more than the row. Adding 1·x with axpy's
// fused multiply-add rounds once, as += does, so both ways give the same
// bits as the reference.

void scatter_add(int64_t outer, int64_t n, int64_t inner, int64_t m, const int64_t* pos, const float* src, float* dst) {
  if (outer * m * inner == 0) return;
  if (is_run(m, pos)) {
    for (int64_t o = 0; o < outer; ++o) axpy(m * inner, 1.0f, src + o * m * inner, dst + (o * n + pos[0]) * inner);
    return;
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j) {
      const float* from = src + (o * m + j) * inner;
      float* to = dst + (o * n + pos[j]) * inner;
      for (int64_t i = 0; i < inner; ++i) to[i] += from[i];
    }
}

void scatter_add_reference(int64_t outer, int64_t n, int64_t inner, int64_t m, const int64_t* pos, const float* src,
                           float* dst) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t i = 0; i < inner; ++i) dst[(o * n + pos[j]) * inner + i] += src[(o * m + j) * inner + i];
}

}  // namespace qkv::kernels
