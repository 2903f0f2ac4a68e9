// Small helpers shared by the op files (not public API).
#pragma once
#include <qkv/core/error.hpp>
#include <qkv/core/tensor.hpp>
#include <qkv/ops/broadcast.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/walk.hpp"

namespace qkv::detail {

// The check an op makes of each tensor it receives, before it reads a size:
// the tensor is defined (a default-constructed Tensor or IntTensor has no
// numbers) and, when the op needs it, has between min_rank and max_rank
// dims. `arg` names the argument: "index_select: index is an undefined tensor".
template <class T>
void check_input(const T& x, const char* op, const char* arg, int64_t min_rank = 0, int64_t max_rank = INT64_MAX) {
  if (!x.defined()) fail("{}: {} is an undefined tensor", op, arg);
  const int64_t nd = x.dim();
  if (nd < min_rank || nd > max_rank) {
    if (max_rank == INT64_MAX) fail("{}: {} must have at least {} dims, got shape {}", op, arg, min_rank, x.shape());
    if (min_rank == max_rank) fail("{}: {} must be {}-d, got shape {}", op, arg, min_rank, x.shape());
    fail("{}: {} must have {} to {} dims, got shape {}", op, arg, min_rank, max_rank, x.shape());
  }
}

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

// Row-major strides: how far apart, in elements, neighbours along each dim are.
//   (2, 3, 4) -> (12, 4, 1)
inline std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(static_cast<size_t>(shape.ndim()));
  int64_t step = 1;
  for (int64_t d = shape.ndim() - 1; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = step;
    step *= shape[d];
  }
  return strides;
}

// The stride of `in` along each dim of `out`, with in's shape aligned to out's
// last dims: 0 where in has size 1 or lacks the dim, so walking that dim of
// out repeats in's element instead of moving on.
//   in (3, 1), out (2, 3, 4)  ->  strides (0, 1, 0)
inline std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(static_cast<size_t>(out.ndim()), 0);
  int64_t inner = 1;
  for (int64_t i = in.ndim() - 1; i >= 0; --i) {
    strides[static_cast<size_t>(out.ndim() - in.ndim() + i)] = in[i] == 1 ? 0 : inner;
    inner *= in[i];
  }
  return strides;
}

// The walk (kernels/walk.hpp) over out's elements, row by row, with each
// input broadcast to out: broadcast_walk(out, a, b) for a ∘ b.
template <class... Shapes>
kernels::StridedWalk<sizeof...(Shapes)> broadcast_walk(const Shape& out, const Shapes&... inputs) {
  return kernels::StridedWalk<sizeof...(Shapes)>(std::span<const int64_t>(out.begin(), out.end()),
                                                 {broadcast_strides(inputs, out)...});
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

// What the backward of a broadcasting op (add, sub, where) keeps of an
// operand x in place of x itself, so that the graph does not hold x's
// numbers: whether x needs a gradient, and x's shape only when x was
// broadcast (the common case, x of the output's shape, copies no Shape).
// of(g) is x's gradient from g = d(loss)/d(out) (or from g already turned
// into out's shape): g summed back to x's shape, undefined if x needs none.
class OperandGrad {
 public:
  OperandGrad(const Tensor& x, const Tensor& out)
      : needed_(x.requires_grad()),
        broadcast_(needed_ && x.shape() != out.shape()),
        shape_(broadcast_ ? x.shape() : Shape()) {}
  bool needed() const { return needed_; }
  Tensor of(const Tensor& g) const { return !needed_ ? Tensor() : broadcast_ ? sum_to(g, shape_) : g; }

 private:
  bool needed_, broadcast_;
  Shape shape_;
};

}  // namespace qkv::detail
