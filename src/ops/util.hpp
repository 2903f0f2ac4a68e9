// Small helpers shared by the op files (not public API).
#pragma once
#include <qkv/core/error.hpp>
#include <qkv/core/tensor.hpp>

namespace qkv::detail {

// A row-major tensor seen as (outer, n, inner) around one dim: outer is the
// product of the sizes before `dim`, n its size, inner the product after it.
// Reductions, softmax, cat and split all walk this view.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

inline AxisView axis_view(const Shape& shape, int64_t dim) {
  AxisView v;
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    if (d < dim)
      v.outer *= shape[d];
    else if (d == dim)
      v.n = shape[d];
    else
      v.inner *= shape[d];
  }
  return v;
}

// `shape` with `dim` removed, or kept with size 1.
inline Shape reduced_shape(const Shape& shape, int64_t dim, bool keepdim) {
  std::vector<int64_t> dims = shape.dims();
  if (keepdim)
    dims[static_cast<size_t>(dim)] = 1;
  else
    dims.erase(dims.begin() + dim);
  return Shape(dims);
}

}  // namespace qkv::detail
