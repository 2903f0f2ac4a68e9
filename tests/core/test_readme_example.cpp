// The "adding an op" example from README.md, compiled and tested as written.
// Keep the two in step: the README quotes `cube` and its test verbatim.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

using namespace qkv;

// y = x³      dy/dx = 3x²
Tensor cube(const Tensor& x) {
  Tensor out = mul(mul(x.detach(), x.detach()), x.detach());  // forward, without recording
  record(out, "CubeBackward", {x}, [x](const Tensor& dout) -> std::vector<Tensor> {
    return {mul(dout, mul(mul(x, x), 3.0f))};  // dx = dout · 3x²
  });
  return out;
}

TEST_CASE("readme/cube") {
  Generator gen(0);
  auto result = gradcheck([](const std::vector<Tensor>& x) { return cube(x[0]); }, {randn({3, 4}, gen)});
  CHECK_MESSAGE(result.ok, result.message);
  // Mathematics: d(Σx³)/dx at x = 2 is 3·2² = 12.
  Tensor x = tensor({2.0f}).requires_grad_();
  sum(cube(x)).backward();
  CHECK(x.grad().item() == 12.0f);
}

// README.md "A first look", as written there.
TEST_CASE("readme/first look") {
  Generator gen(0);
  Tensor x = randn({2, 3}, gen).requires_grad_();
  Tensor w = randn({3, 4}, gen).requires_grad_();
  Tensor loss = mean(softmax(matmul(x, w), -1));  // (2, 3) x (3, 4) -> (2, 4) -> ()
  loss.backward();
  fmt::print("{}\n{}\n", loss, w.grad());
  // Mathematics: each softmax row sums to 1, so the mean of 8 weights is 1/4
  // whatever w is, and its gradient is zero.
  CHECK(loss.item() == doctest::Approx(0.25));
  for (float g : w.grad().to_vector()) CHECK(g == doctest::Approx(0.0).epsilon(1e-6));
}
