// Reductions along one axis of a contiguous array.
//
// Any dim of a row-major tensor can be seen as the middle axis of a 3-D view
// (outer, n, inner): outer = product of the sizes before it, inner = product
// of the sizes after it. Reducing that middle axis gives an (outer, inner)
// result. inner == 1 is a row reduction (SIMD across the row, then a
// horizontal add); inner > 1 reduces whole rows at once (SIMD across inner).
#pragma once
#include <cstdint>

namespace qkv::kernels {

enum class Reduce { Sum, Max, Min };

// out[o, i] = reduce over k < n of x[o, k, i]. With n = 0 the result is the
// operation's identity: 0 for Sum, -inf for Max, +inf for Min.
void reduce(Reduce op, int64_t outer, int64_t n, int64_t inner, const float* x, float* out);
void reduce_reference(Reduce op, int64_t outer, int64_t n, int64_t inner, const float* x, float* out);

// out[o, i] = the k < n where x[o, k, i] is largest (smallest for argmin);
// the first such k on ties, as PyTorch does. n must be ≥ 1.
void argmax(int64_t outer, int64_t n, int64_t inner, const float* x, int64_t* out);
void argmin(int64_t outer, int64_t n, int64_t inner, const float* x, int64_t* out);

}  // namespace qkv::kernels
