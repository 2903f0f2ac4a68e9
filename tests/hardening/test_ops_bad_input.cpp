// Bad and extreme input for the ops of include/qkv/ops/: undefined tensors,
// wrong ranks and sizes, 0-d and empty tensors, indices, dims, steps and
// lengths at the ends of int64, NaN where it matters. Every row must end in
// a qkv::Error naming the op and what was wrong; the last cases are the
// extremes that are valid input, checked against Python's and PyTorch's
// answers.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "hardening/bad_input.hpp"

using namespace qkv;
using qkv::test::BadInput;
using qkv::test::check_bad_inputs_naming_op;
using namespace qkv::test::extremes;

namespace {

Tensor x4() { return arange(4); }               // (4)
Tensor x23() { return ones({2, 3}); }           // (2, 3)
Tensor w() { return ones({5, 3}); }             // (V, D) = (5, 3)
IntTensor ids() { return int_tensor({0, 4}); }  // (2)
}  // namespace

TEST_CASE("hardening/ops: elementwise, compare and broadcast") {
  check_bad_inputs_naming_op({
      {"add: undefined a", [] { add(Tensor(), x4()); }, "add: a is an undefined tensor"},
      {"add: undefined b", [] { add(x4(), Tensor()); }, "add: b is an undefined tensor"},
      {"add: undefined tensor and a float", [] { add(Tensor(), 1.0f); }, "add: a is an undefined tensor"},
      {"sub: float and an undefined tensor", [] { sub(1.0f, Tensor()); }, "sub: b is an undefined tensor"},
      {"mul: operator* on an undefined tensor", [] { Tensor() * 2.0f; }, "mul: a is an undefined tensor"},
      {"div: shapes that do not broadcast", [] { div(x23(), ones({4})); },
       "div: shapes (2, 3) and (4) do not broadcast"},
      {"pow: undefined exponent", [] { pow(x4(), Tensor()); }, "pow: b is an undefined tensor"},
      {"pow: undefined base, float exponent", [] { pow(Tensor(), 3.0f); }, "pow: a is an undefined tensor"},
      {"exp: undefined", [] { exp(Tensor()); }, "exp: x is an undefined tensor"},
      {"relu: undefined", [] { relu(Tensor()); }, "relu: x is an undefined tensor"},
      {"neg: undefined", [] { neg(Tensor()); }, "neg: x is an undefined tensor"},
      {"sqrt: undefined", [] { sqrt(Tensor()); }, "sqrt: x is an undefined tensor"},
      {"abs: undefined", [] { abs(Tensor()); }, "abs: x is an undefined tensor"},
      {"tanh: undefined", [] { tanh(Tensor()); }, "tanh: x is an undefined tensor"},
      {"sigmoid: undefined", [] { sigmoid(Tensor()); }, "sigmoid: x is an undefined tensor"},
      {"gelu: undefined", [] { gelu(Tensor()); }, "gelu: x is an undefined tensor"},
      {"masked_fill: undefined mask", [] { masked_fill(x4(), IntTensor(), 0); }, "masked_fill: mask is an undefined"},
      {"masked_fill: undefined x", [] { masked_fill(Tensor(), int_tensor({1}), 0); }, "masked_fill: x is an undefined"},
      {"masked_fill: a mask larger than x",
       [] {
         masked_fill(x4(), IntTensor::empty({2, 4}), 0);
       },
       "masked_fill: mask of shape (2, 4) does not broadcast to x's shape (4)"},
      {"lt: undefined a", [] { lt(Tensor(), x4()); }, "lt: undefined a"},
      {"eq: undefined IntTensor", [] { eq(IntTensor(), int64_t{1}); }, "eq: undefined a"},
      {"where: undefined mask", [] { where(IntTensor(), x4(), x4()); }, "where: undefined mask"},
      {"where: shapes that do not broadcast", [] { where(IntTensor::empty({3}), x4(), x4()); }, "do not broadcast"},
      {"sequence_mask: negative valid_len",
       [] {
         sequence_mask(x23(), int_tensor({1, -1}));
       },
       "sequence_mask: valid_len[1] = -1 is negative"},
      {"sequence_mask: undefined valid_len", [] { sequence_mask(x23(), IntTensor()); }, "undefined valid_len"},
      {"sum_to: undefined", [] { sum_to(Tensor(), Shape{1}); }, "sum_to: x is an undefined tensor"},
      {"sum_to: a shape x does not broadcast from", [] { sum_to(x23(), Shape{4}); }, "do not broadcast"},
  });
}

TEST_CASE("hardening/ops: reductions and softmax") {
  check_bad_inputs_naming_op({
      {"sum: undefined", [] { sum(Tensor()); }, "sum: x is an undefined tensor"},
      {"sum along a dim: undefined", [] { sum(Tensor(), 0); }, "sum: x is an undefined tensor"},
      {"sum: dim out of range", [] { sum(x23(), 2); }, "sum: dim 2 out of range for a 2-d tensor"},
      {"sum: dim INT64_MIN", [] { sum(x23(), kMin); }, "sum: dim -9223372036854775808 out of range"},
      {"mean: undefined", [] { mean(Tensor(), 0); }, "mean: x is an undefined tensor"},
      {"max: undefined", [] { max(Tensor()); }, "max: x is an undefined tensor"},
      {"min along a dim: undefined", [] { min(Tensor(), 0); }, "min: x is an undefined tensor"},
      {"max: empty", [] { max(zeros({0})); }, "max: (0) has no elements: nothing to reduce"},
      {"argmax: a size-0 dim",
       [] {
         argmax(zeros({2, 0}), 1);
       },
       "argmax: dim 1 of (2, 0) has size 0"},
      {"argmin: undefined", [] { argmin(Tensor()); }, "argmin: x is an undefined tensor"},
      {"softmax: undefined", [] { softmax(Tensor(), 0); }, "softmax: x is an undefined tensor"},
      {"log_softmax: dim out of range", [] { log_softmax(x23(), -3); }, "log_softmax: dim -3 out of range"},
      {"masked_softmax: undefined x", [] { masked_softmax(Tensor(), int_tensor({1})); }, "masked_softmax: x is an"},
      {"masked_softmax: 2-d x",
       [] {
         masked_softmax(x23(), int_tensor({1, 1}));
       },
       "masked_softmax: x must be 3-D"},
      {"masked_softmax: negative length",
       [] {
         masked_softmax(ones({1, 2, 3}), int_tensor({-1}));
       },
       "masked_softmax: valid_lens[0] is -1"},
  });
}

TEST_CASE("hardening/ops: linalg and functional") {
  check_bad_inputs_naming_op({
      {"matmul: undefined a", [] { matmul(Tensor(), x4()); }, "matmul: a is an undefined tensor"},
      {"matmul: undefined b", [] { matmul(x4(), Tensor()); }, "matmul: b is an undefined tensor"},
      {"matmul: a 0-d operand", [] { matmul(scalar_tensor(1), x4()); }, "both operands need at least 1 dim"},
      {"matmul: inner sizes differ", [] { matmul(x23(), x23()); }, "matmul: (2, 3) x (2, 3): inner sizes 3 and 2"},
      {"bmm: 2-d operands", [] { bmm(x23(), x23()); }, "bmm: (2, 3) x (2, 3): both operands must be 3-d"},
      {"bmm: undefined", [] { bmm(Tensor(), x23()); }, "bmm: a is an undefined tensor"},
      {"matmul: transpose_b of a 1-d operand", [] { matmul(x23(), ones({3}), {.transpose_b = true}); },
       "matmul: (2, 3) x (3): transpose_b needs an operand with at least 2 dims"},
      {"matmul: inner sizes differ once b is transposed",
       [] {
         matmul(x23(), ones({2, 4}), {.transpose_b = true});
       },
       "matmul: (2, 3) x (2, 4)ᵀ: inner sizes 3 and 4 differ"},
      {"bmm: transpose_a with batch sizes that differ",
       [] {
         bmm(ones({2, 3, 4}), ones({3, 3, 4}), {.transpose_a = true});
       },
       "bmm: (2, 3, 4)ᵀ x (3, 3, 4): batch sizes 2 and 3 differ"},
      {"fused_gru_cell: undefined h",
       [] {
         fused_gru_cell(ones({2, 9}), ones({2, 9}), Tensor());
       },
       "fused_gru_cell: h is an undefined tensor"},
      {"fused_gru_cell: 1-d xw",
       [] {
         fused_gru_cell(ones({9}), ones({2, 9}), ones({2, 3}));
       },
       "fused_gru_cell: xw must be 2-d, got shape (9)"},
      {"fused_gru_cell: gates that are not 3 H wide",
       [] {
         fused_gru_cell(x23(), x23(), ones({2, 3}));
       },
       "fused_gru_cell: xw (2, 3) and hw (2, 3) should both be (2, 9) for h (2, 3)"},
      {"set_num_threads: 0", [] { set_num_threads(0); }, "set_num_threads: 0 threads: expected a count from 1 to 1024"},
      {"set_num_threads: too many", [] { set_num_threads(1025); }, "set_num_threads: 1025 threads"},
      {"linear: undefined x", [] { linear(Tensor(), w(), Tensor()); }, "linear: x is an undefined tensor"},
      {"linear: undefined weight", [] { linear(x23(), Tensor(), Tensor()); }, "linear: weight is an undefined"},
      {"dropout: undefined", [] { dropout(Tensor(), 0.5f, true); }, "dropout: x is an undefined tensor"},
      {"dropout: p NaN", [] { dropout(x4(), kNaN, true); }, "dropout: probability has to be between 0 and 1"},
      {"dropout: p above 1", [] { dropout(x4(), 1.5f, true); }, "but got 1.5"},
      {"layer_norm: undefined", [] { layer_norm(Tensor(), Shape{3}); }, "layer_norm: x is an undefined tensor"},
      {"layer_norm: shape mismatch", [] { layer_norm(x23(), Shape{2}); }, "does not match the trailing dims"},
      {"mse_loss: undefined target", [] { mse_loss(x4(), Tensor()); }, "mse_loss: target is an undefined tensor"},
      {"cosine_similarity: undefined", [] { cosine_similarity(Tensor(), x23()); }, "cosine_similarity: x1 is an"},
      {"normalize: p NaN", [] { normalize(x23(), kNaN); }, "normalize: p must be positive"},
      {"normalize: undefined", [] { normalize(Tensor()); }, "normalize: x is an undefined tensor"},
      // cross_entropy validates its own arguments; an undefined target at least
      // ends in an Error instead of a read through a null pointer.
      {"cross_entropy: undefined target",
       [] {
         cross_entropy(ones({2, 3}), IntTensor());
       },
       "undefined"},
      {"cross_entropy: undefined logits", [] { cross_entropy(Tensor(), int_tensor({0})); }, "undefined"},
  });
}

TEST_CASE("hardening/ops: shape ops") {
  check_bad_inputs_naming_op({
      // views
      {"reshape: undefined", [] { reshape(Tensor(), {1}); }, "reshape: x is an undefined tensor"},
      {"reshape: sizes whose product overflows, from an empty tensor",
       [] {
         reshape(zeros({0}), {k2to62, 4});
       },
       "reshape: 4611686018427387904 * 4 overflows int64"},
      {"reshape: overflow next to a size-0 dim",
       [] {
         reshape(zeros({0}), {0, k2to62, 4});
       },
       "overflows int64"},
      {"reshape: -1 beside sizes that overflow",
       [] {
         reshape(zeros({0}), {-1, k2to62, 4});
       },
       "overflows int64"},
      {"reshape: negative sizes whose product matches",
       [] {
         reshape(x4(), {-2, -2});
       },
       "reshape: invalid size -2"},
      {"reshape: two -1",
       [] {
         reshape(x4(), {-1, -1});
       },
       "reshape: only one size may be -1"},
      {"view: numel differs", [] { view(x4(), {3}); }, "view: cannot reshape (4) (4 elements) to (3)"},
      {"flatten: undefined", [] { flatten(Tensor()); }, "flatten: x is an undefined tensor"},
      {"flatten: start after end",
       [] {
         flatten(ones({2, 3, 4}), 2, 1);
       },
       "flatten: start_dim 2 comes after end_dim 1"},
      {"squeeze: dim out of range", [] { squeeze(x23(), 2); }, "squeeze: dim 2 out of range"},
      {"unsqueeze: dim past ndim", [] { unsqueeze(x4(), 2); }, "unsqueeze: dim 2 out of range"},
      {"unsqueeze: undefined", [] { unsqueeze(Tensor(), 0); }, "unsqueeze: x is an undefined tensor"},
      // permute, transpose, expand, repeat
      {"permute: a dim twice",
       [] {
         permute(x23(), {0, 0});
       },
       "permute: dim 0 appears twice"},
      {"permute: too few dims", [] { permute(x23(), {0}); }, "permute: 1 dims given for a 2-d tensor"},
      {"permute: dim INT64_MAX",
       [] {
         permute(x23(), {0, kMax});
       },
       "permute: dim 9223372036854775807 out of range"},
      {"transpose: undefined", [] { transpose(Tensor(), 0, 1); }, "transpose: x is an undefined tensor"},
      {"transpose: dim out of range", [] { transpose(x23(), 0, 2); }, "transpose: dim 2 out of range"},
      {"expand: to sizes whose product overflows",
       [] {
         expand(ones({1}), {k2to62, 4});
       },
       "overflows int64"},
      {"expand: a negative size", [] { expand(ones({1}), {-2}); }, "expand: cannot expand (1) to (-2)"},
      {"expand: to fewer dims", [] { expand(x23(), {3}); }, "expand: cannot expand (2, 3) to (3)"},
      {"repeat: a count whose product with the size overflows", [] { repeat(ones({2}), {kMax}); },
       "repeat: 9223372036854775807 * 2 overflows int64"},
      {"repeat: more than can be addressed", [] { repeat(ones({2}), {int64_t{1} << 50}); }, "can be addressed"},
      {"repeat: negative count", [] { repeat(ones({2}), {-1}); }, "repeat: negative repeat count -1"},
      // repeat_interleave
      {"repeat_interleave: undefined", [] { repeat_interleave(Tensor(), 2, 0); },
       "repeat_interleave: x is an undefined tensor"},
      {"repeat_interleave: undefined, no dim", [] { repeat_interleave(Tensor(), 2); },
       "repeat_interleave: x is an undefined tensor"},
      {"repeat_interleave: undefined IntTensor", [] { repeat_interleave(IntTensor(), 2, 0); },
       "repeat_interleave: x is an undefined tensor"},
      {"repeat_interleave: negative repeats", [] { repeat_interleave(x23(), -1, 0); },
       "repeat_interleave: repeats must be at least 0, got -1"},
      {"repeat_interleave: negative repeats, no dim", [] { repeat_interleave(x23(), -3); },
       "repeat_interleave: repeats must be at least 0, got -3"},
      {"repeat_interleave: IntTensor, negative repeats", [] { repeat_interleave(ids(), -1, 0); },
       "repeat_interleave: repeats must be at least 0, got -1"},
      {"repeat_interleave: dim out of range", [] { repeat_interleave(x23(), 2, 2); },
       "repeat_interleave: dim 2 out of range for a 2-d tensor"},
      {"repeat_interleave: dim INT64_MIN", [] { repeat_interleave(x23(), 2, kMin); },
       "repeat_interleave: dim -9223372036854775808 out of range"},
      {"repeat_interleave: IntTensor, dim out of range", [] { repeat_interleave(ids(), 2, 1); },
       "repeat_interleave: dim 1 out of range for a 1-d tensor"},
      {"repeat_interleave: a dim of a 0-d tensor", [] { repeat_interleave(scalar_tensor(1), 2, 0); },
       "repeat_interleave: dim 0 given for a 0-d tensor"},
      {"repeat_interleave: repeats whose product with the size overflows", [] { repeat_interleave(x23(), kMax, 1); },
       "repeat_interleave: 3 * 9223372036854775807 overflows int64"},
      {"repeat_interleave: more than can be addressed", [] { repeat_interleave(x23(), int64_t{1} << 50, 0); },
       "can be addressed"},
      // cat, stack
      {"cat: an undefined tensor in the list",
       [] {
         cat({x4(), Tensor()});
       },
       "cat: a tensor in the list is an undefined"},
      {"cat: an empty list", [] { cat({}); }, "cat: expected a non-empty list of tensors"},
      {"cat: sizes along the dim that overflow",
       [] {
         cat({zeros({0, k2to62}), zeros({0, k2to62})}, 1);
       },
       "cat: 4611686018427387904 + 4611686018427387904 overflows int64"},
      {"cat: 0-d tensors",
       [] {
         cat({scalar_tensor(1), scalar_tensor(2)});
       },
       "cat: a 0-d tensor cannot be"},
      {"stack: an undefined tensor", [] { stack({Tensor()}); }, "stack: a tensor in the list is an undefined"},
      {"stack: different shapes",
       [] {
         stack({x4(), x23()});
       },
       "stack: tensor 1 has shape (2, 3)"},
      // split, chunk, narrow, slice
      {"split: sizes whose sum overflows",
       [] {
         split(x4(), std::vector<int64_t>{kMax, kMax});
       },
       "split: 9223372036854775807 + 9223372036854775807 overflows int64"},
      {"split: sizes that do not add up",
       [] {
         split(x4(), std::vector<int64_t>{1, 2});
       },
       "split: sizes add up to 3"},
      {"split: split_size 0", [] { split(x4(), int64_t{0}); }, "split: split_size 0 for dim 0 of size 4"},
      {"split: a 0-d tensor", [] { split(scalar_tensor(1), int64_t{1}); }, "split: cannot split a 0-d tensor"},
      {"split: undefined", [] { split(Tensor(), int64_t{1}); }, "split: x is an undefined tensor"},
      {"chunk: 0 chunks", [] { chunk(x4(), 0); }, "chunk: chunks must be at least 1, got 0"},
      {"chunk: INT64_MIN chunks", [] { chunk(x4(), kMin); }, "chunk: chunks must be at least 1"},
      {"narrow: start + length past int64", [] { narrow(ones({4}), 0, 1, kMax); },
       "narrow: start 1 + length 9223372036854775807 exceeds size 4 of dim 0"},
      {"narrow: start INT64_MIN", [] { narrow(ones({4}), 0, kMin, 1); }, "narrow: start -9223372036854775808 out of"},
      {"narrow: start INT64_MAX", [] { narrow(ones({4}), 0, kMax, 0); }, "out of range for dim 0 of size 4"},
      {"narrow: negative length", [] { narrow(ones({4}), 0, 0, -1); }, "narrow: negative length -1"},
      {"narrow: a 0-d tensor", [] { narrow(scalar_tensor(1), 0, 0, 1); }, "narrow: cannot narrow a 0-d tensor"},
      {"slice: step 0", [] { slice(x4(), 0, 0, 4, 0); }, "slice: step must be at least 1, got 0"},
      {"slice: step INT64_MIN", [] { slice(x4(), 0, 0, 4, kMin); }, "slice: step must be at least 1"},
      {"slice: a 0-d tensor", [] { slice(scalar_tensor(1), 0, 0, 1); }, "slice: cannot slice a 0-d tensor"},
      {"slice: undefined", [] { slice(Tensor(), 0, 0, 1); }, "slice: x is an undefined tensor"},
      // index_select, embedding
      {"index_select: undefined index", [] { index_select(x4(), 0, IntTensor()); },
       "index_select: index is an undefined tensor"},
      {"index_select: undefined x", [] { index_select(Tensor(), 0, ids()); }, "index_select: x is an undefined tensor"},
      {"index_select: index past the end", [] { index_select(x4(), 0, int_tensor({4})); },
       "index_select: index 4 out of range for dim 0 of size 4"},
      {"index_select: negative index", [] { index_select(x4(), 0, int_tensor({-1})); }, "index -1 out of range"},
      {"index_select: index INT64_MAX", [] { index_select(x4(), 0, int_tensor({kMax})); },
       "index 9223372036854775807 out of range"},
      {"index_select: a 2-d index",
       [] {
         index_select(x4(), 0, IntTensor::empty({1, 1}));
       },
       "index_select: index must be 1-d, got shape (1, 1)"},
      {"index_select: a 0-d x", [] { index_select(scalar_tensor(1), 0, int_tensor({0})); },
       "index_select: cannot index a 0-d tensor"},
      {"index_select: dim out of range", [] { index_select(x4(), 1, ids()); }, "index_select: dim 1 out of range"},
      {"embedding: undefined ids", [] { embedding(IntTensor(), w()); }, "embedding: ids is an undefined tensor"},
      {"embedding: undefined weight", [] { embedding(ids(), Tensor()); }, "embedding: weight is an undefined tensor"},
      {"embedding: id INT64_MIN", [] { embedding(int_tensor({kMin}), w()); },
       "embedding: index -9223372036854775808 out of range for a weight of 5 rows"},
      {"embedding: id V", [] { embedding(int_tensor({5}), w()); }, "embedding: index 5 out of range"},
      {"embedding: 1-d weight", [] { embedding(ids(), x4()); }, "embedding: weight must be 2-d (V, D), got shape (4)"},
  });
}

TEST_CASE("hardening/ops: extreme input that is valid gives Python's and PyTorch's answers") {
  SUBCASE("slice with a step past the end takes only the start, as Python's x[1:3:huge] = [1.]") {
    CHECK(slice(arange(4), 0, 1, 3, kMax).to_vector() == std::vector<float>{1});
    CHECK(slice(arange(4), 0, 0, 4, k2to62).to_vector() == std::vector<float>{0});
  }
  SUBCASE("slice bounds at the ends of int64 clamp to the whole dim, as Python's x[-huge:huge]") {
    CHECK(slice(arange(4), 0, kMin, kMax).to_vector() == std::vector<float>{0, 1, 2, 3});
    CHECK(slice(arange(4), 0, kMax, kMin).numel() == 0);
  }
  SUBCASE("split with split_size INT64_MAX is one piece, chunk into INT64_MAX chunks is pieces of 1") {
    // torch.arange(4.).split(2**63 - 1) -> (tensor([0., 1., 2., 3.]),);
    // torch.arange(4.).chunk(2**63 - 1) -> four pieces of one (ceil(4 / c) = 1).
    auto pieces = split(arange(4), kMax);
    REQUIRE(pieces.size() == 1);
    CHECK(pieces[0].to_vector() == std::vector<float>{0, 1, 2, 3});
    CHECK(chunk(arange(4), kMax).size() == 4);
  }
  SUBCASE("narrow of length 0 at the end is an empty tensor") { CHECK(narrow(ones({4}), 0, 4, 0).numel() == 0); }
}

TEST_CASE("hardening/ops: pow(a, b) has gradient 0 with respect to a where b = 0, also at a = 0") {
  // a^b with b = 0 is the constant 1, so d(a^b)/da = 0 for every a. The
  // formula b·a^(b-1) is 0·0⁻¹ = 0·inf = NaN at a = 0; PyTorch's
  // pow_backward_self is 0 wherever b = 0 (torch 1.13:
  // pow(tensor([0., 0., 2.]), tensor([0., 1., 0.])).sum().backward()
  // gives a.grad = [0, 1, 0], b.grad = [0, 0, ln 2]).
  Tensor a = tensor({0, 0, 2}).requires_grad_();
  Tensor b = tensor({0, 1, 0}).requires_grad_();
  sum(pow(a, b)).backward();
  CHECK(a.grad().to_vector() == std::vector<float>{0, 1, 0});
  std::vector<float> db = b.grad().to_vector();
  CHECK(db[0] == 0);
  CHECK(db[1] == 0);
  CHECK(db[2] == doctest::Approx(std::log(2.0)).epsilon(1e-6));

  SUBCASE("with b broadcast: a (3) against a 0-d b = 0") {
    Tensor a2 = tensor({0, 1, 2}).requires_grad_();
    sum(pow(a2, scalar_tensor(0))).backward();
    CHECK(a2.grad().to_vector() == std::vector<float>{0, 0, 0});
  }
}
