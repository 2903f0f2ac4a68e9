// Comparisons (lt le gt ge eq ne) into 0/1 IntTensor masks, where, and d2l's
// sequence_mask built from them.
//
// Every op here walks its broadcast output once, row by row, with one offset
// per input (detail::broadcast_walk, the strided walk of kernels/walk.hpp).
// Masks are small next to the float work around them (a (B·h, Q, K)
// attention mask), so a plain loop along each row is enough and no kernel is
// needed. A scalar operand is a 0-d tensor: it broadcasts like any other, so
// each comparison has one implementation.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/ops/broadcast.hpp>
#include <qkv/ops/compare.hpp>

#include <functional>
#include <vector>

#include "ops/util.hpp"

namespace qkv {

namespace {

// --- comparisons -------------------------------------------------------------------

// mask = pred(a, b) as 0/1, a and b broadcast; T is Tensor or IntTensor.
// pred is std::less<> and friends: on floats they follow IEEE 754, so a NaN
// makes every comparison false except not_equal_to, as in PyTorch.
template <class T, class Pred>
IntTensor compare(const T& a, const T& b, Pred pred, const char* op) {
  if (!a.defined() || !b.defined()) fail("{}: undefined {}", op, !a.defined() ? "a" : "b");
  IntTensor out = IntTensor::empty(broadcast_shapes(a.shape(), b.shape(), op), op);
  const auto* pa = a.data();
  const auto* pb = b.data();
  int64_t* po = out.data();
  const auto walk = detail::broadcast_walk(out.shape(), a.shape(), b.shape());
  const int64_t n = walk.row_length(), sa = walk.row_step(0), sb = walk.row_step(1);
  walk.for_each_row([&](int64_t o, const auto& at) {
    for (int64_t i = 0; i < n; ++i) po[o + i] = pred(pa[at[0] + i * sa], pb[at[1] + i * sb]) ? 1 : 0;
  });
  return out;
}

// A scalar as a 0-d operand.
Tensor scalar(float v) { return scalar_tensor(v); }
IntTensor scalar(int64_t v) { return IntTensor({v}, Shape()); }

}  // namespace

IntTensor lt(const Tensor& a, const Tensor& b) { return compare(a, b, std::less<>(), "lt"); }
IntTensor le(const Tensor& a, const Tensor& b) { return compare(a, b, std::less_equal<>(), "le"); }
IntTensor gt(const Tensor& a, const Tensor& b) { return compare(a, b, std::greater<>(), "gt"); }
IntTensor ge(const Tensor& a, const Tensor& b) { return compare(a, b, std::greater_equal<>(), "ge"); }
IntTensor eq(const Tensor& a, const Tensor& b) { return compare(a, b, std::equal_to<>(), "eq"); }
IntTensor ne(const Tensor& a, const Tensor& b) { return compare(a, b, std::not_equal_to<>(), "ne"); }
IntTensor lt(const Tensor& a, float b) { return lt(a, scalar(b)); }
IntTensor le(const Tensor& a, float b) { return le(a, scalar(b)); }
IntTensor gt(const Tensor& a, float b) { return gt(a, scalar(b)); }
IntTensor ge(const Tensor& a, float b) { return ge(a, scalar(b)); }
IntTensor eq(const Tensor& a, float b) { return eq(a, scalar(b)); }
IntTensor ne(const Tensor& a, float b) { return ne(a, scalar(b)); }

IntTensor lt(const IntTensor& a, const IntTensor& b) { return compare(a, b, std::less<>(), "lt"); }
IntTensor le(const IntTensor& a, const IntTensor& b) { return compare(a, b, std::less_equal<>(), "le"); }
IntTensor gt(const IntTensor& a, const IntTensor& b) { return compare(a, b, std::greater<>(), "gt"); }
IntTensor ge(const IntTensor& a, const IntTensor& b) { return compare(a, b, std::greater_equal<>(), "ge"); }
IntTensor eq(const IntTensor& a, const IntTensor& b) { return compare(a, b, std::equal_to<>(), "eq"); }
IntTensor ne(const IntTensor& a, const IntTensor& b) { return compare(a, b, std::not_equal_to<>(), "ne"); }
IntTensor lt(const IntTensor& a, int64_t b) { return lt(a, scalar(b)); }
IntTensor le(const IntTensor& a, int64_t b) { return le(a, scalar(b)); }
IntTensor gt(const IntTensor& a, int64_t b) { return gt(a, scalar(b)); }
IntTensor ge(const IntTensor& a, int64_t b) { return ge(a, scalar(b)); }
IntTensor eq(const IntTensor& a, int64_t b) { return eq(a, scalar(b)); }
IntTensor ne(const IntTensor& a, int64_t b) { return ne(a, scalar(b)); }

// --- operators -------------------------------------------------------------------

IntTensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
IntTensor operator<(const Tensor& a, float b) { return lt(a, b); }
IntTensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
IntTensor operator<=(const Tensor& a, float b) { return le(a, b); }
IntTensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
IntTensor operator>(const Tensor& a, float b) { return gt(a, b); }
IntTensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
IntTensor operator>=(const Tensor& a, float b) { return ge(a, b); }
IntTensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
IntTensor operator==(const Tensor& a, float b) { return eq(a, b); }
IntTensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
IntTensor operator!=(const Tensor& a, float b) { return ne(a, b); }

IntTensor operator<(const IntTensor& a, const IntTensor& b) { return lt(a, b); }
IntTensor operator<(const IntTensor& a, int64_t b) { return lt(a, b); }
IntTensor operator<=(const IntTensor& a, const IntTensor& b) { return le(a, b); }
IntTensor operator<=(const IntTensor& a, int64_t b) { return le(a, b); }
IntTensor operator>(const IntTensor& a, const IntTensor& b) { return gt(a, b); }
IntTensor operator>(const IntTensor& a, int64_t b) { return gt(a, b); }
IntTensor operator>=(const IntTensor& a, const IntTensor& b) { return ge(a, b); }
IntTensor operator>=(const IntTensor& a, int64_t b) { return ge(a, b); }
IntTensor operator==(const IntTensor& a, const IntTensor& b) { return eq(a, b); }
IntTensor operator==(const IntTensor& a, int64_t b) { return eq(a, b); }
IntTensor operator!=(const IntTensor& a, const IntTensor& b) { return ne(a, b); }
IntTensor operator!=(const IntTensor& a, int64_t b) { return ne(a, b); }

// --- where ----------------------------------------------------------------------

// y = a where mask ≠ 0, else b          (mask, a, b broadcast to y's shape)
// da = where(mask, dout, 0)      db = where(mask, 0, dout)      (each summed to its input's shape)
Tensor where(const IntTensor& mask, const Tensor& a, const Tensor& b) {
  if (!mask.defined() || !a.defined() || !b.defined())
    fail("where: undefined {}", !mask.defined() ? "mask" : !a.defined() ? "a" : "b");
  const Shape& ms = mask.shape();
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  Shape shape;
  try {
    shape = broadcast_shapes(broadcast_shapes(ms, as, "where"), bs, "where");
  } catch (const Error&) {
    fail("where: mask {}, a {} and b {} do not broadcast to one shape", ms, as, bs);
  }
  Tensor out = Tensor::empty(shape, "where");
  const int64_t* m = mask.data();
  const float* pa = a.data();
  const float* pb = b.data();
  float* po = out.data();
  const auto walk = detail::broadcast_walk(shape, ms, as, bs);
  const int64_t n = walk.row_length(), sm = walk.row_step(0), sa = walk.row_step(1), sb = walk.row_step(2);
  walk.for_each_row([&](int64_t o, const auto& at) {
    for (int64_t i = 0; i < n; ++i) po[o + i] = m[at[0] + i * sm] != 0 ? pa[at[1] + i * sa] : pb[at[2] + i * sb];
  });
  // NOTE: picking with where, not multiplying by the mask: dout · 0 would
  // turn an infinite or NaN gradient of the other branch into NaN.
  record(out, "WhereBackward", {a, b}, /*saved=*/{mask},
         [da = detail::OperandGrad(a, out), db = detail::OperandGrad(b, out)](
             const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           return {da.needed() ? da.of(where(saved.int_tensor(0), dout, 0.0f)) : Tensor(),
                   db.needed() ? db.of(where(saved.int_tensor(0), 0.0f, dout)) : Tensor()};
         });
  return out;
}

Tensor where(const IntTensor& mask, const Tensor& a, float b) { return where(mask, a, scalar(b)); }
Tensor where(const IntTensor& mask, float a, const Tensor& b) { return where(mask, scalar(a), b); }

// --- sequence_mask ----------------------------------------------------------------

// d2l's sequence_mask, with where in place of writing into X:
//   mask = arange(S)[None, :] < valid_len[:, None]      (B, S): 1 on the steps kept
//   X[~mask] = value
Tensor sequence_mask(const Tensor& X, const IntTensor& valid_len, float value) {
  if (!X.defined() || !valid_len.defined()) fail("sequence_mask: undefined {}", !X.defined() ? "X" : "valid_len");
  if (X.dim() < 2) fail("sequence_mask: X {} must have at least 2 dims (B, S, ...)", X.shape());
  const int64_t B = X.size(0), S = X.size(1);
  if (valid_len.dim() != 1 || valid_len.size(0) != B)
    fail("sequence_mask: valid_len {} does not fit X {}: expected ({})", valid_len.shape(), X.shape(), B);
  for (int64_t b = 0; b < B; ++b)
    if (valid_len.data()[b] < 0) fail("sequence_mask: valid_len[{}] = {} is negative", b, valid_len.data()[b]);

  IntTensor keep = arange_int(0, S) < valid_len.reshape({B, 1});  // (S) < (B, 1) -> (B, S)
  // (B, S) -> (B, S, 1, …): one mask entry covers a whole feature vector of X.
  std::vector<int64_t> dims(static_cast<size_t>(X.dim()), 1);
  dims[0] = B;
  dims[1] = S;
  return where(keep.reshape(Shape(dims)), X, value);  // (B, S, …)
}

// --- as methods (tensor.hpp): x.lt(y) is lt(x, y) --------------------------------

IntTensor Tensor::lt(const Tensor& other) const { return qkv::lt(*this, other); }
IntTensor Tensor::lt(float other) const { return qkv::lt(*this, other); }
IntTensor Tensor::le(const Tensor& other) const { return qkv::le(*this, other); }
IntTensor Tensor::le(float other) const { return qkv::le(*this, other); }
IntTensor Tensor::gt(const Tensor& other) const { return qkv::gt(*this, other); }
IntTensor Tensor::gt(float other) const { return qkv::gt(*this, other); }
IntTensor Tensor::ge(const Tensor& other) const { return qkv::ge(*this, other); }
IntTensor Tensor::ge(float other) const { return qkv::ge(*this, other); }
IntTensor Tensor::eq(const Tensor& other) const { return qkv::eq(*this, other); }
IntTensor Tensor::eq(float other) const { return qkv::eq(*this, other); }
IntTensor Tensor::ne(const Tensor& other) const { return qkv::ne(*this, other); }
IntTensor Tensor::ne(float other) const { return qkv::ne(*this, other); }

IntTensor IntTensor::lt(const IntTensor& other) const { return qkv::lt(*this, other); }
IntTensor IntTensor::lt(int64_t other) const { return qkv::lt(*this, other); }
IntTensor IntTensor::le(const IntTensor& other) const { return qkv::le(*this, other); }
IntTensor IntTensor::le(int64_t other) const { return qkv::le(*this, other); }
IntTensor IntTensor::gt(const IntTensor& other) const { return qkv::gt(*this, other); }
IntTensor IntTensor::gt(int64_t other) const { return qkv::gt(*this, other); }
IntTensor IntTensor::ge(const IntTensor& other) const { return qkv::ge(*this, other); }
IntTensor IntTensor::ge(int64_t other) const { return qkv::ge(*this, other); }
IntTensor IntTensor::eq(const IntTensor& other) const { return qkv::eq(*this, other); }
IntTensor IntTensor::eq(int64_t other) const { return qkv::eq(*this, other); }
IntTensor IntTensor::ne(const IntTensor& other) const { return qkv::ne(*this, other); }
IntTensor IntTensor::ne(int64_t other) const { return qkv::ne(*this, other); }

}  // namespace qkv
