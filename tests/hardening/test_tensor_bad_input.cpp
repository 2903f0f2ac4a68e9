// Bad and extreme input for the Tensor methods (core/tensor.hpp): each is a
// one-line call of the op of the same name, so these rows check that the
// method reaches the op's checks, with the op's name in the message, for
// dims, indices, steps and lengths out of range or at the ends of int64,
// undefined, 0-d and empty tensors; and the autograd methods (set_grad,
// requires_grad_, backward) with gradients of the wrong shape.
//
// Expected behaviour comes from PyTorch ("Dimension out of range (expected to
// be in range of [-2, 1], but got 2)", "split_size can only be 0 if dimension
// size is 0", "slice step must be positive").
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include "hardening/bad_input.hpp"

using namespace qkv;
using qkv::test::BadInput;
using qkv::test::check_bad_inputs;
using namespace qkv::test::extremes;

TEST_CASE("hardening/tensor: the methods' dims, indices, steps and lengths") {
  const Tensor x = ones({2, 3});
  check_bad_inputs({
      {"Tensor::sum(dim 2) of a 2-d tensor", [=] { x.sum(2); },
       "sum: dim 2 out of range for a 2-d tensor (expected -2 … 1)"},
      {"Tensor::mean(dim INT64_MIN)", [=] { x.mean(kMin); }, "mean: dim -9223372036854775808 out of range"},
      {"Tensor::max(dim -3)", [=] { x.max(-3); }, "max: dim -3 out of range"},
      {"Tensor::argmax(dim 2)", [=] { x.argmax(2); }, "argmax: dim 2 out of range"},
      {"Tensor::max() of an empty tensor",
       [] {
         zeros({0, 3}).max();
       },
       "max: (0, 3) has no elements: nothing to reduce"},
      {"Tensor::argmin() of an empty tensor", [] { zeros({0}).argmin(); }, "argmin: (0) has no elements"},
      {"Tensor::max(dim 0) over a size-0 dim",
       [] {
         zeros({0, 3}).max(0);
       },
       "max: dim 0 of (0, 3) has size 0: nothing to reduce"},
      {"Tensor::softmax(dim 2)", [=] { x.softmax(2); }, "softmax: dim 2 out of range"},
      {"Tensor::log_softmax of an undefined tensor", [] { Tensor().log_softmax(0); },
       "log_softmax: x is an undefined tensor"},
      {"Tensor::transpose(0, 2)", [=] { x.transpose(0, 2); }, "transpose: dim 2 out of range"},
      {"Tensor::transpose(INT64_MAX, 0)", [=] { x.transpose(kMax, 0); },
       "transpose: dim 9223372036854775807 out of range"},
      {"Tensor::permute: a dim twice",
       [=] {
         x.permute({0, 0});
       },
       "permute: dim 0 appears twice"},
      {"Tensor::permute: too few dims", [=] { x.permute({0}); },
       "permute: 1 dims given for a 2-d tensor of shape (2, 3)"},
      {"Tensor::squeeze(dim 5)", [=] { x.squeeze(5); }, "squeeze: dim 5 out of range"},
      {"Tensor::unsqueeze(dim 4)", [=] { x.unsqueeze(4); },
       "unsqueeze: dim 4 out of range for a 3-d tensor (expected -3 … 2)"},
      {"Tensor::unsqueeze(dim INT64_MIN)", [=] { x.unsqueeze(kMin); },
       "unsqueeze: dim -9223372036854775808 out of range"},
      {"Tensor::flatten(start 1, end 0)", [=] { x.flatten(1, 0); },
       "flatten: start_dim 1 comes after end_dim 0 for (2, 3)"},
      {"Tensor::reshape: numel differs",
       [=] {
         x.reshape({4, 2});
       },
       "reshape: cannot reshape (2, 3) (6 elements) to (4, 2) (8 elements)"},
      {"Tensor::reshape: two -1",
       [=] {
         x.reshape({-1, -1});
       },
       "reshape: only one size may be -1, got (-1, -1)"},
      {"Tensor::view: a size -2",
       [=] {
         x.view({-2, -3});
       },
       "view: invalid size -2 in (-2, -3)"},
      {"Tensor::expand: a dim that is not 1",
       [=] {
         x.expand({4, 3});
       },
       "expand: cannot expand (2, 3) to (4, 3)"},
      {"Tensor::expand: fewer dims", [=] { x.expand({3}); }, "the target has fewer dims"},
      {"Tensor::repeat: a negative count",
       [=] {
         x.repeat({1, -1});
       },
       "repeat: negative repeat count -1 for dim 1"},
      {"Tensor::repeat: fewer counts than dims", [=] { x.repeat({2}); },
       "repeat: 1 repeats for a 2-d tensor of shape (2, 3)"},
      {"Tensor::repeat: a count that overflows the size",
       [=] {
         x.repeat({kMax, 2});
       },
       "repeat: 9223372036854775807 * 2 overflows int64"},
      {"Tensor::repeat_interleave: negative repeats", [=] { x.repeat_interleave(-1, 0); },
       "repeat_interleave: repeats must be at least 0, got -1"},
      {"Tensor::repeat_interleave: negative repeats, no dim", [=] { x.repeat_interleave(-1); },
       "repeat_interleave: repeats must be at least 0, got -1"},
      {"Tensor::repeat_interleave: dim out of range", [=] { x.repeat_interleave(2, -3); },
       "repeat_interleave: dim -3 out of range for a 2-d tensor"},
      {"IntTensor::repeat_interleave: negative repeats",
       [] {
         int_tensor({1, 2}).repeat_interleave(-1, 0);
       },
       "repeat_interleave: repeats must be at least 0, got -1"},
      {"IntTensor::repeat_interleave: dim out of range",
       [] {
         int_tensor({1, 2}).repeat_interleave(2, 1);
       },
       "repeat_interleave: dim 1 out of range for a 1-d tensor"},
      {"Tensor::split: size 0", [=] { x.split(int64_t{0}, 1); },
       "split: split_size 0 for dim 1 of size 3: must be at least 1"},
      {"Tensor::split: sizes that do not add up",
       [=] {
         x.split(std::vector<int64_t>{1, 1}, 1);
       },
       "split: sizes add up to 2, but dim 1 of (2, 3) has size 3"},
      {"Tensor::split: a negative size",
       [=] {
         x.split(std::vector<int64_t>{4, -1}, 1);
       },
       "split: negative size -1 in the sizes"},
      {"Tensor::chunk: 0 chunks", [=] { x.chunk(0, 1); }, "chunk: chunks must be at least 1, got 0"},
      {"Tensor::chunk: dim 2", [=] { x.chunk(2, 2); }, "chunk: dim 2 out of range"},
      {"Tensor::narrow: start past the end", [=] { x.narrow(1, 4, 1); },
       "narrow: start 4 out of range for dim 1 of size 3"},
      {"Tensor::narrow: a negative length", [=] { x.narrow(1, 0, -1); }, "narrow: negative length -1"},
      {"Tensor::narrow: start + length overflows", [=] { x.narrow(1, 1, kMax); },
       "narrow: start 1 + length 9223372036854775807 exceeds size 3 of dim 1"},
      {"Tensor::slice: step 0", [=] { x.slice(1, 0, 3, 0); }, "slice: step must be at least 1, got 0"},
      {"Tensor::slice: a negative step", [=] { x.slice(1, 0, 3, -1); }, "slice: step must be at least 1, got -1"},
      {"Tensor::slice: dim 3", [=] { x.slice(3, 0, 1); }, "slice: dim 3 out of range"},
      {"Tensor::index_select: index 3 of 3",
       [=] {
         x.index_select(1, int_tensor({0, 3}));
       },
       "index_select: index 3 out of range for dim 1 of size 3"},
      {"Tensor::index_select: index -4", [=] { x.index_select(1, int_tensor({-4})); },
       "index_select: index -4 out of range"},
      {"Tensor::index_select: a 2-d index",
       [=] {
         x.index_select(1, int_tensor({0, 1}, {1, 2}));
       },
       "index_select: index must be 1-d, got shape (1, 2)"},
      {"Tensor::index_select: an undefined index", [=] { x.index_select(1, IntTensor()); },
       "index_select: index is an undefined tensor"},
      {"Tensor::masked_fill: a mask of another shape",
       [=] {
         x.masked_fill(IntTensor::empty({3, 2}), 0);
       },
       "masked_fill: shapes (2, 3) and (3, 2) do not broadcast"},
      {"Tensor::matmul: 0-d", [=] { x.matmul(scalar_tensor(2)); },
       "matmul: (2, 3) x (): both operands need at least 1 dim"},
      {"Tensor::matmul: inner sizes differ",
       [=] {
         x.matmul(ones({2, 3}));
       },
       "matmul: (2, 3) x (2, 3): inner sizes 3 and 2 differ"},
      {"Tensor::bmm: 2-d",
       [=] {
         x.bmm(ones({3, 2}));
       },
       "bmm: (2, 3) x (3, 2): both operands must be 3-d"},
      {"Tensor::add: shapes that do not broadcast", [=] { x.add(ones({2})); },
       "add: shapes (2, 3) and (2) do not broadcast"},
      {"Tensor::lt: shapes that do not broadcast", [=] { x.lt(ones({4})); },
       "lt: shapes (2, 3) and (4) do not broadcast"},
      {"Tensor::mul: an undefined tensor", [=] { x.mul(Tensor()); }, "mul: b is an undefined tensor"},
  });
}

TEST_CASE("hardening/tensor: the autograd methods") {
  check_bad_inputs({
      {"Tensor::set_grad: a gradient of another shape",
       [] {
         Tensor w = ones({2, 3}).requires_grad_();
         w.set_grad(ones({3, 2}));
       },
       "set_grad: gradient of shape (3, 2) for a tensor of shape (2, 3)"},
      {"Tensor::requires_grad_ on a tensor an op made",
       [] {
         Tensor w = ones({2}).requires_grad_();
         (w * 2.0f).requires_grad_(false);
       },
       "requires_grad_: only leaf tensors can change requires_grad (this one came from MulBackward)"},
      {"Tensor::backward of a tensor of 2 elements without a gradient",
       [] {
         Tensor w = ones({2}).requires_grad_();
         (w * 2.0f).backward();
       },
       "backward: a gradient must be given for a non-scalar output of shape (2)"},
      {"Tensor::backward with a gradient of another shape",
       [] {
         Tensor w = ones({2}).requires_grad_();
         (w * 2.0f).backward(ones({3}));
       },
       "backward: gradient of shape (3) for an output of shape (2)"},
      {"Tensor::backward of a tensor that does not require grad", [] { ones({1}).backward(); },
       "backward: tensor of shape (1) does not require grad"},
      {"Tensor::at: an index of the wrong count",
       [] {
         ones({2, 3}).at({1});
       },
       "at: 1 indices for a tensor of shape (2, 3)"},
      {"Tensor::at: an index at INT64_MAX",
       [] {
         ones({2, 3}).at({0, kMax});
       },
       "at: index 9223372036854775807 out of range for dim 1 of size 3"},
  });
}

// Every method on an undefined tensor: a qkv::Error, never a null dereference.
TEST_CASE("hardening/tensor: every method of an undefined Tensor or IntTensor") {
  const Tensor u;
  const Tensor x = ones({1});
  check_bad_inputs({
      {"Tensor::abs of an undefined tensor", [=] { (void)u.abs(); }, "undefined"},
      {"Tensor::add of an undefined tensor", [=] { (void)u.add(1.0f); }, "undefined"},
      {"Tensor::sub of an undefined tensor", [=] { (void)u.sub(x); }, "undefined"},
      {"Tensor::mul of an undefined tensor", [=] { (void)u.mul(2.0f); }, "undefined"},
      {"Tensor::div of an undefined tensor", [=] { (void)u.div(x); }, "undefined"},
      {"Tensor::pow of an undefined tensor", [=] { (void)u.pow(2.0f); }, "undefined"},
      {"Tensor::neg of an undefined tensor", [=] { (void)u.neg(); }, "undefined"},
      {"Tensor::exp of an undefined tensor", [=] { (void)u.exp(); }, "undefined"},
      {"Tensor::log of an undefined tensor", [=] { (void)u.log(); }, "undefined"},
      {"Tensor::sqrt of an undefined tensor", [=] { (void)u.sqrt(); }, "undefined"},
      {"Tensor::tanh of an undefined tensor", [=] { (void)u.tanh(); }, "undefined"},
      {"Tensor::sigmoid of an undefined tensor", [=] { (void)u.sigmoid(); }, "undefined"},
      {"Tensor::relu of an undefined tensor", [=] { (void)u.relu(); }, "undefined"},
      {"Tensor::masked_fill of an undefined tensor", [=] { (void)u.masked_fill(int_tensor({1}), 0); }, "undefined"},
      {"Tensor::sum of an undefined tensor", [=] { (void)u.sum(); }, "undefined"},
      {"Tensor::mean of an undefined tensor", [=] { (void)u.mean(0); }, "undefined"},
      {"Tensor::max of an undefined tensor", [=] { (void)u.max(); }, "undefined"},
      {"Tensor::min of an undefined tensor", [=] { (void)u.min(0); }, "undefined"},
      {"Tensor::argmax of an undefined tensor", [=] { (void)u.argmax(); }, "undefined"},
      {"Tensor::argmin of an undefined tensor", [=] { (void)u.argmin(0); }, "undefined"},
      {"Tensor::softmax of an undefined tensor", [=] { (void)u.softmax(0); }, "undefined"},
      {"Tensor::matmul of an undefined tensor", [=] { (void)u.matmul(x); }, "undefined"},
      {"Tensor::bmm of an undefined tensor", [=] { (void)u.bmm(x); }, "undefined"},
      {"Tensor::reshape of an undefined tensor", [=] { (void)u.reshape({1}); }, "undefined"},
      {"Tensor::view of an undefined tensor", [=] { (void)u.view({1}); }, "undefined"},
      {"Tensor::flatten of an undefined tensor", [=] { (void)u.flatten(); }, "undefined"},
      {"Tensor::transpose of an undefined tensor", [=] { (void)u.transpose(0, 1); }, "undefined"},
      {"Tensor::permute of an undefined tensor", [=] { (void)u.permute({0}); }, "undefined"},
      {"Tensor::squeeze of an undefined tensor", [=] { (void)u.squeeze(); }, "undefined"},
      {"Tensor::unsqueeze of an undefined tensor", [=] { (void)u.unsqueeze(0); }, "undefined"},
      {"Tensor::expand of an undefined tensor", [=] { (void)u.expand({2}); }, "undefined"},
      {"Tensor::repeat of an undefined tensor", [=] { (void)u.repeat({2}); }, "undefined"},
      {"Tensor::repeat_interleave of an undefined tensor", [=] { (void)u.repeat_interleave(2, 0); }, "undefined"},
      {"Tensor::repeat_interleave (no dim) of an undefined tensor", [=] { (void)u.repeat_interleave(2); }, "undefined"},
      {"Tensor::split of an undefined tensor", [=] { (void)u.split(int64_t{1}); }, "undefined"},
      {"Tensor::chunk of an undefined tensor", [=] { (void)u.chunk(2); }, "undefined"},
      {"Tensor::narrow of an undefined tensor", [=] { (void)u.narrow(0, 0, 1); }, "undefined"},
      {"Tensor::slice of an undefined tensor", [=] { (void)u.slice(0, 0, 1); }, "undefined"},
      {"Tensor::index_select of an undefined tensor", [=] { (void)u.index_select(0, int_tensor({0})); }, "undefined"},
      {"Tensor::lt of an undefined tensor", [=] { (void)u.lt(1.0f); }, "undefined"},
      {"Tensor::le of an undefined tensor", [=] { (void)u.le(x); }, "undefined"},
      {"Tensor::gt of an undefined tensor", [=] { (void)u.gt(1.0f); }, "undefined"},
      {"Tensor::ge of an undefined tensor", [=] { (void)u.ge(x); }, "undefined"},
      {"Tensor::eq of an undefined tensor", [=] { (void)u.eq(1.0f); }, "undefined"},
      {"Tensor::ne of an undefined tensor", [=] { (void)u.ne(x); }, "undefined"},
      {"Tensor::numel of an undefined tensor", [=] { (void)u.numel(); }, "undefined"},
      {"Tensor::dim of an undefined tensor", [=] { (void)u.dim(); }, "undefined"},
      {"Tensor::size of an undefined tensor", [=] { (void)u.size(0); }, "undefined"},
      {"Tensor::to_vector of an undefined tensor", [=] { (void)u.to_vector(); }, "undefined"},
      {"Tensor::at of an undefined tensor", [=] { (void)u.at({0}); }, "undefined"},
      {"Tensor::grad of an undefined tensor", [=] { (void)u.grad(); }, "undefined"},
      {"Tensor::set_grad of an undefined tensor", [] { Tensor().set_grad(ones({1})); }, "undefined"},
      {"Tensor::grad_fn of an undefined tensor", [=] { (void)u.grad_fn(); }, "undefined"},
      {"Tensor::requires_grad_ of an undefined tensor", [] { Tensor().requires_grad_(); }, "undefined"},
      {"Tensor::zero_grad of an undefined tensor", [] { Tensor().zero_grad(); }, "undefined"},
  });
}

TEST_CASE("hardening/tensor: every comparison and accessor of an undefined IntTensor") {
  const IntTensor u;
  const IntTensor x = int_tensor({1});
  check_bad_inputs({
      {"IntTensor::lt of an undefined IntTensor", [=] { (void)u.lt(1); }, "undefined"},
      {"IntTensor::repeat_interleave of an undefined IntTensor", [=] { (void)u.repeat_interleave(2, 0); }, "undefined"},
      {"IntTensor::repeat_interleave (no dim) of an undefined IntTensor", [=] { (void)u.repeat_interleave(2); },
       "undefined"},
      {"IntTensor::le of an undefined IntTensor", [=] { (void)u.le(x); }, "undefined"},
      {"IntTensor::gt of an undefined IntTensor", [=] { (void)u.gt(int64_t{1}); }, "undefined"},
      {"IntTensor::ge of an undefined IntTensor", [=] { (void)u.ge(x); }, "undefined"},
      {"IntTensor::eq of an undefined IntTensor", [=] { (void)u.eq(1); }, "undefined"},
      {"IntTensor::ne of an undefined IntTensor", [=] { (void)u.ne(x); }, "undefined"},
      {"IntTensor::dim of an undefined IntTensor", [=] { (void)u.dim(); }, "undefined"},
      {"IntTensor::size of an undefined IntTensor", [=] { (void)u.size(0); }, "undefined"},
      {"IntTensor::item of an undefined IntTensor", [=] { (void)u.item(); }, "undefined"},
      {"IntTensor::lt: shapes that do not broadcast",
       [] {
         int_tensor({1, 2}).lt(int_tensor({1, 2, 3}));
       },
       "do not broadcast"},
  });
}
