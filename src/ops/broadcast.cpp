// Broadcasting: the output shape of a broadcasting op, and sum_to, the one
// place every broadcasting op's backward goes through (itself differentiable:
// its backward is expand).
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/ops/broadcast.hpp>
#include <qkv/ops/shape_ops.hpp>

#include <algorithm>

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

// x has shape S, `shape` broadcasts to S. Align `shape` to S's last dims
// (missing leading dims count as 1), then sum every dim where `shape` has 1
// and S does not. Each such dim is reduced as the middle axis of an
// (outer, n, inner) view; runs of adjacent reduced dims are merged first.
Tensor sum_to(const Tensor& x, const Shape& shape) {
  detail::check_input(x, "sum_to", "x");
  const Shape& from = x.shape();
  if (from == shape) return x;
  if (broadcast_shapes(from, shape, "sum_to") != from) fail("sum_to: {} does not broadcast to {}", shape, from);

  std::vector<int64_t> target(static_cast<size_t>(from.ndim()), 1);  // `shape` aligned to `from`
  for (int64_t i = 0; i < shape.ndim(); ++i) target[static_cast<size_t>(from.ndim() - shape.ndim() + i)] = shape[i];

  // The runs of adjacent reduced dims, each summed in turn: the first reads
  // x where it lies, the last writes the output.
  std::vector<int64_t> sizes = from.dims();
  Tensor out = Tensor::empty(shape), partial = x;  // partial: what is summed so far
  for (int64_t d = 0; d < from.ndim(); ++d) {
    if (target[static_cast<size_t>(d)] == sizes[static_cast<size_t>(d)]) continue;
    int64_t end = d + 1;  // merge the run of dims [d, end) that are all reduced
    while (end < from.ndim() && target[static_cast<size_t>(end)] != sizes[static_cast<size_t>(end)]) ++end;
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t k = 0; k < from.ndim(); ++k) {
      int64_t s = sizes[static_cast<size_t>(k)];
      (k < d ? outer : k < end ? n : inner) *= s;
    }
    bool last = true;  // no reduced dim after this run
    for (int64_t k = end; k < from.ndim(); ++k)
      last = last && target[static_cast<size_t>(k)] == sizes[static_cast<size_t>(k)];
    Tensor next = last ? out : Tensor::empty(Shape{outer * inner});
    if (n > 0)
      kernels::reduce(kernels::Reduce::Sum, outer, n, inner, partial.data(), next.data());
    else
      std::fill_n(next.data(), outer * inner, 0.0f);  // a sum over a size-0 dim is 0
    partial = next;
    for (int64_t k = d; k < end; ++k) sizes[static_cast<size_t>(k)] = 1;
    d = end - 1;
  }
  // Summing is the transpose of broadcasting: dx = dout expanded back to x's shape.
  record(out, "SumToBackward", {x}, [from](const Tensor& dout) -> std::vector<Tensor> { return {expand(dout, from)}; });
  return out;
}

}  // namespace qkv
