// Small helpers shared by the op files (not public API).
#pragma once
#include <qkv/core/error.hpp>
#include <qkv/core/tensor.hpp>
#include <qkv/ops/broadcast.hpp>

#include <cstdint>

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
