// Tests of the elementwise ops: gradchecks, PyTorch's values
// (tools/reference/elementwise.py -> tests/reference/elementwise.txt), the
// values mathematics fixes (kinks, empty tensors, the operators), and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_against_torch;
using qkv::test::check_close;
using qkv::test::RefCase;
using qkv::test::reference_cases;
using Inputs = std::vector<Tensor>;

namespace {

// Values in [0.5, 2): for log, sqrt, divisors and pow's base.
Tensor positive(Shape shape, Generator& gen) {
  Tensor x = Tensor::empty(std::move(shape));
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = gen.uniform(0.5f, 2.0f);
  return x;
}

// Normal values with |x| ≥ 0.1, so gradcheck's ±eps never crosses a kink at 0.
Tensor away_from_zero(Shape shape, Generator& gen) {
  Tensor x = randn(std::move(shape), gen);
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::fabs(x.data()[i]) < 0.1f) x.data()[i] = 0.5f;
  return x;
}

void check_gradient(const std::function<Tensor(const Inputs&)>& f, const Inputs& inputs) {
  auto r = gradcheck(f, inputs);
  CHECK_MESSAGE(r.ok, r.message);
}

using TensorOp = Tensor (*)(const Tensor&, const Tensor&);
using FloatCases = std::map<std::string, std::function<Tensor(const Tensor&)>>;

// Every torch case of the binary op `name` (tools/reference/elementwise.py),
// one SUBCASE each. A case with two inputs is tensor ∘ tensor, broadcasting;
// a case with one input has a float operand, which the case's name looks up
// in `with_float` (the float is in the script, not in the data).
void check_binary_against_torch(const std::string& name, TensorOp op, const FloatCases& with_float = {}) {
  for (const std::string& c : reference_cases("elementwise", name + "/")) {
    SUBCASE(c.c_str()) {
      check_against_torch("elementwise", c, [&](const Inputs& x, const RefCase&) {
        auto f = with_float.find(c);
        if (f != with_float.end()) return f->second(x.at(0));
        REQUIRE_MESSAGE(x.size() == 2, c << " has " << x.size() << " inputs: a float case needs a with_float entry");
        return op(x[0], x[1]);
      });
    }
  }
}

// A binary op's gradchecks over broadcasting shapes, and its shape error.
void check_binary(const std::string& name, TensorOp op, bool positive_b) {
  SUBCASE("gradcheck") {
    Generator gen(1);
    auto f = [op](const Inputs& x) { return op(x[0], x[1]); };
    auto b = [&](Shape s) { return positive_b ? positive(s, gen) : randn(s, gen); };
    check_gradient(f, {randn({3, 5}, gen), b({3, 5})});
    check_gradient(f, {randn({3, 7}, gen), b({7})});
    check_gradient(f, {randn({1, 5}, gen), b({3, 1})});
    check_gradient(f, {randn({2, 3, 5}, gen), b({2, 3, 1})});
    check_gradient(f, {randn({5}, gen), b({7, 1, 5})});
    check_gradient(f, {randn({3, 1, 5}, gen), b({})});
    // Only size-1 dims apart: the output's numbers are the operand's, not a sum of copies.
    check_gradient(f, {randn({5}, gen), b({1, 5})});
    check_gradient(f, {randn({1, 1}, gen), b({3})});
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(op(zeros({2, 3}), ones({4})),
                         doctest::Contains((name + ": shapes (2, 3) and (4) do not broadcast").c_str()), qkv::Error);
    CHECK_THROWS_WITH_AS(op(zeros({2, 1, 5}), ones({3, 4})),
                         doctest::Contains((name + ": shapes (2, 1, 5) and (3, 4)").c_str()), qkv::Error);
  }
}

// Every torch case of the unary op `name`, and a gradcheck on odd shapes.
void check_unary(const std::string& name, Tensor (*op)(const Tensor&), Tensor (*make)(Shape, Generator&)) {
  for (const std::string& c : reference_cases("elementwise", name + "/")) {
    SUBCASE(c.c_str()) {
      check_against_torch("elementwise", c, [op](const Inputs& x, const RefCase&) { return op(x[0]); });
    }
  }
  SUBCASE("gradcheck") {
    Generator gen(2);
    auto f = [op](const Inputs& x) { return op(x[0]); };
    check_gradient(f, {make({3, 5}, gen)});
    check_gradient(f, {make({7}, gen)});
    check_gradient(f, {make({1, 3, 1}, gen)});
  }
}

Tensor normal(Shape shape, Generator& gen) { return randn(std::move(shape), gen); }

// out = a·b by the definition of broadcasting: for each output index, an
// input's index is the same index with its leading dims dropped and its
// size-1 dims read at 0. Slow and plain, to check the row walker against.
Tensor naive_mul(const Tensor& a, const Tensor& b, const Shape& shape) {
  Tensor out = Tensor::empty(shape);
  auto offset = [&](const Shape& s, const std::vector<int64_t>& index) {
    int64_t off = 0;
    for (int64_t d = 0; d < s.ndim(); ++d) {
      int64_t i = index[static_cast<size_t>(d + shape.ndim() - s.ndim())];
      off = off * s[d] + (s[d] == 1 ? 0 : i);
    }
    return off;
  };
  std::vector<int64_t> index(static_cast<size_t>(shape.ndim()));
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    int64_t rest = flat;
    for (int64_t d = shape.ndim() - 1; d >= 0; --d) {
      index[static_cast<size_t>(d)] = rest % shape[d];
      rest /= shape[d];
    }
    out.data()[flat] = a.data()[offset(a.shape(), index)] * b.data()[offset(b.shape(), index)];
  }
  return out;
}

}  // namespace

// --- binary ops ---------------------------------------------------------------

TEST_CASE("ops/add") {
  TensorOp op = [](const Tensor& a, const Tensor& b) { return add(a, b); };
  check_binary_against_torch("add", op, {{"add/float", [](const Tensor& x) { return add(x, 1.5f); }}});
  check_binary("add", op, false);
  SUBCASE("float gradcheck") {
    Generator gen(3);
    check_gradient([](const Inputs& x) { return add(x[0], 1.5f); }, {randn({3, 5}, gen)});
  }
  SUBCASE("empty") {  // (0, 3) + (3) -> (0, 3): nothing to compute, but the shape is right
    Tensor y = add(zeros({0, 3}), ones({3}));
    CHECK(y.shape() == Shape{0, 3});
  }
  SUBCASE("an operand that differs from the output only by size-1 dims") {
    // d Σ(a + b)/db = 1 for every element of b (mathematics): (3) + (1, 3) -> (1, 3)
    Tensor a = tensor({1, 2, 3}).reshape({1, 3});
    Tensor b = zeros({3}).requires_grad_();
    sum(add(b, a)).backward();
    CHECK(b.grad().to_vector() == std::vector<float>{1, 1, 1});
    CHECK(sum_to(a, {3}).to_vector() == std::vector<float>{1, 2, 3});
  }
  SUBCASE("constant operand gets no gradient") {
    Tensor a = ones({2, 3}).requires_grad_();
    Tensor b = ones({3});
    sum(add(a, b)).backward();
    CHECK(a.grad().defined());
    CHECK_FALSE(b.grad().defined());
  }
}

TEST_CASE("ops/sub") {
  TensorOp op = [](const Tensor& a, const Tensor& b) { return sub(a, b); };
  check_binary_against_torch("sub", op,
                             {{"sub/float", [](const Tensor& x) { return sub(x, 1.5f); }},
                              {"sub/float_first", [](const Tensor& x) { return sub(2.5f, x); }}});
  check_binary("sub", op, false);
  SUBCASE("float gradcheck") {
    Generator gen(4);
    check_gradient([](const Inputs& x) { return sub(x[0], 1.5f); }, {randn({3, 5}, gen)});
    check_gradient([](const Inputs& x) { return sub(2.5f, x[0]); }, {randn({3, 5}, gen)});
  }
}

TEST_CASE("ops/mul") {
  TensorOp op = [](const Tensor& a, const Tensor& b) { return mul(a, b); };
  check_binary_against_torch("mul", op, {{"mul/float", [](const Tensor& x) { return mul(x, -0.75f); }}});
  check_binary("mul", op, false);
  SUBCASE("float gradcheck") {
    Generator gen(5);
    check_gradient([](const Inputs& x) { return mul(x[0], -0.75f); }, {randn({3, 5}, gen)});
  }
  SUBCASE("random broadcasts against naive indexing") {
    // Random output shapes of up to 5 dims; each input keeps a random number
    // of trailing dims, each either the output's size or 1.
    Generator gen(9);
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<int64_t> out_dims(static_cast<size_t>(gen.randint(0, 6)));
      for (auto& d : out_dims) d = std::vector<int64_t>{1, 2, 3, 5}[static_cast<size_t>(gen.randint(0, 4))];
      auto input_shape = [&] {
        size_t keep = static_cast<size_t>(gen.randint(0, static_cast<int64_t>(out_dims.size()) + 1));
        std::vector<int64_t> dims(out_dims.end() - static_cast<std::ptrdiff_t>(keep), out_dims.end());
        for (auto& d : dims)
          if (gen.randint(0, 3) == 0) d = 1;
        return Shape(dims);
      };
      Shape sa = input_shape(), sb = input_shape();
      CAPTURE(sa.str());
      CAPTURE(sb.str());
      Tensor a = randn(sa, gen), b = randn(sb, gen);
      Shape shape = broadcast_shapes(sa, sb, "test");
      check_close(mul(a, b), naive_mul(a, b, shape), "mul");
    }
  }
  SUBCASE("same tensor twice") {  // d(x·x)/dx = 2x (mathematics): both uses add up
    Tensor x = tensor({1, -2, 3}).requires_grad_();
    sum(mul(x, x)).backward();
    check_close(x.grad(), tensor({2, -4, 6}), "d(x·x)/dx");
  }
}

TEST_CASE("ops/div") {
  TensorOp op = [](const Tensor& a, const Tensor& b) { return div(a, b); };
  check_binary_against_torch("div", op,
                             {{"div/float", [](const Tensor& x) { return div(x, 3.0f); }},
                              {"div/float_first", [](const Tensor& x) { return div(2.0f, x); }}});
  check_binary("div", op, true);
  SUBCASE("float gradcheck") {
    Generator gen(6);
    check_gradient([](const Inputs& x) { return div(x[0], 3.0f); }, {randn({3, 5}, gen)});
    check_gradient([](const Inputs& x) { return div(2.0f, x[0]); }, {positive({3, 5}, gen)});
  }
}

TEST_CASE("ops/pow") {
  // The float exponents of elementwise.py's pow cases; its pow/tensor* cases
  // raise a tensor to a tensor.
  FloatCases with_float;
  for (auto [c, p] : {std::pair{"pow/square", 2.0f},
                      {"pow/cube", 3.0f},
                      {"pow/half", 0.5f},
                      {"pow/negative", -1.5f},
                      {"pow/zero", 0.0f}})
    with_float[c] = [p = p](const Tensor& x) { return pow(x, p); };
  check_binary_against_torch(
      "pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, with_float);
  SUBCASE("gradcheck") {
    Generator gen(7);
    for (float p : {2.0f, 3.0f, 0.5f, -1.5f}) {
      CAPTURE(p);
      check_gradient([p](const Inputs& x) { return pow(x[0], p); }, {positive({3, 5}, gen)});
    }
    check_gradient([](const Inputs& x) { return pow(x[0], 3.0f); }, {randn({7}, gen)});  // negative bases
    auto f = [](const Inputs& x) { return pow(x[0], x[1]); };
    check_gradient(f, {positive({3, 5}, gen), randn({3, 5}, gen)});
    check_gradient(f, {positive({3, 7}, gen), randn({7}, gen)});
    check_gradient(f, {positive({2, 3, 1}, gen), randn({3, 5}, gen)});
  }
  SUBCASE("at zero") {
    // Mathematics (and PyTorch): d(x⁰)/dx = 0 even at x = 0; for a = 0 and
    // b = 2, y = 0, dy/da = b·a^(b-1) = 0 and dy/db = a^b·ln a → 0.
    Tensor x = tensor({0, 1, -2}).requires_grad_();
    sum(pow(x, 0.0f)).backward();
    check_close(x.grad(), tensor({0, 0, 0}), "d(x^0)/dx");
    Tensor a = tensor({0}).requires_grad_();
    Tensor b = tensor({2}).requires_grad_();
    Tensor y = pow(a, b);
    check_close(y, tensor({0}), "0^2");
    sum(y).backward();
    check_close(a.grad(), tensor({0}), "d(a^b)/da at a = 0");
    check_close(b.grad(), tensor({0}), "d(a^b)/db at a = 0");
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(pow(ones({2, 3}), ones({2})), doctest::Contains("pow: shapes (2, 3) and (2) do not broadcast"),
                         qkv::Error);
  }
}

// --- unary maps ---------------------------------------------------------------

TEST_CASE("ops/neg") {
  check_unary(
      "neg", [](const Tensor& x) { return neg(x); }, normal);
}
TEST_CASE("ops/exp") {
  check_unary(
      "exp", [](const Tensor& x) { return exp(x); }, normal);
}
TEST_CASE("ops/log") {
  check_unary(
      "log", [](const Tensor& x) { return log(x); }, positive);
}
TEST_CASE("ops/sqrt") {
  check_unary(
      "sqrt", [](const Tensor& x) { return sqrt(x); }, positive);
}
TEST_CASE("ops/tanh") {
  check_unary(
      "tanh", [](const Tensor& x) { return tanh(x); }, normal);
}
TEST_CASE("ops/sigmoid") {
  check_unary(
      "sigmoid", [](const Tensor& x) { return sigmoid(x); }, normal);
}
TEST_CASE("ops/gelu") {
  check_unary(
      "gelu", [](const Tensor& x) { return gelu(x); }, normal);
}

TEST_CASE("ops/abs") {
  check_unary(
      "abs", [](const Tensor& x) { return abs(x); }, away_from_zero);
  SUBCASE("gradient 0 at 0") {  // PyTorch's convention: sign(0) = 0
    Tensor x = tensor({-2, 0, 3}).requires_grad_();
    sum(abs(x)).backward();
    check_close(x.grad(), tensor({-1, 0, 1}), "d|x|/dx");
  }
}

TEST_CASE("ops/relu") {
  check_unary(
      "relu", [](const Tensor& x) { return relu(x); }, away_from_zero);
  SUBCASE("gradient 0 at 0") {  // PyTorch's convention
    Tensor x = tensor({-2, 0, 3}).requires_grad_();
    Tensor y = relu(x);
    check_close(y, tensor({0, 0, 3}), "relu");
    sum(y).backward();
    check_close(x.grad(), tensor({0, 0, 1}), "drelu/dx");
  }
}

TEST_CASE("ops/unary undefined input") {
  CHECK_THROWS_AS(exp(Tensor()), qkv::Error);
  CHECK_THROWS_AS(add(Tensor(), 1.0f), qkv::Error);
}

// --- masked_fill --------------------------------------------------------------

TEST_CASE("ops/masked_fill") {
  for (const std::string& c : reference_cases("elementwise", "masked_fill/")) {
    SUBCASE(c.c_str()) {
      check_against_torch("elementwise", c, [](const Inputs& x, const RefCase& rc) {
        return masked_fill(x[0], rc.ints_at("mask"), -1e9f);
      });
    }
  }
  SUBCASE("gradcheck") {
    Generator gen(8);
    IntTensor mask = int_tensor({1, 0, 0, 1, 1}, {5});
    check_gradient([&](const Inputs& x) { return masked_fill(x[0], mask, 2.0f); }, {randn({3, 5}, gen)});
    IntTensor column = int_tensor({0, 1, 1}, {3, 1});
    check_gradient([&](const Inputs& x) { return masked_fill(x[0], column, -1.0f); }, {randn({2, 3, 5}, gen)});
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(masked_fill(zeros({3}), int_tensor({0, 1, 0, 1, 1, 0}, {2, 3}), 0.0f),
                         doctest::Contains("masked_fill: mask of shape (2, 3) does not broadcast to x's shape (3)"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(masked_fill(zeros({2, 3}), int_tensor({0, 1}), 0.0f),
                         doctest::Contains("masked_fill: shapes (2, 3) and (2) do not broadcast"), qkv::Error);
  }
}

// --- operators ----------------------------------------------------------------

TEST_CASE("ops/operators") {
  // Expected values worked out by hand.
  Tensor a = tensor({1, 2, 4});
  Tensor b = tensor({2, 4, 8});
  check_close(a + b, tensor({3, 6, 12}), "a + b");
  check_close(a + 1.0f, tensor({2, 3, 5}), "a + 1");
  check_close(1.0f + a, tensor({2, 3, 5}), "1 + a");
  check_close(a - b, tensor({-1, -2, -4}), "a - b");
  check_close(a - 1.0f, tensor({0, 1, 3}), "a - 1");
  check_close(1.0f - a, tensor({0, -1, -3}), "1 - a");
  check_close(a * b, tensor({2, 8, 32}), "a * b");
  check_close(a * 2.0f, tensor({2, 4, 8}), "a * 2");
  check_close(2.0f * a, tensor({2, 4, 8}), "2 * a");
  check_close(a / b, tensor({0.5f, 0.5f, 0.5f}), "a / b");
  check_close(a / 2.0f, tensor({0.5f, 1, 2}), "a / 2");
  check_close(2.0f / a, tensor({2, 1, 0.5f}), "2 / a");
  check_close(-a, tensor({-1, -2, -4}), "-a");
  // (2, 1) + (3) -> (2, 3)
  check_close(tensor({10, 20}, {2, 1}) + a, tensor({11, 12, 14, 21, 22, 24}, {2, 3}), "(2, 1) + (3)");
}

// --- the test harness ---------------------------------------------------------

TEST_CASE("reference_cases lists an op's cases, and fails when there are none") {
  // The cases tools/reference/elementwise.py writes for sub with a float.
  CHECK(reference_cases("elementwise", "sub/float") == std::vector<std::string>{"sub/float", "sub/float_first"});
  CHECK_THROWS_WITH_AS(reference_cases("elementwise", "no_such_op/"),
                       doctest::Contains("elementwise.txt has no case whose name begins with 'no_such_op/'"),
                       qkv::Error);
}
