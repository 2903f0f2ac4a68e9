// Shape ops: reshape/view, transpose/permute, squeeze/unsqueeze,
// expand/repeat, repeat_interleave, cat/stack, split/chunk, narrow/slice,
// index_select and embedding.
//
// They all come down to three kinds of move, each written once (the copies
// are kernels, kernels/copy.hpp):
//   - a view: the same storage with a new shape (reshape, view, flatten,
//     squeeze, unsqueeze); its gradient is dout reshaped back;
//   - a strided copy: out[i₀, i₁, …] = x[Σ iₖ·strideₖ] (permute, transpose,
//     expand, repeat_interleave); its gradient is the inverse permutation,
//     or a sum over the copies;
//   - a take along one dim: out[o, j, i] = x[o, pos[j], i] (narrow, slice,
//     split, chunk, index_select); its gradient adds dout back at the same
//     positions, in place into the input's gradient (one buffer however many
//     pieces are taken: a decoder that narrows its input once per step costs
//     the size of the input, not steps × that).
// cat copies each input's rows into place; repeat, stack and embedding are
// built from the moves, so their gradients come for free.
//
// Left out on purpose: strides on tensors (qkv tensors are always contiguous,
// so transpose copies where PyTorch would return a view), and the legacy rule
// that lets cat skip 1-D empty tensors of any shape.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/ops/broadcast.hpp>
#include <qkv/ops/reduction.hpp>
#include <qkv/ops/shape_ops.hpp>

#include <algorithm>
#include <array>
#include <span>

#include "kernels/copy.hpp"
#include "ops/util.hpp"

namespace qkv {

namespace {

// ---- the three moves ----------------------------------------------------------

// A tensor with x's storage and another shape of the same numel, no history.
Tensor share_storage(const Tensor& x, Shape shape) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = x.impl()->storage;
  impl->shape = std::move(shape);
  return Tensor(impl);
}

// y = x seen with another shape: no number moves.   dx = dout seen with x's shape.
// NOTE: y shares x's storage, so writing through y.data() writes x too.
Tensor view_as_shape(const Tensor& x, Shape shape, const char* backward_name) {
  Tensor out = share_storage(x, std::move(shape));
  record(out, backward_name, {x}, /*saved=*/{},
         [x_shape = x.shape()](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> {
           return {share_storage(dout, x_shape)};
         });
  return out;
}

// out[o, j, i] = x[o, pos[j], i]   in the (outer, n, inner) view around dim
// (positions already checked).   dx[o, pos[j], i] += dout[o, j, i], in place:
// dx is the input's whole gradient (autograd.hpp's record_accumulate), and
// a position taken twice gets both contributions.
Tensor take(const Tensor& x, int64_t dim, std::vector<int64_t> pos, const char* backward_name) {
  std::vector<int64_t> dims = x.shape().dims();
  dims[static_cast<size_t>(dim)] = static_cast<int64_t>(pos.size());
  Tensor out = Tensor::empty(Shape(dims));
  const detail::AxisView v = detail::axis_view(x.shape(), dim);  // (outer, n, inner) around dim
  const int64_t m = static_cast<int64_t>(pos.size());
  kernels::gather(v.outer, v.n, v.inner, m, pos.data(), x.data(), out.data());
  record_accumulate(out, backward_name, x, /*saved=*/{},
                    [v, m, pos = std::move(pos)](const SavedTensors&, const Tensor& dout, Tensor& dx) {
                      kernels::scatter_add(v.outer, v.n, v.inner, m, pos.data(), dout.data(), dx.data());
                    });
  return out;
}

// start, start+step, … below end, for 0 <= start, end and step >= 1. The
// count ceil((end - start) / step) comes first, so no position is ever
// computed past end: a loop of p += step would overflow for a huge step.
std::vector<int64_t> positions(int64_t start, int64_t end, int64_t step) {
  const int64_t span = end > start ? end - start : 0;
  const int64_t count = span / step + (span % step != 0);
  std::vector<int64_t> pos(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) pos[static_cast<size_t>(i)] = start + i * step;
  return pos;
}

// `shape` with one -1 replaced by what makes numel match x's.
Shape infer_shape(const Shape& from, Shape shape, const char* op) {
  int64_t infer = -1, known = 1;
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    if (shape[d] == -1) {
      if (infer >= 0) fail("{}: only one size may be -1, got {}", op, shape);
      infer = d;
    } else if (shape[d] < 0) {
      fail("{}: invalid size {} in {}", op, shape[d], shape);
    } else {
      known = checked_mul(known, shape[d], op);
    }
  }
  if (infer >= 0) {
    if (known == 0)
      fail("{}: cannot reshape {} to {}: the -1 is ambiguous when the other sizes multiply to 0", op, from, shape);
    if (from.numel() % known != 0)
      fail("{}: cannot reshape {} ({} elements) to {}: {} is not a multiple of {}", op, from, from.numel(), shape,
           from.numel(), known);
    shape[infer] = from.numel() / known;
  }
  if (const int64_t n = checked_numel(shape, op); n != from.numel())
    fail("{}: cannot reshape {} ({} elements) to {} ({} elements)", op, from, from.numel(), shape, n);
  return shape;
}

}  // namespace

// ---- views: same numbers, new shape -------------------------------------------

Tensor reshape(const Tensor& x, Shape shape) {
  detail::check_input(x, "reshape", "x");
  return view_as_shape(x, infer_shape(x.shape(), std::move(shape), "reshape"), "ReshapeBackward");
}

Tensor view(const Tensor& x, Shape shape) {
  detail::check_input(x, "view", "x");
  return view_as_shape(x, infer_shape(x.shape(), std::move(shape), "view"), "ViewBackward");
}

// (d₀, …, d_start, …, d_end, …) -> (d₀, …, d_start·…·d_end, …); a 0-d tensor becomes (1).
Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  detail::check_input(x, "flatten", "x");
  int64_t start = normalize_dim(start_dim, x.dim(), "flatten");
  int64_t end = normalize_dim(end_dim, x.dim(), "flatten");
  if (x.dim() == 0) return view_as_shape(x, Shape{1}, "FlattenBackward");
  if (start > end) fail("flatten: start_dim {} comes after end_dim {} for {}", start_dim, end_dim, x.shape());
  std::vector<int64_t> dims;
  int64_t merged = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < start || d > end)
      dims.push_back(x.shape()[d]);
    else
      merged *= x.shape()[d];
    if (d == end) dims.push_back(merged);
  }
  return view_as_shape(x, Shape(dims), "FlattenBackward");
}

Tensor squeeze(const Tensor& x) {
  detail::check_input(x, "squeeze", "x");
  std::vector<int64_t> dims;
  for (int64_t s : x.shape())
    if (s != 1) dims.push_back(s);
  return view_as_shape(x, Shape(dims), "SqueezeBackward");
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  detail::check_input(x, "squeeze", "x");
  int64_t d = normalize_dim(dim, x.dim(), "squeeze");
  if (x.dim() == 0 || x.shape()[d] != 1) return view_as_shape(x, x.shape(), "SqueezeBackward");
  return view_as_shape(x, detail::reduced_shape(x.shape(), d, false), "SqueezeBackward");
}

// A new size-1 dim at `dim`, which may be 0 … ndim (after the last).
Tensor unsqueeze(const Tensor& x, int64_t dim) {
  detail::check_input(x, "unsqueeze", "x");
  int64_t d = normalize_dim(dim, x.dim() + 1, "unsqueeze");
  std::vector<int64_t> dims = x.shape().dims();
  dims.insert(dims.begin() + d, 1);
  return view_as_shape(x, Shape(dims), "UnsqueezeBackward");
}

// ---- permute and transpose ------------------------------------------------------

// y[i_dims[0], i_dims[1], …] = x[i₀, i₁, …]: y's dim k is x's dim dims[k].
// dx = dout permuted back by the inverse permutation (x's dim dims[k] is y's dim k).
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  detail::check_input(x, "permute", "x");
  const int64_t nd = x.dim();
  if (static_cast<int64_t>(dims.size()) != nd)
    fail("permute: {} dims given for a {}-d tensor of shape {}", dims.size(), nd, x.shape());
  std::vector<int64_t> order(dims.size()), inverse(dims.size(), -1);
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t d = normalize_dim(dims[k], nd, "permute");
    if (inverse[static_cast<size_t>(d)] >= 0) fail("permute: dim {} appears twice in the permutation", dims[k]);
    order[k] = d;
    inverse[static_cast<size_t>(d)] = static_cast<int64_t>(k);
  }
  const std::vector<int64_t> x_strides = detail::contiguous_strides(x.shape());
  std::vector<int64_t> out_dims(dims.size()), strides(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) {
    out_dims[k] = x.shape()[order[k]];
    strides[k] = x_strides[static_cast<size_t>(order[k])];
  }
  Tensor out = Tensor::empty(Shape(out_dims));
  kernels::strided_copy(out_dims, strides, x.data(), out.data());
  record(
      out, "PermuteBackward", {x}, /*saved=*/{},
      [inverse](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> { return {permute(dout, inverse)}; });
  return out;
}

// Swap two dims: the permutation that exchanges dim0 and dim1 (its own inverse).
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  detail::check_input(x, "transpose", "x");
  int64_t d0 = normalize_dim(dim0, x.dim(), "transpose");
  int64_t d1 = normalize_dim(dim1, x.dim(), "transpose");
  if (x.dim() == 0) return view_as_shape(x, x.shape(), "TransposeBackward");
  std::vector<int64_t> order(static_cast<size_t>(x.dim()));
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int64_t>(k);
  std::swap(order[static_cast<size_t>(d0)], order[static_cast<size_t>(d1)]);
  return permute(x, order);
}

// ---- expand and repeat ------------------------------------------------------------

namespace {

// y = x broadcast to `shape`: a size-1 dim repeats its one value (stride 0),
// new dims go in front.   dx = sum_to(dout, x.shape), the sum over the copies.
// `op` is the op named in the errors: expand, or repeat, which is built on it.
Tensor expand_for(const Tensor& x, Shape shape, const char* op) {
  const int64_t nd = shape.ndim(), lead = shape.ndim() - x.dim();
  if (lead < 0) fail("{}: cannot expand {} to {}: the target has fewer dims", op, x.shape(), shape);
  const std::vector<int64_t> x_strides = detail::contiguous_strides(x.shape());
  std::vector<int64_t> strides(static_cast<size_t>(nd), 0);
  for (int64_t d = 0; d < nd; ++d) {
    if (d < lead) {  // a new leading dim: every index reads the same x
      if (shape[d] < 0) fail("{}: size {} not allowed for new leading dim {} in {}", op, shape[d], d, shape);
      continue;
    }
    int64_t size = x.shape()[d - lead];
    if (shape[d] == -1) shape[d] = size;
    if (shape[d] == size)
      strides[static_cast<size_t>(d)] = x_strides[static_cast<size_t>(d - lead)];
    else if (size != 1 || shape[d] < 0)
      fail("{}: cannot expand {} to {}: dim {} of size {} cannot become {} (only size-1 dims grow)", op, x.shape(),
           shape, d, size, shape[d]);
  }
  Tensor out = Tensor::empty(shape, op);
  kernels::strided_copy(std::span<const int64_t>(shape.begin(), shape.end()), strides, x.data(), out.data());
  record(out, "ExpandBackward", {x}, /*saved=*/{},
         [x_shape = x.shape()](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> {
           return {sum_to(dout, x_shape)};
         });
  return out;
}

}  // namespace

Tensor expand(const Tensor& x, Shape shape) {
  detail::check_input(x, "expand", "x");
  return expand_for(x, std::move(shape), "expand");
}

// Tile x repeats[k] times along dim k (x gets leading size-1 dims if repeats is longer).
// As a composition: x (p₀, p₁, …) viewed as (1, p₀, 1, p₁, …), expanded to
// (r₀, p₀, r₁, p₁, …), viewed as (r₀·p₀, r₁·p₁, …). The gradient comes from
// expand's: each copy's gradient is summed back.
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats) {
  detail::check_input(x, "repeat", "x");
  const int64_t n = static_cast<int64_t>(repeats.size());
  if (n < x.dim())
    fail("repeat: {} repeats for a {}-d tensor of shape {}: need at least one per dim", n, x.dim(), x.shape());
  std::vector<int64_t> interleaved, tiled, out_dims;
  for (int64_t k = 0; k < n; ++k) {
    int64_t r = repeats[static_cast<size_t>(k)];
    if (r < 0) fail("repeat: negative repeat count {} for dim {}", r, k);
    int64_t p = k < n - x.dim() ? 1 : x.shape()[k - (n - x.dim())];
    interleaved.insert(interleaved.end(), {1, p});
    tiled.insert(tiled.end(), {r, p});
    out_dims.push_back(checked_mul(r, p, "repeat"));
  }
  return reshape(expand_for(reshape(x, Shape(interleaved)), Shape(tiled), "repeat"), Shape(out_dims));
}

// ---- repeat_interleave ----------------------------------------------------------------

namespace {

// repeat_interleave as a strided copy: x seen as (outer, n, 1, inner) around
// dim is read r times along the size-1 dim (stride 0) into (outer, n, r,
// inner), which is the output (…, n·r, …) seen in 4 dims:
//   out[o, j·r + t, i] = x[o, j, i]      for t < r
struct Interleave {
  Shape out;                                // (…, n·r, …)
  std::array<int64_t, 4> sizes, x_strides;  // (outer, n, r, inner); x's (n·inner, inner, 0, 1)
};

template <class T>
Interleave interleave(const T& x, int64_t repeats, int64_t dim) {
  if (repeats < 0) fail("repeat_interleave: repeats must be at least 0, got {}", repeats);
  if (x.dim() == 0)
    fail("repeat_interleave: dim {} given for a 0-d tensor, which has none (without a dim, x is flattened first)", dim);
  const int64_t d = normalize_dim(dim, x.dim(), "repeat_interleave");
  auto [outer, n, inner] = detail::axis_view(x.shape(), d);
  Shape out = x.shape();
  out[d] = checked_mul(n, repeats, "repeat_interleave");
  return {out, {outer, n, repeats, inner}, {n * inner, inner, 0, 1}};
}

}  // namespace

// y[…, j·r + t, …] = x[…, j, …] for t < r     dx[…, j, …] = Σₜ dout[…, j·r + t, …]
Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t dim) {
  detail::check_input(x, "repeat_interleave", "x");
  const Interleave plan = interleave(x, repeats, dim);
  Tensor out = Tensor::empty(plan.out, "repeat_interleave");
  kernels::strided_copy(plan.sizes, plan.x_strides, x.data(), out.data());
  record(out, "RepeatInterleaveBackward", {x}, /*saved=*/{},
         [x_shape = x.shape(), grid = Shape(plan.sizes.data(), plan.sizes.data() + plan.sizes.size())](
             const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> {
           return {reshape(sum(reshape(dout, grid), 2), x_shape)};  // (outer, n, r, inner) -> (outer, n, inner)
         });
  return out;
}

// Without a dim, x is flattened first (as in PyTorch): the result is 1-d.
Tensor repeat_interleave(const Tensor& x, int64_t repeats) {
  detail::check_input(x, "repeat_interleave", "x");
  return repeat_interleave(flatten(x), repeats, 0);
}

IntTensor repeat_interleave(const IntTensor& x, int64_t repeats, int64_t dim) {
  detail::check_input(x, "repeat_interleave", "x");
  const Interleave plan = interleave(x, repeats, dim);
  IntTensor out = IntTensor::empty(plan.out, "repeat_interleave");
  kernels::strided_copy(plan.sizes, plan.x_strides, x.data(), out.data());
  return out;
}

IntTensor repeat_interleave(const IntTensor& x, int64_t repeats) {
  detail::check_input(x, "repeat_interleave", "x");
  return repeat_interleave(x.reshape(Shape{x.numel()}), repeats, 0);
}

// ---- cat and stack ----------------------------------------------------------------

// y = [x₀ | x₁ | …] along dim: in the (outer, n, inner) view each xᵢ fills
// nᵢ·inner contiguous values of every outer row.   dxᵢ = dout split back.
Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  if (xs.empty()) fail("cat: expected a non-empty list of tensors");
  for (const Tensor& x : xs) detail::check_input(x, "cat", "a tensor in the list");
  const Shape& first = xs[0].shape();
  if (first.ndim() == 0) fail("cat: a 0-d tensor cannot be concatenated (give it a dim with unsqueeze)");
  int64_t d = normalize_dim(dim, first.ndim(), "cat");
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Shape& s = xs[i].shape();
    bool fits = s.ndim() == first.ndim();
    for (int64_t k = 0; fits && k < s.ndim(); ++k) fits = k == d || s[k] == first[k];
    if (!fits)
      fail("cat: tensor {} has shape {} and tensor 0 has {}: they must agree except in dim {}", i, s, first, d);
    sizes.push_back(s[d]);
  }
  std::vector<int64_t> dims = first.dims();
  dims[static_cast<size_t>(d)] = 0;
  for (int64_t n : sizes) dims[static_cast<size_t>(d)] = checked_add(dims[static_cast<size_t>(d)], n, "cat");
  Tensor out = Tensor::empty(Shape(dims), "cat");
  auto [outer, total, inner] = detail::axis_view(out.shape(), d);
  int64_t offset = 0;                       // where along dim the current input starts
  for (size_t i = 0; i < xs.size(); ++i) {  // xᵢ is (outer, nᵢ·inner): its rows land total·inner apart
    const int64_t block = sizes[i] * inner;
    kernels::copy_rows(outer, block, xs[i].data(), block, out.data() + offset * inner, total * inner);
    offset += sizes[i];
  }
  record(out, "CatBackward", xs, /*saved=*/{},
         [sizes, d](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> { return split(dout, sizes, d); });
  return out;
}

// Join equal shapes along a new dim: cat of each x unsqueezed at dim.
Tensor stack(const std::vector<Tensor>& xs, int64_t dim) {
  if (xs.empty()) fail("stack: expected a non-empty list of tensors");
  for (const Tensor& x : xs) detail::check_input(x, "stack", "a tensor in the list");
  int64_t d = normalize_dim(dim, xs[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].shape() != xs[0].shape())
      fail("stack: tensor {} has shape {} and tensor 0 has {}: all must be equal", i, xs[i].shape(), xs[0].shape());
    parts.push_back(unsqueeze(xs[i], d));
  }
  return cat(parts, d);
}

// ---- split, chunk, narrow, slice ------------------------------------------------------

// Consecutive pieces of the given sizes along dim. Each piece is a take of
// its own range, so each gets its own backward, which adds its part into dx.
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  detail::check_input(x, "split", "x");
  int64_t d = normalize_dim(dim, x.dim(), "split");
  if (x.dim() == 0) fail("split: cannot split a 0-d tensor");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail("split: negative size {} in the sizes", s);
    total = checked_add(total, s, "split");
  }
  if (total != x.shape()[d])
    fail("split: sizes add up to {}, but dim {} of {} has size {}", total, d, x.shape(), x.shape()[d]);
  std::vector<Tensor> pieces;
  int64_t start = 0;
  for (int64_t s : sizes) {
    pieces.push_back(take(x, d, positions(start, start + s, 1), "SplitBackward"));
    start += s;
  }
  return pieces;
}

// Pieces of split_size (the last one smaller if the size does not divide).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  detail::check_input(x, "split", "x");
  int64_t d = normalize_dim(dim, x.dim(), "split");
  if (x.dim() == 0) fail("split: cannot split a 0-d tensor");
  int64_t n = x.shape()[d];
  if (split_size < 0 || (split_size == 0 && n != 0))
    fail("split: split_size {} for dim {} of size {}: must be at least 1", split_size, d, n);
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < n; start += sizes.back()) sizes.push_back(std::min(split_size, n - start));
  if (sizes.empty()) sizes.push_back(0);  // a size-0 dim still gives one (empty) piece
  return split(x, sizes, d);
}

// PyTorch's sizing: pieces of ceil(n / chunks), so there may be fewer than
// `chunks` of them (a size 5 dim in 4 chunks gives 2, 2, 1).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  detail::check_input(x, "chunk", "x");
  if (chunks < 1) fail("chunk: chunks must be at least 1, got {}", chunks);
  int64_t d = normalize_dim(dim, x.dim(), "chunk");
  if (x.dim() == 0) fail("chunk: cannot chunk a 0-d tensor");
  int64_t n = x.shape()[d];
  if (n == 0) return split(x, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  return split(x, n / chunks + (n % chunks != 0), d);  // ceil(n / chunks), without n + chunks overflowing
}

// x[…, start : start+length, …] along dim; start may be negative (from the end).
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  detail::check_input(x, "narrow", "x");
  if (x.dim() == 0) fail("narrow: cannot narrow a 0-d tensor");
  int64_t d = normalize_dim(dim, x.dim(), "narrow");
  int64_t n = x.shape()[d];
  if (start < -n || start > n) fail("narrow: start {} out of range for dim {} of size {}", start, d, n);
  if (start < 0) start += n;
  if (length < 0) fail("narrow: negative length {}", length);
  if (length > n - start) fail("narrow: start {} + length {} exceeds size {} of dim {}", start, length, n, d);
  return take(x, d, positions(start, start + length, 1), "NarrowBackward");
}

// Python's x[start:end:step] along dim: negative bounds count from the end,
// then both are clamped to 0 … n, so out-of-range bounds give a shorter (or
// empty) result rather than an error.
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  detail::check_input(x, "slice", "x");
  if (x.dim() == 0) fail("slice: cannot slice a 0-d tensor");
  int64_t d = normalize_dim(dim, x.dim(), "slice");
  if (step < 1) fail("slice: step must be at least 1, got {}", step);
  int64_t n = x.shape()[d];
  auto clamp = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t{0}, n); };
  return take(x, d, positions(clamp(start), clamp(end), step), "SliceBackward");
}

// ---- index_select and embedding --------------------------------------------------------

// y[…, j, …] = x[…, index[j], …] along dim.   dx = dout added back at index
// (an index that appears twice gets both gradients).
Tensor index_select(const Tensor& x, int64_t dim, const IntTensor& index) {
  detail::check_input(x, "index_select", "x");
  detail::check_input(index, "index_select", "index");
  if (index.dim() > 1) fail("index_select: index must be 1-d, got shape {}", index.shape());
  int64_t d = normalize_dim(dim, x.dim(), "index_select");
  if (x.dim() == 0) fail("index_select: cannot index a 0-d tensor");
  int64_t n = x.shape()[d];
  std::vector<int64_t> pos = index.to_vector();
  for (int64_t i : pos)
    if (i < 0 || i >= n) fail("index_select: index {} out of range for dim {} of size {}", i, d, n);
  return take(x, d, std::move(pos), "IndexSelectBackward");
}

// out[…, :] = weight[ids[…], :]: (…) ids, (V, D) weight -> (…, D).
// The rows weight[ids] as one index_select, reshaped to ids.shape + (D);
// its gradient adds dout's rows into the rows of weight that were picked.
Tensor embedding(const IntTensor& ids, const Tensor& weight) {
  detail::check_input(ids, "embedding", "ids");
  detail::check_input(weight, "embedding", "weight");
  if (weight.dim() != 2) fail("embedding: weight must be 2-d (V, D), got shape {}", weight.shape());
  const int64_t V = weight.shape()[0], D = weight.shape()[1];
  const int64_t* id = ids.data();
  for (int64_t k = 0; k < ids.numel(); ++k)
    if (id[k] < 0 || id[k] >= V)
      fail("embedding: index {} out of range for a weight of {} rows {}", id[k], V, weight.shape());
  std::vector<int64_t> out_dims = ids.shape().dims();
  out_dims.push_back(D);
  Tensor rows = index_select(weight, 0, ids.reshape(Shape{ids.numel()}));  // (N, D), N = ids.numel()
  return reshape(rows, Shape(out_dims));                                   // (…, D)
}

// --- as Tensor methods (tensor.hpp): x.transpose(1, 2) is transpose(x, 1, 2) ------

Tensor Tensor::reshape(Shape shape) const { return qkv::reshape(*this, std::move(shape)); }
Tensor Tensor::view(Shape shape) const { return qkv::view(*this, std::move(shape)); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const { return qkv::flatten(*this, start_dim, end_dim); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const { return qkv::transpose(*this, dim0, dim1); }
Tensor Tensor::permute(const std::vector<int64_t>& dims) const { return qkv::permute(*this, dims); }
Tensor Tensor::squeeze() const { return qkv::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return qkv::squeeze(*this, dim); }
Tensor Tensor::unsqueeze(int64_t dim) const { return qkv::unsqueeze(*this, dim); }
Tensor Tensor::expand(Shape shape) const { return qkv::expand(*this, std::move(shape)); }
Tensor Tensor::repeat(const std::vector<int64_t>& repeats) const { return qkv::repeat(*this, repeats); }
Tensor Tensor::repeat_interleave(int64_t repeats) const { return qkv::repeat_interleave(*this, repeats); }
Tensor Tensor::repeat_interleave(int64_t repeats, int64_t dim) const {
  return qkv::repeat_interleave(*this, repeats, dim);
}
IntTensor IntTensor::repeat_interleave(int64_t repeats) const { return qkv::repeat_interleave(*this, repeats); }
IntTensor IntTensor::repeat_interleave(int64_t repeats, int64_t dim) const {
  return qkv::repeat_interleave(*this, repeats, dim);
}
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const { return qkv::split(*this, split_size, dim); }
std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes, int64_t dim) const {
  return qkv::split(*this, sizes, dim);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return qkv::chunk(*this, chunks, dim); }
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return qkv::narrow(*this, dim, start, length);
}
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  return qkv::slice(*this, dim, start, end, step);
}
Tensor Tensor::index_select(int64_t dim, const IntTensor& index) const { return qkv::index_select(*this, dim, index); }

}  // namespace qkv
