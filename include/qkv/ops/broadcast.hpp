// Broadcasting, PyTorch's rules: align shapes at their last dim; two sizes
// fit if they are equal or one of them is 1; a missing dim counts as 1.
//   (2, 1, 4) with (3, 1)  ->  (2, 3, 4)
// An op that broadcasts its inputs must sum its gradients back over the
// broadcast dims: sum_to does that, for every such op, in one place.
#pragma once
#include <qkv/core/tensor.hpp>

namespace qkv {

// The shape a and b broadcast to, or an Error naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Sum `x` down to `shape`, where `shape` broadcasts to x's shape: the
// backward of broadcasting. Returns x itself when the shapes already agree.
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace qkv
