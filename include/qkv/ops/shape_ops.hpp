// Ops that rearrange elements without computing new values: reshape, view,
// transpose, permute, squeeze/unsqueeze, expand/repeat, repeat_interleave,
// cat/stack, split/chunk, narrow/slice, index_select and the embedding lookup.
//
// reshape and view share storage with their input (qkv tensors are always
// contiguous, so they always can); the others copy. Each backward puts the
// gradient back where the element came from (adding, where one element was
// used several times, as in expand, repeat, repeat_interleave and index_select).
#pragma once
#include <qkv/core/tensor.hpp>

#include <vector>

namespace qkv {

// One size may be -1: it is inferred from the others.
Tensor reshape(const Tensor& x, Shape shape);
Tensor view(const Tensor& x, Shape shape);  // the same as reshape here: storage is shared
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor squeeze(const Tensor& x);               // drop every size-1 dim
Tensor squeeze(const Tensor& x, int64_t dim);  // drop `dim` if its size is 1
Tensor unsqueeze(const Tensor& x, int64_t dim);

// expand: size-1 dims grow to `shape` (-1 keeps a size; new dims may be
// added in front). repeat: tile the tensor repeats[i] times along dim i.
Tensor expand(const Tensor& x, Shape shape);
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats);

// torch.repeat_interleave: each element `repeats` times in a row along dim,
//   [a b c] -> [a a b b c c]        (…, n, …) -> (…, n·repeats, …)
// where repeat tiles the whole tensor ([a b c a b c]). Without a dim, x is
// flattened first and the result is 1-d. The IntTensor form repeats integers
// (attention gives every head its example's valid lengths); it has no gradient.
Tensor repeat_interleave(const Tensor& x, int64_t repeats);
Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t dim);
IntTensor repeat_interleave(const IntTensor& x, int64_t repeats);
IntTensor repeat_interleave(const IntTensor& x, int64_t repeats, int64_t dim);

Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0);    // join along an existing dim
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0);  // join along a new dim

// Pieces of split_size along dim (the last may be smaller), or of the given sizes.
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);

// Elements start … start+length-1 along dim; slice is Python's x[start:end:step]
// along dim (negative start/end count from the end, and are clamped like Python's).
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);

// The entries index[0], index[1], … of x along dim (1-D index).
Tensor index_select(const Tensor& x, int64_t dim, const IntTensor& index);

// Rows of weight (V, D) picked by ids of any shape: ids.shape + (D).
// Its gradient adds into the rows that were picked.
Tensor embedding(const IntTensor& ids, const Tensor& weight);

}  // namespace qkv
