// The examples of README.md, compiled and run as written there (only the
// CHECKs are added); tests/docs/test_docs.cpp fails if the two part.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

using namespace qkv;

// y = x³      dy/dx = 3x²
Tensor cube(const Tensor& x) {
  Tensor out = mul(mul(x.detach(), x.detach()), x.detach());  // forward, without recording
  record(out, "CubeBackward", /*inputs=*/{x}, /*saved=*/{x},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           Tensor x2 = mul(saved[0], saved[0]);  // x², from the x saved above
           return {mul(dout, mul(x2, 3.0f))};    // dx = dout · 3x²
         });
  return out;
}

TEST_CASE("docs/README: adding an op (cube)") {
  Generator gen(0);
  auto result = gradcheck([](const std::vector<Tensor>& x) { return cube(x[0]); }, {randn({3, 4}, gen)});
  CHECK_MESSAGE(result.ok, result.message);
  // Mathematics: d(Σx³)/dx at x = 2 is 3·2² = 12.
  Tensor x = tensor({2.0f}).requires_grad_();
  sum(cube(x)).backward();
  CHECK(x.grad().item() == 12.0f);
}

// README.md, "A first look".
TEST_CASE("docs/README: a first look") {
  Generator gen(0);
  Tensor x = randn({2, 3}, gen);                   // 2 examples, 3 features
  Tensor w = randn({3, 4}, gen).requires_grad_();  // 4 classes
  IntTensor labels = int_tensor({1, 3});
  Tensor loss = cross_entropy(matmul(x, w), labels);  // (2, 3) x (3, 4) -> (2, 4) -> ()
  loss.backward();
  fmt::print("{}\n{}\n", loss, w.grad());
  // Mathematics: d(loss)/d(logits) = softmax - one_hot sums to 0 along each
  // row, so every row of w.grad = xᵀ·d(logits) sums to 0 too.
  CHECK(loss.item() > 0);
  REQUIRE(w.grad().shape() == Shape{3, 4});
  for (int i = 0; i < 3; ++i) {
    float row = 0;
    for (int j = 0; j < 4; ++j) row += w.grad().at({i, j});
    CHECK(row == doctest::Approx(0.0).epsilon(1e-5));
  }
}
