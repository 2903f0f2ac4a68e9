// Copies: the kernels of the shape ops, which move numbers without computing
// new ones. Each has a `_reference` twin, the plain loop of its definition,
// that tests/kernels/test_copy.cpp holds it equal to.
//
//   strided_copy   permute, transpose, expand, repeat_interleave:
//                  dst[i…] = src[Σ iₖ·strides[k]]
//   copy_rows      cat: a block of rows from one array into another
//   gather         narrow, slice, split, index_select, embedding:
//                  dst[o, j, i] = src[o, pos[j], i]
//   scatter_add    their backward: dst[o, pos[j], i] += src[o, j, i]
//
// Left out on purpose: threads and SIMD of their own. A copy is bound by
// memory, not arithmetic; the runs the kernels find go to memcpy, and
// scatter_add's to axpy (elementwise.hpp).
#pragma once
#include <cstdint>
#include <span>

namespace qkv::kernels {

// dst[i₀, i₁, …] = src[Σₖ iₖ·strides[k]] for every index of `sizes`, dst
// row-major. A stride of 0 repeats one value along its dim (expand); strides
// in another order than src's own permute it. Integers too (IntTensor's
// repeat_interleave), by the same code.
void strided_copy(std::span<const int64_t> sizes, std::span<const int64_t> strides, const float* src, float* dst);
void strided_copy(std::span<const int64_t> sizes, std::span<const int64_t> strides, const int64_t* src, int64_t* dst);
void strided_copy_reference(std::span<const int64_t> sizes, std::span<const int64_t> strides, const float* src,
                            float* dst);

// dst[r·dst_ld + c] = src[r·src_ld + c] for r < rows, c < cols: `rows` runs
// of `cols` floats, each ld apart in its own array.
void copy_rows(int64_t rows, int64_t cols, const float* src, int64_t src_ld, float* dst, int64_t dst_ld);
void copy_rows_reference(int64_t rows, int64_t cols, const float* src, int64_t src_ld, float* dst, int64_t dst_ld);

// dst[o, j, i] = src[o, pos[j], i] for o < outer, j < m, i < inner: src seen
// as (outer, n, inner) around one dim, dst as (outer, m, inner). Every pos[j]
// must be in 0 … n-1 (the op checks).
void gather(int64_t outer, int64_t n, int64_t inner, int64_t m, const int64_t* pos, const float* src, float* dst);
void gather_reference(int64_t outer, int64_t n, int64_t inner, int64_t m, const int64_t* pos, const float* src,
                      float* dst);

// dst[o, pos[j], i] += src[o, j, i]: gather's transpose, for its gradient.
// A position listed twice gets both, added in the order of j.
void scatter_add(int64_t outer, int64_t n, int64_t inner, int64_t m, const int64_t* pos, const float* src, float* dst);
void scatter_add_reference(int64_t outer, int64_t n, int64_t inner, int64_t m, const int64_t* pos, const float* src,
                           float* dst);

}  // namespace qkv::kernels
