// Tests for the reductions (src/ops/reduction.cpp): sum, mean, max, min,
// argmax, argmin. Against PyTorch (tests/reference/reduction.txt, made by
// tools/reference/reduction.py), by gradcheck, from mathematics, and their errors.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <functional>
#include <string>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_against_torch;
using qkv::test::RefCase;
using qkv::test::reference_cases;

namespace {

using AlongFn = std::function<Tensor(const Tensor&, int64_t, bool)>;
using WholeFn = std::function<Tensor(const Tensor&)>;

int64_t dim_of(const RefCase& c) { return c.ints_at("dim").item(); }
bool keepdim_of(const RefCase& c) { return c.ints_at("keepdim").item() != 0; }

// One SUBCASE per reference case of `op` (tools/reference/reduction.py):
// "<op>_all/…" over every element, "<op>/…" along the dim the case holds.
void check_op_against_torch(const std::string& op, const WholeFn& whole, const AlongFn& along) {
  for (const std::string& name : reference_cases("reduction", op + "_all/")) {
    SUBCASE(name.c_str()) {
      check_against_torch("reduction", name, [&](const std::vector<Tensor>& x, const RefCase&) { return whole(x[0]); });
    }
  }
  for (const std::string& name : reference_cases("reduction", op + "/")) {
    SUBCASE(name.c_str()) {
      check_against_torch("reduction", name, [&](const std::vector<Tensor>& x, const RefCase& c) {
        return along(x[0], dim_of(c), keepdim_of(c));
      });
    }
  }
}

// Shapes and dims for the gradchecks: odd sizes, size-1 dims, negative dims,
// keepdim, a 0-d tensor.
struct Along {
  Shape shape;
  int64_t dim;
  bool keepdim;
};
const Along GRADCHECK_ALONG[] = {{{3, 5}, 1, false},    {{3, 5}, 0, true}, {{2, 3, 5}, -2, true},
                                 {{2, 3, 5}, 0, false}, {{7}, 0, false},   {{1, 3, 1}, -1, false},
                                 {Shape(), 0, false}};
const Shape GRADCHECK_WHOLE[] = {{3, 5}, {1}, {2, 3, 7}};

// Distinct values 0.1 apart in a scrambled order ((7919·i mod n), 7919 prime):
// max/min see no ties, and no near-ties that a gradcheck step of 1e-2 could swap.
Tensor spread(const Shape& shape) {
  int64_t n = shape.numel();
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = 0.1f * static_cast<float>((7919 * i) % n) - 0.05f * static_cast<float>(n);
  return tensor(v, shape);
}

void gradcheck_op(const WholeFn& whole, const AlongFn& along, bool distinct) {
  Generator gen(7);
  for (const Shape& shape : GRADCHECK_WHOLE) {
    SUBCASE(("all " + shape.str()).c_str()) {
      Tensor x = distinct ? spread(shape) : randn(shape, gen);
      auto r = gradcheck([&](const std::vector<Tensor>& xs) { return whole(xs[0]); }, {x});
      CHECK_MESSAGE(r.ok, r.message);
    }
  }
  for (const Along& a : GRADCHECK_ALONG) {
    SUBCASE(fmt::format("{} dim {} keepdim {}", a.shape, a.dim, a.keepdim).c_str()) {
      Tensor x = distinct ? spread(a.shape) : randn(a.shape, gen);
      auto r = gradcheck([&](const std::vector<Tensor>& xs) { return along(xs[0], a.dim, a.keepdim); }, {x});
      CHECK_MESSAGE(r.ok, r.message);
    }
  }
}

// The errors every reduction along a dim shares: a dim out of range.
void check_dim_errors(const std::string& op, const AlongFn& along) {
  Tensor x = zeros({2, 3});
  auto message = [&](const char* rest) { return doctest::Contains((op + rest).c_str()); };
  CHECK_THROWS_WITH_AS(along(x, 2, false), message(": dim 2 out of range"), qkv::Error);
  CHECK_THROWS_WITH_AS(along(x, -3, true), message(": dim -3 out of range"), qkv::Error);
  CHECK_THROWS_WITH_AS(along(scalar_tensor(1), 1, false), message(": dim 1 out of range"), qkv::Error);
}

void check_ints(const IntTensor& got, const IntTensor& want) {
  REQUIRE_MESSAGE(got.shape() == want.shape(), "shape " << got.shape().str() << ", torch has " << want.shape().str());
  CHECK(got.to_vector() == want.to_vector());
}

const WholeFn SUM_ALL = [](const Tensor& x) { return sum(x); };
const AlongFn SUM = [](const Tensor& x, int64_t d, bool k) { return sum(x, d, k); };
const WholeFn MEAN_ALL = [](const Tensor& x) { return mean(x); };
const AlongFn MEAN = [](const Tensor& x, int64_t d, bool k) { return mean(x, d, k); };
const WholeFn MAX_ALL = [](const Tensor& x) { return max(x); };
const AlongFn MAX = [](const Tensor& x, int64_t d, bool k) { return max(x, d, k); };
const WholeFn MIN_ALL = [](const Tensor& x) { return min(x); };
const AlongFn MIN = [](const Tensor& x, int64_t d, bool k) { return min(x, d, k); };

}  // namespace

// ---- sum -------------------------------------------------------------------------

TEST_CASE("ops/sum against torch") { check_op_against_torch("sum", SUM_ALL, SUM); }
TEST_CASE("ops/sum gradcheck") { gradcheck_op(SUM_ALL, SUM, false); }

TEST_CASE("ops/sum from mathematics") {
  SUBCASE("rows and columns of [[1, 2, 3], [4, 5, 6]]") {
    Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    CHECK(sum(x).item() == 21);
    CHECK(sum(x, 0).to_vector() == std::vector<float>{5, 7, 9});
    CHECK(sum(x, -1, true).shape() == Shape{2, 1});
    CHECK(sum(x, -1, true).to_vector() == std::vector<float>{6, 15});
  }
  SUBCASE("a 0-d tensor along dim 0 is itself, as in PyTorch") {
    Tensor s = sum(scalar_tensor(3), 0);
    CHECK(s.shape() == Shape());
    CHECK(s.item() == 3);
  }
  SUBCASE("the sum of nothing is 0, as in PyTorch") {
    CHECK(sum(zeros({2, 0}), 1).to_vector() == std::vector<float>{0, 0});
    CHECK(sum(zeros({0})).item() == 0);
  }
}

TEST_CASE("ops/sum errors") { check_dim_errors("sum", SUM); }

// ---- mean ------------------------------------------------------------------------

TEST_CASE("ops/mean against torch") { check_op_against_torch("mean", MEAN_ALL, MEAN); }
TEST_CASE("ops/mean gradcheck") { gradcheck_op(MEAN_ALL, MEAN, false); }

TEST_CASE("ops/mean composed with broadcasting: x - mean(x, -1, keepdim) gradcheck") {
  Generator gen(3);
  auto r = gradcheck([](const std::vector<Tensor>& x) { return x[0] - mean(x[0], -1, true); }, {randn({3, 5}, gen)});
  CHECK_MESSAGE(r.ok, r.message);
}

TEST_CASE("ops/mean errors") {
  check_dim_errors("mean", MEAN);
  // PyTorch returns NaN here; qkv throws.
  CHECK_THROWS_WITH_AS(mean(zeros({2, 0}), 1), doctest::Contains("mean: dim 1 of (2, 0) has size 0"), qkv::Error);
  CHECK_THROWS_WITH_AS(mean(zeros({0, 3})), doctest::Contains("mean: (0, 3) has no elements"), qkv::Error);
}

// ---- max and min -------------------------------------------------------------------

TEST_CASE("ops/max against torch") { check_op_against_torch("max", MAX_ALL, MAX); }
TEST_CASE("ops/max gradcheck") { gradcheck_op(MAX_ALL, MAX, true); }

TEST_CASE("ops/max gradient on ties, from mathematics (PyTorch's rules)") {
  SUBCASE("max() splits the gradient evenly among the tied maxima") {
    Tensor x = tensor({1, 3, 3}, {3}).requires_grad_();
    max(x).backward();
    CHECK(x.grad().to_vector() == std::vector<float>{0, 0.5f, 0.5f});
  }
  SUBCASE("max(x, dim) gives it all to the first of them") {
    Tensor x = tensor({1, 3, 3}, {1, 3}).requires_grad_();
    max(x, 1).backward(ones({1}));
    CHECK(x.grad().to_vector() == std::vector<float>{0, 1, 0});
  }
}

TEST_CASE("ops/max errors") {
  check_dim_errors("max", MAX);
  CHECK_THROWS_WITH_AS(max(zeros({2, 0}), 1), doctest::Contains("max: dim 1 of (2, 0) has size 0"), qkv::Error);
  CHECK_THROWS_WITH_AS(max(zeros({0})), doctest::Contains("max: (0) has no elements"), qkv::Error);
}

TEST_CASE("ops/min against torch") { check_op_against_torch("min", MIN_ALL, MIN); }
TEST_CASE("ops/min gradcheck") { gradcheck_op(MIN_ALL, MIN, true); }

TEST_CASE("ops/min errors") {
  check_dim_errors("min", MIN);
  CHECK_THROWS_WITH_AS(min(zeros({3, 0, 2}), -2), doctest::Contains("min: dim 1 of (3, 0, 2) has size 0"), qkv::Error);
  CHECK_THROWS_WITH_AS(min(zeros({2, 0})), doctest::Contains("min: (2, 0) has no elements"), qkv::Error);
}

// ---- argmax and argmin -------------------------------------------------------------

TEST_CASE("ops/argmax against torch") {
  for (const std::string& name : reference_cases("reduction", "argmax_all/")) {
    SUBCASE(name.c_str()) {
      const RefCase& c = qkv::test::reference("reduction", name);
      check_ints(argmax(c.tensor("x0")), c.ints_at("out"));
    }
  }
  for (const std::string& name : reference_cases("reduction", "argmax/")) {
    SUBCASE(name.c_str()) {
      const RefCase& c = qkv::test::reference("reduction", name);
      check_ints(argmax(c.tensor("x0"), dim_of(c), keepdim_of(c)), c.ints_at("out"));
    }
  }
}

TEST_CASE("ops/argmax errors") {
  CHECK_THROWS_WITH_AS(argmax(zeros({2, 3}), 2), doctest::Contains("argmax: dim 2 out of range"), qkv::Error);
  CHECK_THROWS_WITH_AS(argmax(zeros({2, 0}), 1), doctest::Contains("argmax: dim 1 of (2, 0) has size 0"), qkv::Error);
  CHECK_THROWS_WITH_AS(argmax(zeros({0, 4})), doctest::Contains("argmax: (0, 4) has no elements"), qkv::Error);
}

TEST_CASE("ops/argmin against torch") {
  for (const std::string& name : reference_cases("reduction", "argmin/")) {
    SUBCASE(name.c_str()) {
      const RefCase& c = qkv::test::reference("reduction", name);
      check_ints(argmin(c.tensor("x0"), dim_of(c), keepdim_of(c)), c.ints_at("out"));
    }
  }
}

TEST_CASE("ops/argmin errors") {
  CHECK_THROWS_WITH_AS(argmin(zeros({2, 3}), -3), doctest::Contains("argmin: dim -3 out of range"), qkv::Error);
  CHECK_THROWS_WITH_AS(argmin(zeros({0}), 0), doctest::Contains("argmin: dim 0 of (0) has size 0"), qkv::Error);
}
