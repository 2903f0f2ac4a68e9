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
using qkv::test::check_bad_inputs;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t k2to62 = int64_t{1} << 62;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor x4() { return arange(4); }               // (4)
Tensor x23() { return ones({2, 3}); }           // (2, 3)
Tensor w() { return ones({5, 3}); }             // (V, D) = (5, 3)
IntTensor ids() { return int_tensor({0, 4}); }  // (2)
}  // namespace

TEST_CASE("hardening/ops: elementwise, compare and broadcast") {
  check_bad_inputs({
      {"div: shapes that do not broadcast", [] { div(x23(), ones({4})); },
       "div: shapes (2, 3) and (4) do not broadcast"},
      {"masked_fill: a mask larger than x",
       [] {
         masked_fill(x4(), IntTensor::empty({2, 4}), 0);
       },
       "masked_fill: mask of shape (2, 4) does not broadcast to x's shape (4)"},
      {"where: shapes that do not broadcast", [] { where(IntTensor::empty({3}), x4(), x4()); }, "do not broadcast"},
      {"sequence_mask: negative valid_len",
       [] {
         sequence_mask(x23(), int_tensor({1, -1}));
       },
       "sequence_mask: valid_len[1] = -1 is negative"},
      {"sum_to: a shape x does not broadcast from", [] { sum_to(x23(), Shape{4}); }, "do not broadcast"},
  });
}

TEST_CASE("hardening/ops: reductions and softmax") {
  check_bad_inputs({
      {"sum: dim out of range", [] { sum(x23(), 2); }, "sum: dim 2 out of range for a 2-d tensor"},
      {"sum: dim INT64_MIN", [] { sum(x23(), kMin); }, "sum: dim -9223372036854775808 out of range"},
      {"max: empty", [] { max(zeros({0})); }, "max: (0) has no elements: nothing to reduce"},
      {"argmax: a size-0 dim",
       [] {
         argmax(zeros({2, 0}), 1);
       },
       "argmax: dim 1 of (2, 0) has size 0"},
      {"log_softmax: dim out of range", [] { log_softmax(x23(), -3); }, "log_softmax: dim -3 out of range"},
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
  check_bad_inputs({
      {"matmul: a 0-d operand", [] { matmul(scalar_tensor(1), x4()); }, "both operands need at least 1 dim"},
      {"matmul: inner sizes differ", [] { matmul(x23(), x23()); }, "matmul: (2, 3) x (2, 3): inner sizes 3 and 2"},
      {"bmm: 2-d operands", [] { bmm(x23(), x23()); }, "bmm: (2, 3) x (2, 3): both operands must be 3-d"},
      {"dropout: p NaN", [] { dropout(x4(), kNaN, true); }, "dropout: probability has to be between 0 and 1"},
      {"dropout: p above 1", [] { dropout(x4(), 1.5f, true); }, "but got 1.5"},
      {"layer_norm: shape mismatch", [] { layer_norm(x23(), Shape{2}); }, "does not match the trailing dims"},
      {"normalize: p NaN", [] { normalize(x23(), kNaN); }, "normalize: p must be positive"},
  });
}

TEST_CASE("hardening/ops: shape ops") {
  check_bad_inputs({
      // views
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
      {"flatten: start after end",
       [] {
         flatten(ones({2, 3, 4}), 2, 1);
       },
       "flatten: start_dim 2 comes after end_dim 1"},
      {"squeeze: dim out of range", [] { squeeze(x23(), 2); }, "squeeze: dim 2 out of range"},
      {"unsqueeze: dim past ndim", [] { unsqueeze(x4(), 2); }, "unsqueeze: dim 2 out of range"},
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
      // cat, stack
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
      {"chunk: 0 chunks", [] { chunk(x4(), 0); }, "chunk: chunks must be at least 1, got 0"},
      {"chunk: INT64_MIN chunks", [] { chunk(x4(), kMin); }, "chunk: chunks must be at least 1"},
      {"narrow: start INT64_MIN", [] { narrow(ones({4}), 0, kMin, 1); }, "narrow: start -9223372036854775808 out of"},
      {"narrow: start INT64_MAX", [] { narrow(ones({4}), 0, kMax, 0); }, "out of range for dim 0 of size 4"},
      {"narrow: negative length", [] { narrow(ones({4}), 0, 0, -1); }, "narrow: negative length -1"},
      {"narrow: a 0-d tensor", [] { narrow(scalar_tensor(1), 0, 0, 1); }, "narrow: cannot narrow a 0-d tensor"},
      {"slice: step 0", [] { slice(x4(), 0, 0, 4, 0); }, "slice: step must be at least 1, got 0"},
      {"slice: step INT64_MIN", [] { slice(x4(), 0, 0, 4, kMin); }, "slice: step must be at least 1"},
      {"slice: a 0-d tensor", [] { slice(scalar_tensor(1), 0, 0, 1); }, "slice: cannot slice a 0-d tensor"},
      // index_select, embedding
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
      {"embedding: id INT64_MIN", [] { embedding(int_tensor({kMin}), w()); },
       "embedding: index -9223372036854775808 out of range for a weight of 5 rows"},
      {"embedding: id V", [] { embedding(int_tensor({5}), w()); }, "embedding: index 5 out of range"},
      {"embedding: 1-d weight", [] { embedding(ids(), x4()); }, "embedding: weight must be 2-d (V, D), got shape (4)"},
  });
}
