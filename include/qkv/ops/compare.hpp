// Comparisons, where, and d2l's sequence_mask: the ops that make masks and
// the ops that use them.
//
// lt le gt ge eq ne compare element by element, broadcasting as the
// arithmetic ops do (broadcast.hpp), and give an IntTensor mask of 0/1, the
// kind masked_fill and where take. A float operand has a float scalar form,
// an IntTensor one an int64 scalar form, and the operators < <= > >= == !=
// call them:
//   arange_int(0, 4) < int_tensor({2, 3}).reshape({2, 1})  ->  [[1, 1, 0, 0], [1, 1, 1, 0]]
// NaN compares as in IEEE 754 and PyTorch: every comparison with a NaN is
// false, except ne, which is true. A comparison has no gradient (a step has
// derivative 0 wherever it has one), so it returns an IntTensor, not a Tensor.
//
// where(mask, a, b) is torch.where: a where mask ≠ 0, b elsewhere, with mask,
// a and b broadcast together; its gradient goes to a where the mask is set
// and to b where it is not.
//
// sequence_mask lives here rather than with the losses: it is the one
// "positions past a valid length" mask of d2l, built from arange_int, a
// comparison and where, and losses, attention masks and layers all need it.
#pragma once
#include <qkv/core/tensor.hpp>

#include <cstdint>

namespace qkv {

// --- comparisons: 0/1 masks, broadcasting -----------------------------------------

IntTensor lt(const Tensor& a, const Tensor& b);  // a < b
IntTensor lt(const Tensor& a, float b);
IntTensor le(const Tensor& a, const Tensor& b);  // a ≤ b
IntTensor le(const Tensor& a, float b);
IntTensor gt(const Tensor& a, const Tensor& b);  // a > b
IntTensor gt(const Tensor& a, float b);
IntTensor ge(const Tensor& a, const Tensor& b);  // a ≥ b
IntTensor ge(const Tensor& a, float b);
IntTensor eq(const Tensor& a, const Tensor& b);  // a = b
IntTensor eq(const Tensor& a, float b);
IntTensor ne(const Tensor& a, const Tensor& b);  // a ≠ b (true for NaN)
IntTensor ne(const Tensor& a, float b);

IntTensor lt(const IntTensor& a, const IntTensor& b);
IntTensor lt(const IntTensor& a, int64_t b);
IntTensor le(const IntTensor& a, const IntTensor& b);
IntTensor le(const IntTensor& a, int64_t b);
IntTensor gt(const IntTensor& a, const IntTensor& b);
IntTensor gt(const IntTensor& a, int64_t b);
IntTensor ge(const IntTensor& a, const IntTensor& b);
IntTensor ge(const IntTensor& a, int64_t b);
IntTensor eq(const IntTensor& a, const IntTensor& b);
IntTensor eq(const IntTensor& a, int64_t b);
IntTensor ne(const IntTensor& a, const IntTensor& b);
IntTensor ne(const IntTensor& a, int64_t b);

IntTensor operator<(const Tensor& a, const Tensor& b);
IntTensor operator<(const Tensor& a, float b);
IntTensor operator<=(const Tensor& a, const Tensor& b);
IntTensor operator<=(const Tensor& a, float b);
IntTensor operator>(const Tensor& a, const Tensor& b);
IntTensor operator>(const Tensor& a, float b);
IntTensor operator>=(const Tensor& a, const Tensor& b);
IntTensor operator>=(const Tensor& a, float b);
IntTensor operator==(const Tensor& a, const Tensor& b);
IntTensor operator==(const Tensor& a, float b);
IntTensor operator!=(const Tensor& a, const Tensor& b);
IntTensor operator!=(const Tensor& a, float b);

IntTensor operator<(const IntTensor& a, const IntTensor& b);
IntTensor operator<(const IntTensor& a, int64_t b);
IntTensor operator<=(const IntTensor& a, const IntTensor& b);
IntTensor operator<=(const IntTensor& a, int64_t b);
IntTensor operator>(const IntTensor& a, const IntTensor& b);
IntTensor operator>(const IntTensor& a, int64_t b);
IntTensor operator>=(const IntTensor& a, const IntTensor& b);
IntTensor operator>=(const IntTensor& a, int64_t b);
IntTensor operator==(const IntTensor& a, const IntTensor& b);
IntTensor operator==(const IntTensor& a, int64_t b);
IntTensor operator!=(const IntTensor& a, const IntTensor& b);
IntTensor operator!=(const IntTensor& a, int64_t b);

// --- where ----------------------------------------------------------------------

// torch.where: y = a where mask ≠ 0, else b; mask, a and b broadcast to one shape.
//   da = dout where mask ≠ 0, else 0      db = dout where mask = 0, else 0
// each summed back over the dims a (or b) was broadcast along.
Tensor where(const IntTensor& mask, const Tensor& a, const Tensor& b);
Tensor where(const IntTensor& mask, const Tensor& a, float b);
Tensor where(const IntTensor& mask, float a, const Tensor& b);

// --- sequence_mask ----------------------------------------------------------------

// d2l's sequence_mask: X (B, S, …) with the entries X[b, s, …] for
// s ≥ valid_len[b] replaced by `value`; valid_len (B), each ≥ 0 (a length ≥ S
// masks nothing). Unlike d2l's it returns a new tensor instead of writing
// into X; gradients flow to the entries that were kept.
//   sequence_mask([[1,2,3],[4,5,6]], [1,2]) = [[1,0,0],[4,5,0]]
Tensor sequence_mask(const Tensor& X, const IntTensor& valid_len, float value = 0);

}  // namespace qkv
