// Tests for src/ops/shape_ops.cpp: reshape/view/flatten, squeeze/unsqueeze,
// transpose/permute, expand/repeat, cat/stack, split/chunk, narrow/slice,
// index_select and embedding.
// Against PyTorch (tests/reference/shape_ops.txt, made by tools/reference/shape_ops.py;
// each case carries the op's arguments as ints), by gradcheck, from
// mathematics (small hand-checked examples, views sharing storage), and errors.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_against_torch;
using qkv::test::RefCase;

namespace {

std::vector<int64_t> ints(const RefCase& c, const std::string& key) { return c.ints_at(key).to_vector(); }
int64_t int_at(const RefCase& c, const std::string& key) { return c.ints_at(key).item(); }

// Run check_against_torch on every "<op>/…" case of tools/reference/shape_ops.py,
// one SUBCASE each.
void against_torch(const std::string& op, const qkv::test::RefFn& fn) {
  for (const std::string& name : qkv::test::reference_cases("shape_ops", op + "/")) {
    SUBCASE(name.c_str()) { check_against_torch("shape_ops", name, fn); }
  }
}

// gradcheck of f on one input, as a SUBCASE named after the shape.
void gradcheck_one(const Shape& shape, const std::function<Tensor(const Tensor&)>& f, uint64_t seed = 1) {
  SUBCASE(shape.str().c_str()) {
    Generator gen(seed);
    auto r = gradcheck([&](const std::vector<Tensor>& x) { return f(x[0]); }, {randn(shape, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
}

// 0, step, 2·step, … below n.
std::vector<int64_t> positions_of(int64_t n, int64_t step) {
  std::vector<int64_t> pos;
  for (int64_t p = 0; p < n; p += step) pos.push_back(p);
  return pos;
}

// The pieces in reverse order, joined again: what the split/chunk reference cases compute.
Tensor rejoined(const std::vector<Tensor>& pieces, int64_t dim) {
  return cat(std::vector<Tensor>(pieces.rbegin(), pieces.rend()), dim);
}

}  // namespace

// ---- views ------------------------------------------------------------------------

TEST_CASE("ops/reshape and view") {
  against_torch("reshape",
                [](const std::vector<Tensor>& x, const RefCase& c) { return reshape(x[0], Shape(ints(c, "shape"))); });
  against_torch("view",
                [](const std::vector<Tensor>& x, const RefCase& c) { return view(x[0], Shape(ints(c, "shape"))); });
  gradcheck_one({3, 5}, [](const Tensor& x) { return reshape(x, {5, -1}) * reshape(x, {5, 3}); });

  SUBCASE("shares storage") {  // by definition: a view writes through to its source
    Tensor x = arange(6);
    Tensor y = reshape(x, {2, 3});
    y.data()[4] = 40;
    CHECK(x.at({4}) == 40);
    CHECK(view(x, {3, 2}).data() == x.data());
  }
  SUBCASE("errors") {
    Tensor x = zeros({2, 3});
    CHECK_THROWS_WITH_AS(reshape(x, {4, 2}), doctest::Contains("reshape: cannot reshape (2, 3) (6 elements) to (4, 2)"),
                         Error);
    CHECK_THROWS_WITH_AS(reshape(x, {-1, -1}), doctest::Contains("reshape: only one size may be -1, got (-1, -1)"),
                         Error);
    CHECK_THROWS_WITH_AS(reshape(x, {4, -1}),
                         doctest::Contains("reshape: cannot reshape (2, 3) (6 elements) to (4, -1)"), Error);
    CHECK_THROWS_WITH_AS(reshape(x, {-2, -3}), doctest::Contains("reshape: invalid size -2"), Error);
    CHECK_THROWS_WITH_AS(reshape(zeros({0, 3}), {0, -1}),
                         doctest::Contains("reshape: cannot reshape (0, 3) to (0, -1)"), Error);
    CHECK_THROWS_WITH_AS(view(x, {7}), doctest::Contains("view: cannot reshape (2, 3)"), Error);
  }
}

TEST_CASE("ops/flatten") {
  against_torch("flatten", [](const std::vector<Tensor>& x, const RefCase& c) {
    return flatten(x[0], int_at(c, "start"), int_at(c, "end"));
  });
  gradcheck_one({2, 3, 5}, [](const Tensor& x) { return flatten(x, 1) * 2.0f; });
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(flatten(zeros({2, 3, 4}), 2, 1),
                         doctest::Contains("flatten: start_dim 2 comes after end_dim 1 for (2, 3, 4)"), Error);
    CHECK_THROWS_WITH_AS(flatten(zeros({2, 3}), 0, 2), doctest::Contains("flatten: dim 2 out of range"), Error);
  }
}

TEST_CASE("ops/squeeze and unsqueeze") {
  against_torch("squeeze", [](const std::vector<Tensor>& x, const RefCase& c) {
    return c.has("dim") ? squeeze(x[0], int_at(c, "dim")) : squeeze(x[0]);
  });
  against_torch("unsqueeze",
                [](const std::vector<Tensor>& x, const RefCase& c) { return unsqueeze(x[0], int_at(c, "dim")); });
  gradcheck_one({1, 3, 1, 5}, [](const Tensor& x) { return unsqueeze(squeeze(x), 0) * squeeze(x, 2); });

  SUBCASE("shapes and storage") {  // PyTorch's shapes, worked out by hand
    Tensor x = zeros({1, 3, 1});
    CHECK(squeeze(x).shape() == Shape{3});
    CHECK(squeeze(x, -1).shape() == Shape{1, 3});
    CHECK(unsqueeze(x, 3).shape() == Shape{1, 3, 1, 1});
    CHECK(unsqueeze(scalar_tensor(2), 0).shape() == Shape{1});
    CHECK(squeeze(scalar_tensor(2), 0).shape() == Shape());
    CHECK(squeeze(x).data() == x.data());
    CHECK(unsqueeze(x, 0).data() == x.data());
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(squeeze(zeros({2, 3}), 2), doctest::Contains("squeeze: dim 2 out of range"), Error);
    CHECK_THROWS_WITH_AS(unsqueeze(zeros({2, 3}), 3), doctest::Contains("unsqueeze: dim 3 out of range"), Error);
    CHECK_THROWS_WITH_AS(unsqueeze(zeros({2, 3}), -4), doctest::Contains("unsqueeze: dim -4 out of range"), Error);
  }
}

// ---- permute and transpose ----------------------------------------------------------

TEST_CASE("ops/transpose") {
  against_torch("transpose", [](const std::vector<Tensor>& x, const RefCase& c) {
    return transpose(x[0], int_at(c, "dim0"), int_at(c, "dim1"));
  });
  gradcheck_one({3, 5}, [](const Tensor& x) { return transpose(x, 0, 1); });
  gradcheck_one({2, 3, 1, 5}, [](const Tensor& x) { return transpose(x, -1, 1); });
  SUBCASE("by hand") {  // [[0 1 2] [3 4 5]]ᵀ = [[0 3] [1 4] [2 5]]
    CHECK(transpose(reshape(arange(6), {2, 3}), 0, 1).to_vector() == std::vector<float>{0, 3, 1, 4, 2, 5});
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(transpose(zeros({2, 3}), 0, 2), doctest::Contains("transpose: dim 2 out of range"), Error);
  }
}

TEST_CASE("ops/permute") {
  against_torch("permute",
                [](const std::vector<Tensor>& x, const RefCase& c) { return permute(x[0], ints(c, "dims")); });
  gradcheck_one({2, 3, 5}, [](const Tensor& x) { return permute(x, {1, 2, 0}); });
  gradcheck_one({3, 1, 2, 5}, [](const Tensor& x) { return permute(x, {3, 0, 2, 1}); });
  SUBCASE("0-d") { CHECK(permute(scalar_tensor(3), {}).item() == 3); }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(permute(zeros({2, 3}), {0}),
                         doctest::Contains("permute: 1 dims given for a 2-d tensor of shape (2, 3)"), Error);
    CHECK_THROWS_WITH_AS(permute(zeros({2, 3}), {1, -1}), doctest::Contains("permute: dim -1 appears twice"), Error);
    CHECK_THROWS_WITH_AS(permute(zeros({2, 3}), {0, 2}), doctest::Contains("permute: dim 2 out of range"), Error);
  }
}

namespace {

// The element-by-element definition the copies are held to (the walk permute
// and expand made before their fast paths): out[i₀, i₁, …] = x[Σₖ iₖ·strides[k]],
// one element at a time, for out's shape `shape`.
Tensor strided_copy_reference(const Tensor& x, const Shape& shape, const std::vector<int64_t>& strides) {
  Tensor out = zeros(shape);
  std::vector<int64_t> index(static_cast<size_t>(shape.ndim()), 0);
  for (int64_t flat = 0; flat < shape.numel(); ++flat) {
    int64_t rest = flat, offset = 0;
    for (int64_t d = shape.ndim() - 1; d >= 0; --d) {
      offset += (rest % shape[d]) * strides[static_cast<size_t>(d)];
      rest /= shape[d];
    }
    out.data()[flat] = x.data()[offset];
  }
  return out;
}

// permute by the definition: out dim k is x's dim dims[k].
Tensor permute_reference(const Tensor& x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> x_strides(static_cast<size_t>(x.dim()), 1), out_dims, strides;
  for (int64_t d = x.dim() - 2; d >= 0; --d)
    x_strides[static_cast<size_t>(d)] = x_strides[static_cast<size_t>(d + 1)] * x.shape()[d + 1];
  for (int64_t d : dims) {
    out_dims.push_back(x.shape()[d]);
    strides.push_back(x_strides[static_cast<size_t>(d)]);
  }
  return strided_copy_reference(x, Shape(out_dims), strides);
}

}  // namespace

TEST_CASE("ops/permute and transpose equal the element-by-element copy") {
  // Each fast path (contiguous runs, tiled transposes of the last two dims,
  // sizes that are not multiples of the tile) against the definition.
  Generator gen(11);
  struct Case {
    Shape shape;
    std::vector<int64_t> dims;
  };
  std::vector<Case> cases{
      {{2, 7, 3, 5}, {0, 2, 1, 3}},          // attention's heads: the last dim stays, runs of 5
      {{3, 70, 45}, {0, 2, 1}},              // the last two swapped, tiles with tails
      {{64, 33}, {1, 0}},                    // one matrix
      {{2, 3, 40, 1, 37}, {0, 1, 4, 3, 2}},  // a size-1 dim between the swapped ones
      {{4, 5, 6}, {2, 0, 1}},                // a rotation: no fast path
      {{4, 5, 6}, {1, 2, 0}},
      {{2, 1, 3}, {1, 0, 2}},  // moving only a size-1 dim: one run
      {{5, 0, 3}, {2, 1, 0}},  // empty
      {{1, 1}, {1, 0}},
  };
  // and every permutation of a 4-d shape with a tile-sized dim
  std::vector<int64_t> dims{0, 1, 2, 3};
  do {
    cases.push_back({{3, 2, 33, 4}, dims});
  } while (std::next_permutation(dims.begin(), dims.end()));
  for (const Case& c : cases) {
    CAPTURE(c.shape);
    CAPTURE(c.dims.size());
    Tensor x = randn(c.shape, gen);
    Tensor got = permute(x, c.dims), want = permute_reference(x, c.dims);
    REQUIRE(got.shape() == want.shape());
    CHECK(got.to_vector() == want.to_vector());
  }
  SUBCASE("transpose(-2, -1) of a big batch") {
    Tensor x = randn({3, 130, 67}, gen);
    CHECK(transpose(x, -2, -1).to_vector() == permute_reference(x, {0, 2, 1}).to_vector());
  }
}

TEST_CASE("ops/expand equals the element-by-element copy") {
  Generator gen(12);
  struct Case {
    Shape from, to;
  };
  for (const Case& c : std::vector<Case>{{{3, 1}, {3, 40}},
                                         {{1, 40}, {3, 40}},
                                         {{5}, {2, 3, 5}},
                                         {{2, 1, 1, 7}, {2, 3, 4, 7}},
                                         {{2, 1, 7, 1}, {2, 3, 7, 4}},
                                         {{1}, {0, 5}}}) {
    CAPTURE(c.from);
    CAPTURE(c.to);
    Tensor x = randn(c.from, gen);
    std::vector<int64_t> strides(static_cast<size_t>(c.to.ndim()), 0);
    const int64_t lead = c.to.ndim() - c.from.ndim();
    int64_t step = 1;
    for (int64_t d = c.from.ndim() - 1; d >= 0; --d) {
      if (c.from[d] != 1) strides[static_cast<size_t>(d + lead)] = step;
      step *= c.from[d];
    }
    CHECK(expand(x, c.to).to_vector() == strided_copy_reference(x, c.to, strides).to_vector());
  }
}

// ---- expand and repeat ----------------------------------------------------------------

TEST_CASE("ops/expand") {
  against_torch("expand",
                [](const std::vector<Tensor>& x, const RefCase& c) { return expand(x[0], Shape(ints(c, "shape"))); });
  gradcheck_one({3, 1}, [](const Tensor& x) { return expand(x, {2, 3, 5}); });
  gradcheck_one({1, 5, 1}, [](const Tensor& x) { return expand(x, {7, -1, 3}); });
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(expand(zeros({2, 3}), {3}),
                         doctest::Contains("expand: cannot expand (2, 3) to (3): the target has fewer dims"), Error);
    CHECK_THROWS_WITH_AS(expand(zeros({2, 3}), {4, 3}),
                         doctest::Contains("expand: cannot expand (2, 3) to (4, 3): dim 0 of size 2 cannot become 4"),
                         Error);
    CHECK_THROWS_WITH_AS(expand(zeros({3}), {-1, 3}),
                         doctest::Contains("expand: size -1 not allowed for new leading dim 0"), Error);
  }
}

TEST_CASE("ops/repeat") {
  against_torch("repeat",
                [](const std::vector<Tensor>& x, const RefCase& c) { return repeat(x[0], ints(c, "repeats")); });
  gradcheck_one({2, 3}, [](const Tensor& x) { return repeat(x, {2, 1, 3}); });
  SUBCASE("by hand") {  // [a b] tiled (2, 2): [[a b a b] [a b a b]]
    CHECK(repeat(tensor({1, 2}), {2, 2}).to_vector() == std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2});
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(repeat(zeros({2, 3}), {2}),
                         doctest::Contains("repeat: 1 repeats for a 2-d tensor of shape (2, 3)"), Error);
    CHECK_THROWS_WITH_AS(repeat(zeros({2, 3}), {2, -1}),
                         doctest::Contains("repeat: negative repeat count -1 for dim 1"), Error);
  }
}

TEST_CASE("ops/repeat_interleave") {
  against_torch("repeat_interleave", [](const std::vector<Tensor>& x, const RefCase& c) {
    return c.has("dim") ? repeat_interleave(x[0], int_at(c, "repeats"), int_at(c, "dim"))
                        : repeat_interleave(x[0], int_at(c, "repeats"));
  });
  gradcheck_one({2, 3, 5}, [](const Tensor& x) { return repeat_interleave(x, 3, 1); });
  gradcheck_one({4, 3}, [](const Tensor& x) { return repeat_interleave(x, 2, -1); });
  gradcheck_one({2, 3}, [](const Tensor& x) { return repeat_interleave(x, 2); });
  SUBCASE("by hand") {  // [a b c] -> [a a b b c c]; repeat would tile it: [a b c a b c]
    CHECK(repeat_interleave(tensor({1, 2, 3}), 2).to_vector() == std::vector<float>{1, 1, 2, 2, 3, 3});
    CHECK(tensor({1, 2, 3, 4}, {2, 2}).repeat_interleave(2, 0).to_vector() ==
          std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4});
    CHECK(repeat_interleave(scalar_tensor(5), 3).shape() == Shape{3});  // a 0-d tensor flattens to (1)
  }
  SUBCASE("the gradient sums each element's copies") {  // d Σ w·y / dx[j] = Σ of the weights on x[j]'s copies
    Tensor x = tensor({1, 2}).requires_grad_();
    sum(repeat_interleave(x, 3, 0) * tensor({1, 2, 3, 10, 20, 30})).backward();
    CHECK(x.grad().to_vector() == std::vector<float>{6, 60});
  }
  SUBCASE("integers, as attention repeats valid lengths per head") {  // (B) -> (B·h), (B, Q) -> (B·h, Q)
    CHECK(repeat_interleave(int_tensor({3, 1}), 2, 0).to_vector() == std::vector<int64_t>{3, 3, 1, 1});
    IntTensor lens = int_tensor({1, 2, 3, 4}, {2, 2}).repeat_interleave(3, 0);
    CHECK(lens.shape() == Shape{6, 2});
    CHECK(lens.to_vector() == std::vector<int64_t>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
    CHECK(int_tensor({1, 2, 3, 4}, {2, 2}).repeat_interleave(2).to_vector() ==
          std::vector<int64_t>{1, 1, 2, 2, 3, 3, 4, 4});
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(repeat_interleave(zeros({2, 3}), -1, 0),
                         doctest::Contains("repeat_interleave: repeats must be at least 0, got -1"), Error);
    CHECK_THROWS_WITH_AS(repeat_interleave(zeros({2, 3}), 2, 2),
                         doctest::Contains("repeat_interleave: dim 2 out of range for a 2-d tensor"), Error);
    CHECK_THROWS_WITH_AS(repeat_interleave(scalar_tensor(1), 2, 0),
                         doctest::Contains("repeat_interleave: dim 0 given for a 0-d tensor"), Error);
    CHECK_THROWS_WITH_AS(repeat_interleave(int_tensor({1}), -2),
                         doctest::Contains("repeats must be at least 0, got -2"), Error);
  }
}

// ---- cat and stack ------------------------------------------------------------------------

TEST_CASE("ops/cat") {
  against_torch("cat", [](const std::vector<Tensor>& x, const RefCase& c) {
    // cat/same_twice joins its one input to itself; the others join their inputs.
    return c.name == "cat/same_twice" ? cat({x[0], x[0]}, int_at(c, "dim")) : cat(x, int_at(c, "dim"));
  });
  SUBCASE("gradcheck") {
    Generator gen(3);
    auto r = gradcheck([](const std::vector<Tensor>& x) { return cat(x, 1); },
                       {randn({2, 1, 5}, gen), randn({2, 3, 5}, gen), randn({2, 7, 5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(cat({}, 0), doctest::Contains("cat: expected a non-empty list of tensors"), Error);
    CHECK_THROWS_WITH_AS(
        cat({zeros({2, 3}), zeros({2, 4})}, 0),
        doctest::Contains("cat: tensor 1 has shape (2, 4) and tensor 0 has (2, 3): they must agree except in dim 0"),
        Error);
    CHECK_THROWS_WITH_AS(cat({zeros({2, 3}), zeros({2, 3, 1})}, 1),
                         doctest::Contains("cat: tensor 1 has shape (2, 3, 1)"), Error);
    CHECK_THROWS_WITH_AS(cat({zeros({2, 3}), zeros({2, 3})}, 2), doctest::Contains("cat: dim 2 out of range"), Error);
    CHECK_THROWS_WITH_AS(cat({scalar_tensor(1)}, 0), doctest::Contains("cat: a 0-d tensor cannot be concatenated"),
                         Error);
  }
}

TEST_CASE("ops/stack") {
  against_torch("stack", [](const std::vector<Tensor>& x, const RefCase& c) { return stack(x, int_at(c, "dim")); });
  SUBCASE("gradcheck") {
    Generator gen(4);
    auto r =
        gradcheck([](const std::vector<Tensor>& x) { return stack(x, -1); }, {randn({3, 5}, gen), randn({3, 5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
  SUBCASE("scalars") { CHECK(stack({scalar_tensor(1), scalar_tensor(2)}).to_vector() == std::vector<float>{1, 2}); }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(stack({}, 0), doctest::Contains("stack: expected a non-empty list of tensors"), Error);
    CHECK_THROWS_WITH_AS(stack({zeros({2, 3}), zeros({3, 2})}, 0),
                         doctest::Contains("stack: tensor 1 has shape (3, 2) and tensor 0 has (2, 3)"), Error);
    CHECK_THROWS_WITH_AS(stack({zeros({2, 3})}, 3), doctest::Contains("stack: dim 3 out of range"), Error);
  }
}

// ---- split, chunk, narrow, slice ---------------------------------------------------------

TEST_CASE("ops/split") {
  against_torch("split", [](const std::vector<Tensor>& x, const RefCase& c) {  // by a split_size, or by sizes
    int64_t dim = int_at(c, "dim");
    return rejoined(
        c.has("split_size") ? split(x[0], int_at(c, "split_size"), dim) : split(x[0], ints(c, "sizes"), dim), dim);
  });
  gradcheck_one({7, 3}, [](const Tensor& x) {
    std::vector<Tensor> p = split(x, 3);  // sizes 3, 3, 1
    return p[0] * p[1] + expand(p[2], {3, 3});
  });
  SUBCASE("an unused piece gets a zero gradient") {  // d(sum of rows 2, 3)/dx: ones on those rows, zeros elsewhere
    Tensor x = zeros({5, 2}).requires_grad_();
    sum(split(x, 2)[1]).backward();
    CHECK(x.grad().to_vector() == std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1, 0, 0});
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(split(zeros({5, 3}), 0), doctest::Contains("split: split_size 0 for dim 0 of size 5"), Error);
    CHECK_THROWS_WITH_AS(split(zeros({5, 3}), std::vector<int64_t>{2, 2}, 0),
                         doctest::Contains("split: sizes add up to 4, but dim 0 of (5, 3) has size 5"), Error);
    CHECK_THROWS_WITH_AS(split(zeros({5, 3}), std::vector<int64_t>{4, -1}, 1),
                         doctest::Contains("split: negative size -1"), Error);
    CHECK_THROWS_WITH_AS(split(zeros({5, 3}), 2, 2), doctest::Contains("split: dim 2 out of range"), Error);
  }
}

TEST_CASE("ops/chunk") {
  against_torch("chunk", [](const std::vector<Tensor>& x, const RefCase& c) {
    int64_t dim = int_at(c, "dim");
    return rejoined(chunk(x[0], int_at(c, "chunks"), dim), dim);
  });
  SUBCASE("PyTorch's sizing") {  // pieces of ceil(n / chunks): 5 in 4 chunks is 2, 2, 1 (three pieces)
    std::vector<Tensor> p = chunk(zeros({5}), 4);
    REQUIRE(p.size() == 3);
    CHECK(p[2].shape() == Shape{1});
    CHECK(chunk(zeros({0}), 3).size() == 3);
  }
  gradcheck_one({3, 7}, [](const Tensor& x) { return chunk(x, 2, 1)[1] * 3.0f; });
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(chunk(zeros({5}), 0), doctest::Contains("chunk: chunks must be at least 1, got 0"), Error);
    CHECK_THROWS_WITH_AS(chunk(zeros({5}), 2, 1), doctest::Contains("chunk: dim 1 out of range"), Error);
  }
}

TEST_CASE("ops/narrow") {
  against_torch("narrow", [](const std::vector<Tensor>& x, const RefCase& c) {
    return narrow(x[0], int_at(c, "dim"), int_at(c, "start"), int_at(c, "length"));
  });
  gradcheck_one({3, 7}, [](const Tensor& x) { return narrow(x, 1, 2, 4); });
  SUBCASE("errors") {
    Tensor x = zeros({2, 6});
    CHECK_THROWS_WITH_AS(narrow(x, 1, 5, 2), doctest::Contains("narrow: start 5 + length 2 exceeds size 6 of dim 1"),
                         Error);
    CHECK_THROWS_WITH_AS(narrow(x, 1, 7, 0), doctest::Contains("narrow: start 7 out of range for dim 1 of size 6"),
                         Error);
    CHECK_THROWS_WITH_AS(narrow(x, 1, -7, 1), doctest::Contains("narrow: start -7 out of range for dim 1 of size 6"),
                         Error);
    CHECK_THROWS_WITH_AS(narrow(x, 0, 0, -1), doctest::Contains("narrow: negative length -1"), Error);
    CHECK_THROWS_WITH_AS(narrow(x, 2, 0, 1), doctest::Contains("narrow: dim 2 out of range"), Error);
  }
}

TEST_CASE("ops/slice") {
  against_torch("slice", [](const std::vector<Tensor>& x, const RefCase& c) {
    return slice(x[0], int_at(c, "dim"), int_at(c, "start"), int_at(c, "end"), int_at(c, "step"));
  });
  gradcheck_one({3, 8}, [](const Tensor& x) { return slice(x, -1, 1, 7, 2); });
  SUBCASE("by hand") {  // Python: list(range(10))[-7:100:3] == [3, 6, 9]
    CHECK(slice(arange(10), 0, -7, 100, 3).to_vector() == std::vector<float>{3, 6, 9});
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(slice(zeros({5}), 0, 0, 5, 0), doctest::Contains("slice: step must be at least 1, got 0"),
                         Error);
    CHECK_THROWS_WITH_AS(slice(zeros({5}), 0, 0, 5, -1), doctest::Contains("slice: step must be at least 1, got -1"),
                         Error);
    CHECK_THROWS_WITH_AS(slice(zeros({5}), 1, 0, 5), doctest::Contains("slice: dim 1 out of range"), Error);
  }
}

TEST_CASE("ops/narrow, slice and index_select equal the element-by-element take") {
  // y[o, j, i] = x[o, pos[j], i] by definition, for runs (one memcpy per
  // outer row) and for other positions; and the gradient adds back there.
  Generator gen(13);
  Tensor x = randn({3, 9, 4}, gen);
  auto take_reference = [&](int64_t dim, const std::vector<int64_t>& pos) {
    std::vector<int64_t> dims = x.shape().dims();
    dims[static_cast<size_t>(dim)] = static_cast<int64_t>(pos.size());
    Tensor out = zeros(Shape(dims));
    for (int64_t a = 0; a < dims[0]; ++a)
      for (int64_t b = 0; b < dims[1]; ++b)
        for (int64_t c = 0; c < dims[2]; ++c) {
          std::vector<int64_t> at{a, b, c};
          at[static_cast<size_t>(dim)] = pos[static_cast<size_t>(at[static_cast<size_t>(dim)])];
          out.data()[(a * dims[1] + b) * dims[2] + c] = x.at({at[0], at[1], at[2]});
        }
    return out;
  };
  for (int64_t dim = 0; dim < 3; ++dim) {
    CAPTURE(dim);
    CHECK(narrow(x, dim, 1, 2).to_vector() == take_reference(dim, {1, 2}).to_vector());
    CHECK(slice(x, dim, 0, 9, 2).to_vector() == take_reference(dim, positions_of(x.size(dim), 2)).to_vector());
    CHECK(index_select(x, dim, int_tensor({2, 0, 2})).to_vector() == take_reference(dim, {2, 0, 2}).to_vector());
  }
}

TEST_CASE("ops/the pieces of a tensor add their gradients into one buffer") {
  // Mathematics: x (S, D); L = Σₜ (t+1)·Σ x[t] over the S single-row narrows,
  // so dL/dx[t, :] = t + 1, plus the other uses of x added on top.
  const int64_t S = 50, D = 3;
  Tensor x = zeros({S, D}).requires_grad_();
  SUBCASE("one narrow per step, as a decoder reads its input") {
    Tensor loss = sum(mul(x, 0.5f));  // another use of x: 0.5 everywhere
    for (int64_t t = 0; t < S; ++t) loss = add(loss, sum(mul(narrow(x, 0, t, 1), static_cast<float>(t + 1))));
    loss.backward();
    for (int64_t t = 0; t < S; ++t)
      for (int64_t d = 0; d < D; ++d) REQUIRE(x.grad().at({t, d}) == static_cast<float>(t + 1) + 0.5f);
  }
  SUBCASE("a gradient that aliases the seed is copied before pieces add into it") {
    // add's backward hands dout itself to h, and dout is the caller's g: the
    // narrow's part must go into a copy, never into g.
    Tensor h = mul(x, 1.0f);
    Tensor y = add(h, expand(narrow(h, 0, 1, 1), {S, D}));
    Tensor g = ones({S, D});
    y.backward(g);
    CHECK(g.to_vector() == std::vector<float>(static_cast<size_t>(S * D), 1.0f));
    // dy/dh = 1 everywhere, plus S (the row broadcast to S rows) on row 1.
    for (int64_t t = 0; t < S; ++t) REQUIRE(x.grad().at({t, 0}) == (t == 1 ? 1.0f + S : 1.0f));
  }
  SUBCASE("a leaf's pieces: its .grad() is made once, then added to") {
    for (int round = 1; round <= 2; ++round) {
      std::vector<Tensor> rows = split(x, 1, 0);
      Tensor loss = sum(rows[3]);
      for (size_t t = 0; t < rows.size(); t += 7) loss = add(loss, sum(rows[t]));
      loss.backward();
      // Row 3: 1; rows 0, 7, 14, …: 1 each (row 0 is among them), per round.
      for (int64_t t = 0; t < S; ++t)
        REQUIRE(x.grad().at({t, 2}) == static_cast<float>(round * ((t == 3) + (t % 7 == 0))));
    }
  }
}

// ---- index_select and embedding ------------------------------------------------------------

TEST_CASE("ops/index_select") {
  against_torch("index_select", [](const std::vector<Tensor>& x, const RefCase& c) {
    return index_select(x[0], int_at(c, "dim"), c.ints_at("index"));
  });
  gradcheck_one({3, 5}, [](const Tensor& x) { return index_select(x, 1, int_tensor({4, 0, 4, 2})); });
  SUBCASE("errors") {
    Tensor x = zeros({3, 5});
    CHECK_THROWS_WITH_AS(index_select(x, 1, int_tensor({0, 7})),
                         doctest::Contains("index_select: index 7 out of range for dim 1 of size 5"), Error);
    CHECK_THROWS_WITH_AS(index_select(x, 0, int_tensor({-1})),
                         doctest::Contains("index_select: index -1 out of range for dim 0 of size 3"), Error);
    CHECK_THROWS_WITH_AS(index_select(x, 0, int_tensor({0, 1}, {1, 2})),
                         doctest::Contains("index_select: index must be 1-d, got shape (1, 2)"), Error);
    CHECK_THROWS_WITH_AS(index_select(x, 2, int_tensor({0})), doctest::Contains("index_select: dim 2 out of range"),
                         Error);
  }
}

TEST_CASE("ops/embedding") {
  against_torch("embedding",
                [](const std::vector<Tensor>& x, const RefCase& c) { return embedding(c.ints_at("ids"), x[0]); });
  gradcheck_one({5, 3}, [](const Tensor& w) { return embedding(int_tensor({1, 4, 1, 0, 1, 3}, {2, 3}), w); });
  SUBCASE("a row used twice gets both gradients") {  // d(sum)/d(weight row 1) = 2 (it is picked twice), row 0: 0
    Tensor w = ones({3, 2}).requires_grad_();
    sum(embedding(int_tensor({1, 2, 1}), w)).backward();
    CHECK(w.grad().to_vector() == std::vector<float>{0, 0, 2, 2, 1, 1});
  }
  SUBCASE("errors") {
    Tensor w = zeros({5, 4});
    CHECK_THROWS_WITH_AS(embedding(int_tensor({1, 5}), w),
                         doctest::Contains("embedding: index 5 out of range for a weight of 5 rows"), Error);
    CHECK_THROWS_WITH_AS(embedding(int_tensor({-1}), w), doctest::Contains("embedding: index -1 out of range"), Error);
    CHECK_THROWS_WITH_AS(embedding(int_tensor({0}), zeros({5})),
                         doctest::Contains("embedding: weight must be 2-d (V, D), got shape (5)"), Error);
  }
}
