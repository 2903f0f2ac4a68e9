// Tests for src/ops/softmax.cpp: softmax, log_softmax and d2l's masked_softmax.
// Against PyTorch (tests/reference/softmax.txt, made by tools/reference/softmax.py),
// by gradcheck, against the same function composed from primitive ops, from
// mathematics (logits of ±1e4, d2l's printed example), and their errors.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <cmath>
#include <functional>
#include <string>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_against_torch;
using qkv::test::check_close;
using qkv::test::RefCase;
using qkv::test::reference_cases;

namespace {

using SoftmaxFn = std::function<Tensor(const Tensor&, int64_t)>;

// One SUBCASE per "<op>/…" case of tools/reference/softmax.py (each case holds its dim).
void check_op_against_torch(const std::string& op, const SoftmaxFn& f) {
  for (const std::string& name : reference_cases("softmax", op + "/")) {
    SUBCASE(name.c_str()) {
      check_against_torch("softmax", name, [&](const std::vector<Tensor>& x, const RefCase& c) {
        return f(x[0], c.ints_at("dim").item());
      });
    }
  }
}

struct Along {
  Shape shape;
  int64_t dim;
};
// Odd sizes, negative dims, a dim of size 1 (softmax 1, gradient 0), a 0-d tensor.
const Along GRADCHECK_ALONG[] = {{{3, 5}, -1}, {{3, 5}, 0},     {{2, 3, 5}, 1}, {{2, 3, 5}, -3},
                                 {{7}, 0},     {{1, 3, 1}, -1}, {{4, 37}, -1},  {Shape(), 0}};

void gradcheck_op(const SoftmaxFn& f) {
  Generator gen(11);
  for (const Along& a : GRADCHECK_ALONG) {
    SUBCASE(fmt::format("{} dim {}", a.shape, a.dim).c_str()) {
      auto r = gradcheck([&](const std::vector<Tensor>& x) { return f(x[0], a.dim); }, {randn(a.shape, gen)});
      CHECK_MESSAGE(r.ok, r.message);
    }
  }
}

// The fused op (one kernel, hand-written backward) against the same formula
// composed from primitive ops (whose gradients come from those ops), forward and backward.
void check_against_composed(const SoftmaxFn& fused, const SoftmaxFn& composed) {
  Generator gen(5);
  for (const Along& a : GRADCHECK_ALONG) {
    SUBCASE(fmt::format("{} dim {}", a.shape, a.dim).c_str()) {
      Tensor x1 = randn(a.shape, gen).requires_grad_();
      Tensor x2 = Tensor(x1.to_vector(), a.shape).requires_grad_();
      Tensor y1 = fused(x1, a.dim);
      Tensor y2 = composed(x2, a.dim);
      check_close(y1, y2.detach(), "forward");
      Tensor dy = randn(a.shape, gen);
      y1.backward(dy);
      y2.backward(dy);
      check_close(x1.grad(), x2.grad(), "gradient");
    }
  }
}

bool all_finite(const Tensor& t) {
  for (float v : t.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

const SoftmaxFn SOFTMAX = [](const Tensor& x, int64_t d) { return softmax(x, d); };
const SoftmaxFn LOG_SOFTMAX = [](const Tensor& x, int64_t d) { return log_softmax(x, d); };

}  // namespace

// ---- softmax ---------------------------------------------------------------------

TEST_CASE("ops/softmax against torch") { check_op_against_torch("softmax", SOFTMAX); }
TEST_CASE("ops/softmax gradcheck") { gradcheck_op(SOFTMAX); }

TEST_CASE("ops/softmax equals exp(x - max) / sum(exp(x - max)) composed from primitives") {
  check_against_composed(SOFTMAX, [](const Tensor& x, int64_t d) {
    Tensor e = exp(x - max(x, d, true));
    return e / sum(e, d, true);
  });
}

TEST_CASE("ops/softmax of logits ±1e4 is finite (from mathematics)") {
  // softmax([1e4, -1e4]) = [1, e^-2e4 / (1 + e^-2e4)] = [1, 0] in float32.
  // With y = [1, 0]: dx = y ⊙ (dy - y·dy) = [1·(a - a), 0] = [0, 0].
  Tensor x = tensor({1e4f, -1e4f}, {2}).requires_grad_();
  Tensor y = softmax(x, 0);
  CHECK(y.to_vector() == std::vector<float>{1, 0});
  y.backward(tensor({0.3f, -0.7f}, {2}));
  CHECK(all_finite(x.grad()));
  CHECK(x.grad().to_vector() == std::vector<float>{0, 0});
}

TEST_CASE("ops/softmax errors") {
  CHECK_THROWS_WITH_AS(softmax(zeros({2, 3}), 2), doctest::Contains("softmax: dim 2 out of range"), qkv::Error);
  CHECK_THROWS_WITH_AS(softmax(zeros({2, 3}), -3), doctest::Contains("softmax: dim -3 out of range"), qkv::Error);
}

// ---- log_softmax -------------------------------------------------------------------

TEST_CASE("ops/log_softmax against torch") { check_op_against_torch("log_softmax", LOG_SOFTMAX); }
TEST_CASE("ops/log_softmax gradcheck") { gradcheck_op(LOG_SOFTMAX); }

TEST_CASE("ops/log_softmax equals z - log(sum(exp(z))), z = x - max, composed from primitives") {
  check_against_composed(LOG_SOFTMAX, [](const Tensor& x, int64_t d) {
    Tensor z = x - max(x, d, true);
    return z - log(sum(exp(z), d, true));
  });
}

TEST_CASE("ops/log_softmax of logits ±1e4 is finite (from mathematics)") {
  // log_softmax([1e4, -1e4]) = x - 1e4 - log(1 + e^-2e4) = [0, -2e4].
  // dx = dy - softmax(x)·Σdy = [a, b] - [1, 0]·(a + b) = [-b, b].
  Tensor x = tensor({1e4f, -1e4f}, {2}).requires_grad_();
  Tensor y = log_softmax(x, 0);
  CHECK(y.to_vector() == std::vector<float>{0, -2e4f});
  y.backward(tensor({0.25f, -0.75f}, {2}));
  CHECK(all_finite(x.grad()));
  CHECK(x.grad().to_vector() == std::vector<float>{0.75f, -0.75f});
}

TEST_CASE("ops/log_softmax errors") {
  CHECK_THROWS_WITH_AS(log_softmax(zeros({4}), 1), doctest::Contains("log_softmax: dim 1 out of range"), qkv::Error);
  CHECK_THROWS_WITH_AS(log_softmax(scalar_tensor(0), -2), doctest::Contains("log_softmax: dim -2 out of range"),
                       qkv::Error);
}

// ---- masked_softmax -----------------------------------------------------------------

TEST_CASE("ops/masked_softmax against torch (d2l's function)") {
  for (const std::string& name : reference_cases("softmax", "masked_softmax/")) {
    SUBCASE(name.c_str()) {
      check_against_torch("softmax", name, [](const std::vector<Tensor>& x, const RefCase& c) {
        IntTensor valid_lens = c.has("valid_lens") ? c.ints_at("valid_lens") : IntTensor();
        return masked_softmax(x[0], valid_lens);
      });
    }
  }
}

TEST_CASE("ops/masked_softmax d2l's printed example (from mathematics)") {
  // d2l: masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3])): batch 0
  // keeps 2 keys, batch 1 keeps 3; the rest are 0 and every row sums to 1.
  Generator gen(0);
  Tensor p = masked_softmax(rand({2, 2, 4}, gen), int_tensor({2, 3}));
  REQUIRE(p.shape() == Shape{2, 2, 4});
  for (int64_t b = 0; b < 2; ++b) {
    int64_t valid = b == 0 ? 2 : 3;
    for (int64_t q = 0; q < 2; ++q) {
      float row = 0;
      for (int64_t k = 0; k < 4; ++k) {
        float v = p.at({b, q, k});
        if (k < valid)
          CHECK(v > 0);
        else
          CHECK(v == 0);
        row += v;
      }
      CHECK(row == doctest::Approx(1).epsilon(1e-6));
    }
  }
}

TEST_CASE("ops/masked_softmax gradcheck") {
  Generator gen(13);
  SUBCASE("valid_lens (B)") {
    IntTensor lens = int_tensor({2, 5});
    Tensor x = randn({2, 3, 5}, gen);
    auto r = gradcheck([&](const std::vector<Tensor>& xs) { return masked_softmax(xs[0], lens); }, {x});
    CHECK_MESSAGE(r.ok, r.message);
  }
  SUBCASE("valid_lens (B, Q), with a length 0 and one above K") {
    IntTensor lens = int_tensor({1, 3, 5, 2, 0, 7}, {2, 3});
    Tensor x = randn({2, 3, 5}, gen);
    auto r = gradcheck([&](const std::vector<Tensor>& xs) { return masked_softmax(xs[0], lens); }, {x});
    CHECK_MESSAGE(r.ok, r.message);
  }
}

namespace {

// d2l's masked_softmax as it is written there: a comparison mask and where, then softmax.
Tensor masked_softmax_composed(const Tensor& x, const IntTensor& valid_lens) {
  const int64_t B = x.size(0), Q = x.size(1), K = x.size(2);
  IntTensor lengths = valid_lens.reshape(valid_lens.dim() == 1 ? Shape{B, 1, 1} : Shape{B, Q, 1});
  IntTensor keep = arange_int(0, K) < lengths;  // (K) < (B, 1 or Q, 1) -> (B, 1 or Q, K)
  return softmax(where(keep, x, -1e6f), -1);    // (B, Q, K)
}

}  // namespace

TEST_CASE("ops/masked_softmax equals where(arange(K) < valid_lens, x, -1e6) then softmax") {
  // The op masks while it copies each row; the composition builds the mask and
  // where's output. Forward: the same softmax kernel runs on the same masked
  // row, so the values are equal exactly. Backward: where sends the masked keys
  // no gradient, the op zeroes them; the rest is the same kernel, so exactly equal too.
  Generator gen(17);
  struct Lens {
    IntTensor lens;
    Shape x;
  };
  const Lens cases[] = {{int_tensor({2, 5}), {2, 3, 5}},
                        {int_tensor({1, 3, 5, 2, 0, 7}, {2, 3}), {2, 3, 5}},
                        {int_tensor({0, 10, 4, 37}), {4, 2, 37}}};
  for (const Lens& c : cases) {
    SUBCASE(fmt::format("x {} valid_lens {}", c.x, c.lens.shape()).c_str()) {
      Tensor x1 = randn(c.x, gen).requires_grad_();
      Tensor x2 = Tensor(x1.to_vector(), c.x).requires_grad_();
      Tensor y1 = masked_softmax(x1, c.lens);
      Tensor y2 = masked_softmax_composed(x2, c.lens);
      CHECK(y1.to_vector() == y2.to_vector());
      Tensor dy = randn(c.x, gen);
      y1.backward(dy);
      y2.backward(dy);
      CHECK(x1.grad().to_vector() == x2.grad().to_vector());
    }
  }
}

TEST_CASE("ops/masked_softmax edge lengths (from mathematics)") {
  Tensor x = tensor({0.5f, -1, 2}, {1, 1, 3});
  SUBCASE("length 0: every key is -1e6, so the weights are uniform (d2l's behaviour)") {
    Tensor p = masked_softmax(x, int_tensor({0}));
    for (float v : p.to_vector()) CHECK(v == doctest::Approx(1.0 / 3));
  }
  SUBCASE("a length of K or more is a plain softmax") {
    check_close(masked_softmax(x, int_tensor({3})), softmax(x, -1), "length 3");
    check_close(masked_softmax(x, int_tensor({9}, {1, 1})), softmax(x, -1), "length 9");
  }
  SUBCASE("undefined valid_lens is a plain softmax over the last dim") {
    check_close(masked_softmax(x, IntTensor()), softmax(x, -1), "no valid_lens");
  }
}

TEST_CASE("ops/masked_softmax errors") {
  Tensor x = zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(masked_softmax(x, int_tensor({1, 2, 3})),
                       doctest::Contains("masked_softmax: valid_lens (3) does not fit x (2, 3, 4)"), qkv::Error);
  CHECK_THROWS_WITH_AS(masked_softmax(x, int_tensor({1, 2, 3, 4}, {2, 2})),
                       doctest::Contains("masked_softmax: valid_lens (2, 2) does not fit x (2, 3, 4)"), qkv::Error);
  CHECK_THROWS_WITH_AS(masked_softmax(x, IntTensor::empty({2, 3, 4})),
                       doctest::Contains("masked_softmax: valid_lens (2, 3, 4) does not fit"), qkv::Error);
  CHECK_THROWS_WITH_AS(masked_softmax(zeros({3, 4}), int_tensor({1, 2, 3})),
                       doctest::Contains("masked_softmax: x must be 3-D (B, Q, K), got (3, 4)"), qkv::Error);
  CHECK_THROWS_WITH_AS(masked_softmax(x, int_tensor({2, -1})), doctest::Contains("masked_softmax: valid_lens[1] is -1"),
                       qkv::Error);
  CHECK_THROWS_WITH_AS(masked_softmax(x, int_tensor({2, 1, 0, 3, -2, 1}, {2, 3})),
                       doctest::Contains("masked_softmax: valid_lens[1, 1] is -2"), qkv::Error);
}
