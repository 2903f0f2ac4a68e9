// Broadcasting: the output shape of a broadcasting op, and sum_to, the one
// place every broadcasting op's backward goes through (itself differentiable:
// its backward is expand).
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/ops/broadcast.hpp>
#include <qkv/ops/shape_ops.hpp>

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "kernels/reduce.hpp"
#include "ops/util.hpp"

namespace qkv {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  if (a == b) return a;
  const int64_t n = std::max(a.ndim(), b.ndim());
  Shape out = a.ndim() == n ? a : b;  // n dims; each is set below
  for (int64_t i = 0; i < n; ++i) {   // i counts from the last dim
    int64_t da = i < a.ndim() ? a[a.ndim() - 1 - i] : 1;
    int64_t db = i < b.ndim() ? b[b.ndim() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      fail("{}: shapes {} and {} do not broadcast (sizes {} and {} at dim {})", op, a, b, da, db, n - 1 - i);
    out[n - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

// x has shape S, `shape` broadcasts to S. The result, seen broadcast to S,
// has stride 0 along every dim that is summed (detail::broadcast_strides),
// so the strided walk (kernels/walk.hpp) gives the dims to sum: it drops S's
// size-1 dims and merges neighbours that are both summed or both kept.
//   (B, T, D) -> (D):     (B·T, D), the first summed
//   (B, H, T) -> (H, 1):  (B, H, T), the first and last summed
// Each summed dim is then reduced in turn, as the middle axis of an
// (outer, n, inner) view of what is left: the first pass reads x where it
// lies, the last writes the output.
Tensor sum_to(const Tensor& x, const Shape& shape) {
  detail::check_input(x, "sum_to", "x");
  const Shape& from = x.shape();
  if (from == shape) return x;
  if (broadcast_shapes(from, shape, "sum_to") != from) fail("sum_to: {} does not broadcast to {}", shape, from);
  if (shape.numel() == from.numel()) return reshape(x, shape);  // only size-1 dims differ: (1, 3) -> (3)

  Tensor out = Tensor::empty(shape);
  if (x.numel() == 0) {
    std::fill_n(out.data(), out.numel(), 0.0f);  // a sum over a size-0 dim is 0
  } else {
    const kernels::StridedWalk<1> walk(std::span<const int64_t>(from.begin(), from.end()),
                                       {detail::broadcast_strides(shape, from)});
    std::vector<int64_t> sizes;  // of the merged dims; a summed one becomes 1 once it is summed
    std::vector<size_t> summed;  // which of them are summed
    for (const auto& dim : walk.dims()) {
      if (dim.stride[0] == 0) summed.push_back(sizes.size());
      sizes.push_back(dim.size);
    }
    const float* src = x.data();  // x with the dims summed so far
    Tensor partial;               // holds the numbers src points at, after the first pass
    for (size_t d : summed) {
      int64_t outer = 1, inner = 1;
      for (size_t k = 0; k < d; ++k) outer *= sizes[k];
      for (size_t k = d + 1; k < sizes.size(); ++k) inner *= sizes[k];
      Tensor next = d == summed.back() ? out : Tensor::empty(Shape{outer * inner});
      float* dst = next.data();
      kernels::reduce(kernels::Reduce::Sum, outer, sizes[d], inner, src, dst);
      src = dst;
      partial = std::move(next);
      sizes[d] = 1;
    }
  }
  // Summing is the transpose of broadcasting: dx = dout expanded back to x's shape.
  record(out, "SumToBackward", {x}, /*saved=*/{},
         [from](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> { return {expand(dout, from)}; });
  return out;
}

}  // namespace qkv
