// Reductions: sum, mean, max, min over all elements or along one dim, and
// argmax/argmin. With keepdim the reduced dim stays, with size 1.
//
// Unlike PyTorch, max(x, dim) and min(x, dim) return only the values; the
// indices come from argmax/argmin. Their gradient goes to the (first)
// position that held the extreme value.
#pragma once
#include <qkv/core/tensor.hpp>

namespace qkv {

Tensor sum(const Tensor& x);  // shape ()
Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor max(const Tensor& x);
Tensor max(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& x);
Tensor min(const Tensor& x, int64_t dim, bool keepdim = false);

IntTensor argmax(const Tensor& x);  // index into the flattened tensor, shape ()
IntTensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
IntTensor argmin(const Tensor& x);  // shape (), like argmax(x)
IntTensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);

}  // namespace qkv
