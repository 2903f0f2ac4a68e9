// Exercise 12 · softmax as a new op with its hand-written backward
//
// Lesson 13 (lessons/13_your_own_layer.cpp); the notes: none, this is qkv's
// own: how a reader extends the framework, as lesson 13 does with swish.
//
// An op computes its output without recording (on x.detach()), then attaches
// its backward with record(out, "Name", {x}, /*saved=*/{…}, lambda): {x} are
// the inputs, `saved` the tensors the backward reads, and the lambda, given
// them back (saved[0], …) and dout = dL/dout, returns {dL/dx}. Write softmax
// over the last dim this way:
//   forward   y = softmax(x),   yᵢ = exp(xᵢ - m) / Σⱼ exp(xⱼ - m),  m = maxⱼ xⱼ   (each row)
//             (subtracting the row's max changes nothing mathematically and
//              keeps exp from overflowing for large logits)
//   backward  the Jacobian of one row is dyᵢ/dxⱼ = yᵢ(δᵢⱼ - yⱼ) = diag(y) - y yᵀ, so
//             dxᵢ = Σⱼ doutⱼ yⱼ(δⱼᵢ - yᵢ) = yᵢ (doutᵢ - Σⱼ doutⱼ yⱼ)
// The backward reads y: save `out` (record() keeps it detached, since out
// owns its backward and holding out itself would be a cycle) and read it back
// as saved[0]; the lambda captures no tensor. The grader checks your backward
// with gradcheck (finite differences).
//
// Write my_softmax below, without qkv's softmax:
//   x (…, n) -> y (…, n), each row summing to 1, with a backward
//
// Not allowed: qkv::softmax, log_softmax, masked_softmax (the grader checks what your
// file calls and the ops that made your result); the output's backward must
// be your own, one op recorded with record().
//
// Grade it: ./qkv.sh exercise 12       a hint: ./qkv.sh exercise 12 --hint
#include "12_softmax_op.hpp"

namespace qkv::exercises {

Tensor my_softmax(const Tensor& x) { not_written_yet("my_softmax", x); }

}  // namespace qkv::exercises
