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

// README.md, its first example: a tensor, an attention call and its backward.
TEST_CASE("docs/README: attention on the first screen") {
  Generator gen(0);
  Tensor queries = randn({2, 1, 2}, gen);                           // (B, Q, d): one query per example
  Tensor keys = ones({2, 10, 2});                                   // (B, K, d): ten equal keys
  Tensor values = arange(80).reshape({2, 10, 4}).requires_grad_();  // (B, K, dv)
  IntTensor valid_lens = int_tensor({2, 6});                        // example 0 sees 2 keys, example 1 sees 6
  // softmax(Q Kᵀ / √d) V, the keys past each example's valid length masked out
  Tensor out = scaled_dot_product_attention(queries, keys, values, valid_lens);  // (B, Q, dv) = (2, 1, 4)
  out.sum().backward();
  fmt::print("{}\n{}\n", out, values.grad());
  // Equal keys get equal weights, so out is the mean of the values a query may see:
  // [[2, 3, 4, 5]] and [[50, 51, 52, 53]]. values.grad holds those weights: 1/2 on
  // example 0's first 2 rows, 1/6 on example 1's first 6, and 0 on the masked rows.

  // Mathematics: every score q·k/√d of a query is the same, so its softmax over
  // the n valid keys is 1/n each. values row r (of the 20 = 2·10 rows) is
  // [4r, 4r+1, 4r+2, 4r+3]: example 0 averages rows 0-1 (mean r 0.5 -> 2, 3, 4,
  // 5), example 1 rows 10-15 (mean r 12.5 -> 50, 51, 52, 53). d(sum out)/d(value
  // row) is the weight that row gets.
  REQUIRE(out.shape() == Shape{2, 1, 4});
  for (int64_t j = 0; j < 4; ++j) {
    CHECK(out.at({0, 0, j}) == doctest::Approx(static_cast<double>(2 + j)).epsilon(1e-6));
    CHECK(out.at({1, 0, j}) == doctest::Approx(static_cast<double>(50 + j)).epsilon(1e-6));
  }
  REQUIRE(values.grad().shape() == Shape{2, 10, 4});
  for (int64_t b = 0; b < 2; ++b) {
    const int64_t n = b == 0 ? 2 : 6;
    for (int64_t k = 0; k < 10; ++k)
      for (int64_t j = 0; j < 4; ++j)
        CHECK(values.grad().at({b, k, j}) == doctest::Approx(k < n ? 1.0 / static_cast<double>(n) : 0.0).epsilon(1e-6));
  }
}

// README.md, "Using the library".
TEST_CASE("docs/README: using the library (a loss and its gradient)") {
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
