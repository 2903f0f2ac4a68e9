// Reductions: sum, mean, max, min over every element or along one dim, and
// argmax/argmin.
//
// Every "along dim" reduction sees x as the 3-D view (outer, n, inner) of
// util.hpp and reduces its middle axis with one kernel call:
//   out[o, i] = reduce over k < n of x[o, k, i]
// The result has the same (outer, inner) order whether or not keepdim keeps
// the reduced dim as size 1, so backwards can walk dout in that order too.
//
// A 0-d tensor is treated as having one dim of size 1, as PyTorch does:
// sum(scalar, 0) and sum(scalar, -1) are allowed and give the scalar back.
//
// Empty inputs: sum of nothing is 0 (as in PyTorch). mean, max, min, argmax
// and argmin of nothing throw; PyTorch throws for max/min/argmax too, but
// returns NaN for mean; qkv says so loudly instead.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/ops/compare.hpp>
#include <qkv/ops/elementwise.hpp>
#include <qkv/ops/reduction.hpp>
#include <qkv/ops/shape_ops.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/reduce.hpp"
#include "ops/util.hpp"

namespace qkv {

namespace {

// The shape of a reduction of x along d (a 0-d x stays 0-d).
Shape out_shape(const Tensor& x, int64_t d, bool keepdim) {
  if (x.dim() == 0) return Shape();
  return detail::reduced_shape(x.shape(), d, keepdim);
}

// Reduce x along d with one kernel call: the forward of sum, max and min.
// n == 0 (only sum gets here with it) leaves the zeros that zeros() wrote.
Tensor reduce_along(kernels::Reduce op, const Tensor& x, int64_t d, bool keepdim) {
  auto [outer, n, inner] = detail::axis_view(x.shape(), d);
  Tensor out = zeros(out_shape(x, d, keepdim));
  if (n > 0 && out.numel() > 0) kernels::reduce(op, outer, n, inner, x.data(), out.data());
  return out;
}

// The backward of a reduction along d: dout has the reduced shape; give it
// back the reduced dim (size 1) if keepdim dropped it, then copy it along
// that dim to x's shape.
Tensor expand_back(const Tensor& dout, const Shape& x_shape, int64_t d, bool keepdim) {
  Tensor g = (keepdim || x_shape.ndim() == 0) ? dout : unsqueeze(dout, d);
  return expand(g, x_shape);
}

void check_not_empty_dim(const Tensor& x, int64_t d, const char* op) {
  if (x.dim() > 0 && x.size(d) == 0) fail("{}: dim {} of {} has size 0: nothing to reduce", op, d, x.shape());
}

void check_not_empty(const Tensor& x, const char* op) {
  if (x.numel() == 0) fail("{}: {} has no elements: nothing to reduce", op, x.shape());
}

}  // namespace

// ---- sum -----------------------------------------------------------------------

// y = Σᵢ xᵢ (shape ())         dx = dy at every position
Tensor sum(const Tensor& x) {
  detail::check_input(x, "sum", "x");
  Tensor out = zeros(Shape());
  if (x.numel() > 0) kernels::reduce(kernels::Reduce::Sum, 1, x.numel(), 1, x.data(), out.data());
  record(out, "SumBackward", {x}, /*saved=*/{},
         [shape = x.shape()](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> {
           return {expand(dout, shape)};
         });
  return out;
}

// y[o, i] = Σₖ x[o, k, i]      dx[o, k, i] = dy[o, i] for every k
Tensor sum(const Tensor& x, int64_t dim, bool keepdim) {
  detail::check_input(x, "sum", "x");
  int64_t d = normalize_dim(dim, x.dim(), "sum");
  Tensor out = reduce_along(kernels::Reduce::Sum, x, d, keepdim);
  record(out, "SumBackward", {x}, /*saved=*/{},
         [shape = x.shape(), d, keepdim](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> {
           return {expand_back(dout, shape, d, keepdim)};
         });
  return out;
}

// ---- mean: a sum divided by a count, so its backward comes from sum and div ----

// y = Σᵢ xᵢ / N                dx = dy / N
Tensor mean(const Tensor& x) {
  detail::check_input(x, "mean", "x");
  check_not_empty(x, "mean");
  return div(sum(x), static_cast<float>(x.numel()));
}

// y[o, i] = Σₖ x[o, k, i] / n  dx[o, k, i] = dy[o, i] / n
Tensor mean(const Tensor& x, int64_t dim, bool keepdim) {
  detail::check_input(x, "mean", "x");
  int64_t d = normalize_dim(dim, x.dim(), "mean");
  check_not_empty_dim(x, d, "mean");
  int64_t n = x.dim() == 0 ? 1 : x.size(d);
  return div(sum(x, d, keepdim), static_cast<float>(n));
}

// ---- max and min ----------------------------------------------------------------

namespace {

// max or min of every element. Backward, as PyTorch's max() without a dim:
// dy is split evenly among the positions that hold the extreme value
// (with one such position, it all goes there).
Tensor extreme_all(kernels::Reduce op, const Tensor& x, const char* name, const char* backward_name) {
  detail::check_input(x, name, "x");
  check_not_empty(x, name);
  Tensor out = Tensor::empty(Shape());
  kernels::reduce(op, 1, x.numel(), 1, x.data(), out.data());
  record(out, backward_name, {x}, /*saved=*/{x, out},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& input = saved[0];
           const IntTensor ties = eq(input, saved[1]);  // 1 where x holds the extreme y: (…) = () broadcast
           const int64_t* tie = ties.data();
           const int64_t count = std::count(tie, tie + ties.numel(), 1);
           return {masked_fill(zeros(input.shape()), ties, dout.item() / static_cast<float>(count))};
         });
  return out;
}

// max or min along dim d. Backward, as PyTorch's max(x, dim): all of
// dy[o, i] goes to the first k where x[o, k, i] was the extreme value
// (the index argmax/argmin returns); every other position gets 0.
Tensor extreme_along(kernels::Reduce op, const Tensor& x, int64_t dim, bool keepdim, const char* name,
                     const char* backward_name) {
  detail::check_input(x, name, "x");
  int64_t d = normalize_dim(dim, x.dim(), name);
  check_not_empty_dim(x, d, name);
  Tensor out = reduce_along(op, x, d, keepdim);
  record(out, backward_name, {x}, /*saved=*/{x},
         [d, keepdim, op](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& input = saved[0];
           // picked = (arange(n) == argmax(x, d)): (…, n, …) against (…, 1, …), 1 at the first extreme
           const bool largest = op == kernels::Reduce::Max;
           IntTensor first = largest ? argmax(input, d, /*keepdim=*/true) : argmin(input, d, /*keepdim=*/true);
           std::vector<int64_t> along(static_cast<size_t>(input.dim()), 1);  // (1, …, n, …, 1)
           if (input.dim() > 0) along[static_cast<size_t>(d)] = input.size(d);
           IntTensor picked = eq(arange_int(0, input.dim() > 0 ? input.size(d) : 1).reshape(Shape(along)), first);
           return {where(picked, expand_back(dout, input.shape(), d, keepdim), 0.0f)};
         });
  return out;
}

}  // namespace

Tensor max(const Tensor& x) { return extreme_all(kernels::Reduce::Max, x, "max", "MaxBackward"); }
Tensor min(const Tensor& x) { return extreme_all(kernels::Reduce::Min, x, "min", "MinBackward"); }

Tensor max(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_along(kernels::Reduce::Max, x, dim, keepdim, "max", "MaxBackward");
}

Tensor min(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_along(kernels::Reduce::Min, x, dim, keepdim, "min", "MinBackward");
}

// ---- argmax and argmin: indices, no gradient ----------------------------------------
// On ties the first index wins, as in PyTorch.

// The index of the largest element of x flattened (shape ()).
IntTensor argmax(const Tensor& x) {
  detail::check_input(x, "argmax", "x");
  check_not_empty(x, "argmax");
  IntTensor out = IntTensor::empty(Shape());
  kernels::argmax(1, x.numel(), 1, x.data(), out.data());
  return out;
}

// The index of the smallest element of x flattened (shape ()).
IntTensor argmin(const Tensor& x) {
  detail::check_input(x, "argmin", "x");
  check_not_empty(x, "argmin");
  IntTensor out = IntTensor::empty(Shape());
  kernels::argmin(1, x.numel(), 1, x.data(), out.data());
  return out;
}

IntTensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  detail::check_input(x, "argmax", "x");
  int64_t d = normalize_dim(dim, x.dim(), "argmax");
  check_not_empty_dim(x, d, "argmax");
  auto [outer, n, inner] = detail::axis_view(x.shape(), d);
  IntTensor out = IntTensor::empty(out_shape(x, d, keepdim));
  if (out.numel() > 0) kernels::argmax(outer, n, inner, x.data(), out.data());
  return out;
}

IntTensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  detail::check_input(x, "argmin", "x");
  int64_t d = normalize_dim(dim, x.dim(), "argmin");
  check_not_empty_dim(x, d, "argmin");
  auto [outer, n, inner] = detail::axis_view(x.shape(), d);
  IntTensor out = IntTensor::empty(out_shape(x, d, keepdim));
  if (out.numel() > 0) kernels::argmin(outer, n, inner, x.data(), out.data());
  return out;
}

// ---- the same reductions as Tensor methods (tensor.hpp): x.sum(d) is sum(x, d) ----

Tensor Tensor::sum() const { return qkv::sum(*this); }
Tensor Tensor::sum(int64_t dim, bool keepdim) const { return qkv::sum(*this, dim, keepdim); }
Tensor Tensor::mean() const { return qkv::mean(*this); }
Tensor Tensor::mean(int64_t dim, bool keepdim) const { return qkv::mean(*this, dim, keepdim); }
Tensor Tensor::max() const { return qkv::max(*this); }
Tensor Tensor::max(int64_t dim, bool keepdim) const { return qkv::max(*this, dim, keepdim); }
Tensor Tensor::min() const { return qkv::min(*this); }
Tensor Tensor::min(int64_t dim, bool keepdim) const { return qkv::min(*this, dim, keepdim); }
IntTensor Tensor::argmax() const { return qkv::argmax(*this); }
IntTensor Tensor::argmax(int64_t dim, bool keepdim) const { return qkv::argmax(*this, dim, keepdim); }
IntTensor Tensor::argmin() const { return qkv::argmin(*this); }
IntTensor Tensor::argmin(int64_t dim, bool keepdim) const { return qkv::argmin(*this, dim, keepdim); }

}  // namespace qkv
