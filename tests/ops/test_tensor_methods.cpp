// Tests for the Tensor methods of tensor.hpp (x.sum(-1), q.matmul(k), …):
// each method is a one-line call of the free function of the same name, so
// each must give exactly the free function's output and gradients. One table
// row per method; the inputs are random, so a method that called the wrong
// function (min for max, dim 0 for dim 1) gives different numbers.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <functional>
#include <string>
#include <vector>

#include "reference.hpp"

using namespace qkv;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct MethodCase {
  std::string name;
  Fn method;  // x[0].op(…)
  Fn free;    // op(x[0], …)
  std::vector<Shape> inputs;
  bool positive = false;  // inputs in [0.5, 2.5): for log, sqrt, pow, div
};

// Bit-for-bit equal: the two calls run the same code on the same numbers.
void check_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  REQUIRE_MESSAGE(got.shape() == want.shape(), what << ": shape " << got.shape().str() << " vs " << want.shape().str());
  CHECK_MESSAGE(got.to_vector() == want.to_vector(), what << ": values differ");
}

// Inputs as two sets of leaves holding the same numbers, one for each call.
std::pair<std::vector<Tensor>, std::vector<Tensor>> twin_inputs(const MethodCase& c, Generator& gen) {
  std::vector<Tensor> a, b;
  for (const Shape& s : c.inputs) {
    Tensor x = c.positive ? rand(s, gen) * 2.0f + 0.5f : randn(s, gen);
    a.push_back(Tensor(x.to_vector(), s).requires_grad_());
    b.push_back(Tensor(x.to_vector(), s).requires_grad_());
  }
  return {a, b};
}

const IntTensor MASK = int_tensor({1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1, 0}, {3, 4});
const IntTensor INDEX = int_tensor({2, 0, 2});

// clang-format off
const std::vector<MethodCase> FLOAT_METHODS = {
    // elementwise
    {"add", [](auto& x) { return x[0].add(x[1]); }, [](auto& x) { return add(x[0], x[1]); }, {{3, 4}, {4}}},
    {"add scalar", [](auto& x) { return x[0].add(1.5f); }, [](auto& x) { return add(x[0], 1.5f); }, {{3, 4}}},
    {"sub", [](auto& x) { return x[0].sub(x[1]); }, [](auto& x) { return sub(x[0], x[1]); }, {{3, 4}, {3, 1}}},
    {"sub scalar", [](auto& x) { return x[0].sub(1.5f); }, [](auto& x) { return sub(x[0], 1.5f); }, {{3, 4}}},
    {"mul", [](auto& x) { return x[0].mul(x[1]); }, [](auto& x) { return mul(x[0], x[1]); }, {{3, 4}, {3, 4}}},
    {"mul scalar", [](auto& x) { return x[0].mul(-2.0f); }, [](auto& x) { return mul(x[0], -2.0f); }, {{3, 4}}},
    {"div", [](auto& x) { return x[0].div(x[1]); }, [](auto& x) { return div(x[0], x[1]); }, {{3, 4}, {4}}, true},
    {"div scalar", [](auto& x) { return x[0].div(4.0f); }, [](auto& x) { return div(x[0], 4.0f); }, {{3, 4}}},
    {"pow", [](auto& x) { return x[0].pow(x[1]); }, [](auto& x) { return pow(x[0], x[1]); }, {{3, 4}, {3, 4}}, true},
    {"pow scalar", [](auto& x) { return x[0].pow(3.0f); }, [](auto& x) { return pow(x[0], 3.0f); }, {{3, 4}}, true},
    {"neg", [](auto& x) { return x[0].neg(); }, [](auto& x) { return neg(x[0]); }, {{3, 4}}},
    {"exp", [](auto& x) { return x[0].exp(); }, [](auto& x) { return exp(x[0]); }, {{3, 4}}},
    {"log", [](auto& x) { return x[0].log(); }, [](auto& x) { return log(x[0]); }, {{3, 4}}, true},
    {"sqrt", [](auto& x) { return x[0].sqrt(); }, [](auto& x) { return sqrt(x[0]); }, {{3, 4}}, true},
    {"abs", [](auto& x) { return x[0].abs(); }, [](auto& x) { return abs(x[0]); }, {{3, 4}}},
    {"tanh", [](auto& x) { return x[0].tanh(); }, [](auto& x) { return tanh(x[0]); }, {{3, 4}}},
    {"sigmoid", [](auto& x) { return x[0].sigmoid(); }, [](auto& x) { return sigmoid(x[0]); }, {{3, 4}}},
    {"relu", [](auto& x) { return x[0].relu(); }, [](auto& x) { return relu(x[0]); }, {{3, 4}}},
    {"masked_fill", [](auto& x) { return x[0].masked_fill(MASK, -7.0f); },
                    [](auto& x) { return masked_fill(x[0], MASK, -7.0f); }, {{2, 3, 4}}},
    // reductions
    {"sum", [](auto& x) { return x[0].sum(); }, [](auto& x) { return sum(x[0]); }, {{3, 4}}},
    {"sum dim", [](auto& x) { return x[0].sum(-1); }, [](auto& x) { return sum(x[0], -1); }, {{2, 3, 4}}},
    {"sum keepdim", [](auto& x) { return x[0].sum(1, true); }, [](auto& x) { return sum(x[0], 1, true); }, {{2, 3, 4}}},
    {"mean", [](auto& x) { return x[0].mean(); }, [](auto& x) { return mean(x[0]); }, {{3, 4}}},
    {"mean dim", [](auto& x) { return x[0].mean(0); }, [](auto& x) { return mean(x[0], 0); }, {{2, 3, 4}}},
    {"mean keepdim", [](auto& x) { return x[0].mean(-1, true); }, [](auto& x) { return mean(x[0], -1, true); },
                     {{2, 3, 4}}},
    {"max", [](auto& x) { return x[0].max(); }, [](auto& x) { return max(x[0]); }, {{3, 4}}},
    {"max dim", [](auto& x) { return x[0].max(1); }, [](auto& x) { return max(x[0], 1); }, {{2, 3, 4}}},
    {"max keepdim", [](auto& x) { return x[0].max(-1, true); }, [](auto& x) { return max(x[0], -1, true); },
                    {{2, 3, 4}}},
    {"min", [](auto& x) { return x[0].min(); }, [](auto& x) { return min(x[0]); }, {{3, 4}}},
    {"min dim", [](auto& x) { return x[0].min(1); }, [](auto& x) { return min(x[0], 1); }, {{2, 3, 4}}},
    {"min keepdim", [](auto& x) { return x[0].min(0, true); }, [](auto& x) { return min(x[0], 0, true); },
                    {{2, 3, 4}}},
    // softmax
    {"softmax", [](auto& x) { return x[0].softmax(-1); }, [](auto& x) { return softmax(x[0], -1); }, {{2, 3, 4}}},
    {"softmax dim 1", [](auto& x) { return x[0].softmax(1); }, [](auto& x) { return softmax(x[0], 1); }, {{2, 3, 4}}},
    {"log_softmax", [](auto& x) { return x[0].log_softmax(0); }, [](auto& x) { return log_softmax(x[0], 0); },
                    {{2, 3, 4}}},
    // linalg
    {"matmul", [](auto& x) { return x[0].matmul(x[1]); }, [](auto& x) { return matmul(x[0], x[1]); },
               {{2, 3, 4}, {4, 5}}},
    {"bmm", [](auto& x) { return x[0].bmm(x[1]); }, [](auto& x) { return bmm(x[0], x[1]); }, {{2, 3, 4}, {2, 4, 5}}},
    // shape ops
    {"reshape", [](auto& x) { return x[0].reshape({4, -1}); }, [](auto& x) { return reshape(x[0], {4, -1}); },
                {{2, 3, 4}}},
    {"view", [](auto& x) { return x[0].view({6, 4}); }, [](auto& x) { return view(x[0], {6, 4}); }, {{2, 3, 4}}},
    {"flatten", [](auto& x) { return x[0].flatten(); }, [](auto& x) { return flatten(x[0]); }, {{2, 3, 4}}},
    {"flatten dims", [](auto& x) { return x[0].flatten(1, 2); }, [](auto& x) { return flatten(x[0], 1, 2); },
                     {{2, 3, 4, 2}}},
    {"transpose", [](auto& x) { return x[0].transpose(1, 2); }, [](auto& x) { return transpose(x[0], 1, 2); },
                  {{2, 3, 4}}},
    {"permute", [](auto& x) { return x[0].permute({2, 0, 1}); }, [](auto& x) { return permute(x[0], {2, 0, 1}); },
                {{2, 3, 4}}},
    {"squeeze", [](auto& x) { return x[0].squeeze(); }, [](auto& x) { return squeeze(x[0]); }, {{2, 1, 4, 1}}},
    {"squeeze dim", [](auto& x) { return x[0].squeeze(-1); }, [](auto& x) { return squeeze(x[0], -1); },
                    {{2, 1, 4, 1}}},
    {"unsqueeze", [](auto& x) { return x[0].unsqueeze(1); }, [](auto& x) { return unsqueeze(x[0], 1); }, {{2, 3}}},
    {"expand", [](auto& x) { return x[0].expand({2, 3, 4}); }, [](auto& x) { return expand(x[0], {2, 3, 4}); },
               {{3, 1}}},
    {"repeat", [](auto& x) { return x[0].repeat({2, 1, 3}); }, [](auto& x) { return repeat(x[0], {2, 1, 3}); },
               {{3, 2}}},
    {"narrow", [](auto& x) { return x[0].narrow(1, 1, 2); }, [](auto& x) { return narrow(x[0], 1, 1, 2); },
               {{2, 4, 3}}},
    {"slice", [](auto& x) { return x[0].slice(-1, 0, 5, 2); }, [](auto& x) { return slice(x[0], -1, 0, 5, 2); },
              {{2, 6}}},
    {"index_select", [](auto& x) { return x[0].index_select(1, INDEX); },
                     [](auto& x) { return index_select(x[0], 1, INDEX); }, {{2, 4, 3}}},
};
// clang-format on

}  // namespace

TEST_CASE("ops/tensor methods equal their free functions, values and gradients") {
  Generator gen(3);
  for (const MethodCase& c : FLOAT_METHODS) {
    SUBCASE(c.name.c_str()) {
      auto [a, b] = twin_inputs(c, gen);
      Tensor y_method = c.method(a);
      Tensor y_free = c.free(b);
      check_equal(y_method, y_free.detach(), c.name + " out");
      Tensor dy = randn(y_free.shape(), gen);
      y_method.backward(dy);
      y_free.backward(dy);
      for (size_t i = 0; i < a.size(); ++i)
        check_equal(a[i].grad(), b[i].grad(), c.name + " grad x" + std::to_string(i));
    }
  }
}

TEST_CASE("ops/tensor methods that return indices or pieces equal their free functions") {
  Generator gen(4);
  Tensor x = randn({3, 5, 4}, gen);
  CHECK(x.argmax().to_vector() == argmax(x).to_vector());
  CHECK(x.argmax(1).to_vector() == argmax(x, 1).to_vector());
  CHECK(x.argmax(-1, true).shape() == argmax(x, -1, true).shape());
  CHECK(x.argmax(-1, true).to_vector() == argmax(x, -1, true).to_vector());
  CHECK(x.argmin().to_vector() == argmin(x).to_vector());
  CHECK(x.argmin(0).to_vector() == argmin(x, 0).to_vector());
  CHECK(x.argmin(2, true).shape() == argmin(x, 2, true).shape());
  CHECK(x.argmin(2, true).to_vector() == argmin(x, 2, true).to_vector());

  auto check_pieces = [](const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) check_equal(got[i], want[i], "piece " + std::to_string(i));
  };
  check_pieces(x.split(2, 1), split(x, 2, 1));
  check_pieces(x.split({1, 3, 1}, 1), split(x, {1, 3, 1}, 1));
  check_pieces(x.chunk(2, -1), chunk(x, 2, -1));
}

TEST_CASE("ops/argmin of the whole tensor (from mathematics)") {
  // The smallest of [[3, -1, 4], [-5, 9, -5]] is -5, first at flat index 3.
  IntTensor i = argmin(tensor({3, -1, 4, -5, 9, -5}, {2, 3}));
  CHECK(i.shape() == Shape());
  CHECK(i.item() == 3);
  CHECK_THROWS_WITH_AS(argmin(zeros({0, 3})), doctest::Contains("argmin"), Error);
}

TEST_CASE("ops/tensor methods chain as in PyTorch, with gradients") {
  // README, "Using the library": q.matmul(k.transpose(1, 2)).softmax(-1) is
  // softmax(matmul(q, transpose(k, 1, 2)), -1).
  Generator gen(5);
  auto chained = [](const std::vector<Tensor>& x) {
    const Tensor &q = x[0], &k = x[1];
    return q.matmul(k.transpose(1, 2)).softmax(-1);  // (B, Q, D) x (B, D, K) -> (B, Q, K)
  };
  auto nested = [](const std::vector<Tensor>& x) { return softmax(matmul(x[0], transpose(x[1], 1, 2)), -1); };
  auto r = gradcheck(chained, {randn({2, 3, 4}, gen), randn({2, 5, 4}, gen)});
  CHECK_MESSAGE(r.ok, r.message);

  MethodCase c{"chain", chained, nested, {{2, 3, 4}, {2, 5, 4}}};
  auto [a, b] = twin_inputs(c, gen);
  Tensor y1 = chained(a), y2 = nested(b);
  check_equal(y1, y2.detach(), "out");
  Tensor dy = randn({2, 3, 5}, gen);
  y1.backward(dy);
  y2.backward(dy);
  check_equal(a[0].grad(), b[0].grad(), "dq");
  check_equal(a[1].grad(), b[1].grad(), "dk");
}
