// Tests for src/ops/linalg.cpp: matmul, bmm (plain and with MatmulOptions'
// transposes) and linear.
// Against PyTorch (tests/reference/linalg.txt, made by tools/reference/linalg.py:
// every one of matmul's rules), by gradcheck, against a plain double-precision
// triple loop on sizes that cross the GEMM kernel's cache blocks, from
// mathematics (identity, a 2x2 product), and their errors.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <string>
#include <vector>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_against_torch;
using qkv::test::check_close;
using qkv::test::RefCase;
using qkv::test::reference_cases;

namespace {

// C = A·B for row-major (M, K)·(K, N), or with A and/or B read transposed,
// summed in double: the definition of a matrix product, written out.
Tensor naive_product(const Tensor& A, bool trans_a, const Tensor& B, bool trans_b) {
  const int64_t M = trans_a ? A.size(1) : A.size(0), K = trans_a ? A.size(0) : A.size(1);
  const int64_t N = trans_b ? B.size(0) : B.size(1);
  std::vector<float> c(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += static_cast<double>(trans_a ? A.at({k, i}) : A.at({i, k})) * (trans_b ? B.at({j, k}) : B.at({k, j}));
      c[static_cast<size_t>(i * N + j)] = static_cast<float>(s);
    }
  return Tensor(c, {M, N});
}

// Matrix i of a 3-D tensor, copied out (without qkv's ops, which are under test).
Tensor matrix(const Tensor& x, int64_t i) {
  const int64_t rows = x.size(1), cols = x.size(2);
  const float* start = x.data() + i * rows * cols;
  return Tensor(std::vector<float>(start, start + rows * cols), {rows, cols});
}

// "matmul_t/ab_blocks" -> both transposed: the flags before the '_' of a
// matmul_t/ or bmm_t/ case name (tools/reference/linalg.py).
MatmulOptions options_of(const std::string& name) {
  const std::string flags = name.substr(name.find('/') + 1, name.find('_', name.find('/')) - name.find('/') - 1);
  return {.transpose_a = flags.find('a') != std::string::npos, .transpose_b = flags.find('b') != std::string::npos};
}

void gradcheck_transposed(const Shape& a, const Shape& b, MatmulOptions options, uint64_t seed) {
  SUBCASE(fmt::format("{}{} x {}{}", a, options.transpose_a ? "ᵀ" : "", b, options.transpose_b ? "ᵀ" : "").c_str()) {
    Generator gen(seed);
    auto r = gradcheck([options](const std::vector<Tensor>& x) { return matmul(x[0], x[1], options); },
                       {randn(a, gen), randn(b, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
}

void gradcheck_pair(const Shape& a, const Shape& b, uint64_t seed) {
  SUBCASE(fmt::format("{} x {}", a, b).c_str()) {
    Generator gen(seed);
    auto r = gradcheck([](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); }, {randn(a, gen), randn(b, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
}

}  // namespace

TEST_CASE("ops/matmul") {
  for (const std::string& name : reference_cases("linalg", "matmul/")) {
    SUBCASE(name.c_str()) {
      // Sums of up to 40 float products: allow float32 rounding against torch's float64.
      check_against_torch(
          "linalg", name, [](const std::vector<Tensor>& x, const RefCase&) { return matmul(x[0], x[1]); }, 1e-4f,
          1e-4f);
    }
  }

  gradcheck_pair({5}, {5}, 1);
  gradcheck_pair({3}, {3, 5}, 2);
  gradcheck_pair({4, 3}, {3}, 3);
  gradcheck_pair({5}, {2, 5, 3}, 4);
  gradcheck_pair({2, 3, 5}, {5}, 5);
  gradcheck_pair({3, 5}, {5, 7}, 6);
  gradcheck_pair({2, 3, 5}, {5, 4}, 7);
  gradcheck_pair({3, 5}, {2, 5, 4}, 8);
  gradcheck_pair({2, 1, 3, 5}, {3, 5, 2}, 9);
  gradcheck_pair({1, 3, 2, 5}, {2, 1, 5, 3}, 10);

  SUBCASE("by hand") {  // [[1 2] [3 4]]·[[5 6] [7 8]] = [[19 22] [43 50]]; x·I = x
    Tensor a = tensor({1, 2, 3, 4}, {2, 2}), b = tensor({5, 6, 7, 8}, {2, 2});
    CHECK(matmul(a, b).to_vector() == std::vector<float>{19, 22, 43, 50});
    CHECK(matmul(tensor({1, 2, 3}), tensor({4, 5, 6})).shape() == Shape());
    CHECK(matmul(tensor({1, 2, 3}), tensor({4, 5, 6})).item() == 32);
    Generator gen(0);
    Tensor x = randn({2, 3, 5}, gen);
    CHECK(matmul(x, eye(5)).to_vector() == x.to_vector());
  }

  SUBCASE("empty inner size") {  // a sum of no terms: zeros, gradients zeros too
    Tensor a = zeros({3, 0}).requires_grad_(), b = zeros({0, 4}).requires_grad_();
    Tensor c = matmul(a, b);
    CHECK(c.shape() == Shape{3, 4});
    CHECK(c.to_vector() == std::vector<float>(12, 0.0f));
    c.backward(ones({3, 4}));
    CHECK(a.grad().shape() == Shape{3, 0});
  }

  SUBCASE("only the input that requires grad gets one") {
    Generator gen(2);
    Tensor a = randn({2, 3, 4}, gen).requires_grad_(), b = randn({4, 5}, gen);
    matmul(a, b).backward(ones({2, 3, 5}));
    CHECK(a.grad().defined());
    CHECK_FALSE(b.grad().defined());
  }

  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({4, 5})),
                         doctest::Contains("matmul: (2, 3) x (4, 5): inner sizes 3 and 4 differ"), Error);
    CHECK_THROWS_WITH_AS(matmul(zeros({3}), zeros({4})),
                         doctest::Contains("matmul: (3) x (4): inner sizes 3 and 4 differ"), Error);
    CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({2})),
                         doctest::Contains("matmul: (2, 3) x (2): inner sizes 3 and 2 differ"), Error);
    CHECK_THROWS_WITH_AS(matmul(zeros({5, 2, 3}), zeros({5, 4, 4})),
                         doctest::Contains("matmul: (5, 2, 3) x (5, 4, 4): inner sizes 3 and 4 differ"), Error);
    CHECK_THROWS_WITH_AS(matmul(zeros({2, 2, 3}), zeros({5, 3, 4})),
                         doctest::Contains("matmul: (2, 2, 3) x (5, 3, 4): batch dims (2) and (5) do not broadcast"),
                         Error);
    CHECK_THROWS_WITH_AS(matmul(scalar_tensor(2), zeros({3})),
                         doctest::Contains("matmul: () x (3): both operands need at least 1 dim"), Error);
    CHECK_THROWS_WITH_AS(matmul(zeros({3}), scalar_tensor(2)),
                         doctest::Contains("matmul: (3) x (): both operands need at least 1 dim"), Error);
  }
}

// matmul(a, b, options) is op(a)·op(b), op(x) = x.transpose(-2, -1) when
// its flag is set: against torch (which transposes, then multiplies), by
// gradcheck, and against qkv's own transpose-then-matmul.
TEST_CASE("ops/matmul with transposed operands") {
  for (const std::string& name : reference_cases("linalg", "matmul_t/")) {
    SUBCASE(name.c_str()) {
      const MatmulOptions options = options_of(name);
      check_against_torch(
          "linalg", name,
          [options](const std::vector<Tensor>& x, const RefCase&) { return matmul(x[0], x[1], options); }, 1e-4f,
          1e-4f);
    }
  }

  gradcheck_transposed({5, 3}, {5, 4}, {.transpose_a = true}, 11);
  gradcheck_transposed({3, 5}, {4, 5}, {.transpose_b = true}, 12);
  gradcheck_transposed({2, 3, 5}, {4, 5}, {.transpose_b = true}, 13);  // folded
  gradcheck_transposed({2, 5, 3}, {5, 4}, {.transpose_a = true}, 14);
  gradcheck_transposed({2, 1, 5, 3}, {3, 4, 5}, {.transpose_a = true, .transpose_b = true}, 15);  // broadcast
  gradcheck_transposed({4}, {3, 4}, {.transpose_b = true}, 16);
  gradcheck_transposed({4, 3}, {4}, {.transpose_a = true}, 17);

  SUBCASE("equals transpose, then matmul, values and gradients") {
    Generator gen(18);
    Tensor q = randn({2, 3, 37, 20}, gen).requires_grad_(), k = randn({3, 29, 20}, gen).requires_grad_();
    Tensor dout = randn({2, 3, 37, 29}, gen);
    Tensor q2 = q.detach().requires_grad_(), k2 = k.detach().requires_grad_();
    Tensor c = matmul(q, k, {.transpose_b = true});  // (2, 3, 37, 20)·(3, 29, 20)ᵀ -> (2, 3, 37, 29)
    Tensor c2 = matmul(q2, transpose(k2, -2, -1));
    c.backward(dout);
    c2.backward(dout);
    check_close(c, c2, "out", 1e-5f, 1e-5f);
    check_close(q.grad(), q2.grad(), "grad q", 1e-5f, 1e-5f);
    check_close(k.grad(), k2.grad(), "grad k (summed over the broadcast dim)", 1e-5f, 1e-5f);
  }

  SUBCASE("empty inner size") {  // a sum of no terms: zeros
    Tensor a = zeros({0, 3}).requires_grad_(), b = zeros({4, 0}).requires_grad_();
    Tensor c = matmul(a, b, {.transpose_a = true, .transpose_b = true});  // (0, 3)ᵀ·(4, 0)ᵀ -> (3, 4)
    CHECK(c.to_vector() == std::vector<float>(12, 0.0f));
    c.backward(ones({3, 4}));
    CHECK(a.grad().shape() == Shape{0, 3});
  }

  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({4, 5}), {.transpose_b = true}),
                         doctest::Contains("matmul: (2, 3) x (4, 5)ᵀ: inner sizes 3 and 5 differ"), Error);
    CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({2, 5}), {.transpose_a = true, .transpose_b = true}),
                         doctest::Contains("matmul: (2, 3)ᵀ x (2, 5)ᵀ: inner sizes 2 and 5 differ"), Error);
    CHECK_THROWS_WITH_AS(matmul(zeros({3}), zeros({3, 4}), {.transpose_a = true}),
                         doctest::Contains("matmul: (3) x (3, 4): transpose_a needs an operand with at least 2 dims"),
                         Error);
    CHECK_THROWS_WITH_AS(matmul(zeros({4, 3}), zeros({3}), {.transpose_b = true}),
                         doctest::Contains("matmul: (4, 3) x (3): transpose_b needs an operand with at least 2 dims"),
                         Error);
    CHECK_THROWS_WITH_AS(matmul(zeros({2, 3, 4}), zeros({5, 6, 4}), {.transpose_b = true}),
                         doctest::Contains("matmul: (2, 3, 4) x (5, 6, 4)ᵀ: batch dims (2) and (5) do not broadcast"),
                         Error);
  }
}

// The GEMM kernel cuts K into slices of 256 and M into blocks of 96: sizes past
// both, forward and backward (dA = dC·Bᵀ, dB = Aᵀ·dC), against the naive loop.
TEST_CASE("ops/matmul large, against the definition") {
  Generator gen(7);
  SUBCASE("folded (B, T, K)·(K, N), the Linear path") {
    Tensor a = randn({2, 61, 300}, gen).requires_grad_(), b = randn({300, 37}, gen).requires_grad_();
    Tensor dout = randn({2, 61, 37}, gen);
    Tensor c = matmul(a, b);
    c.backward(dout);
    // The same numbers seen as matrices of all 122 rows (copied, not through reshape).
    Tensor a2(a.to_vector(), {122, 300}), d2(dout.to_vector(), {122, 37});
    check_close(Tensor(c.to_vector(), {122, 37}), naive_product(a2, false, b, false), "out", 1e-4f, 1e-3f);
    check_close(Tensor(a.grad().to_vector(), {122, 300}), naive_product(d2, false, b, true), "grad a", 1e-4f, 1e-3f);
    check_close(b.grad(), naive_product(a2, true, d2, false), "grad b", 1e-4f, 1e-3f);
  }
  SUBCASE("batched, right side broadcast over the batch") {
    Tensor a = randn({3, 100, 20}, gen).requires_grad_(), b = randn({1, 20, 70}, gen).requires_grad_();
    Tensor dout = randn({3, 100, 70}, gen);
    Tensor c = matmul(a, b);
    c.backward(dout);
    Tensor b2 = matrix(b, 0);
    std::vector<float> db(20 * 70, 0.0f);  // Σᵢ a[i]ᵀ·dout[i]: b was used by every batch
    for (int64_t i = 0; i < 3; ++i) {
      INFO("batch " << i);
      check_close(matrix(c, i), naive_product(matrix(a, i), false, b2, false), "out", 1e-4f, 1e-3f);
      check_close(matrix(a.grad(), i), naive_product(matrix(dout, i), false, b2, true), "grad a", 1e-4f, 1e-3f);
      std::vector<float> part = naive_product(matrix(a, i), true, matrix(dout, i), false).to_vector();
      for (size_t k = 0; k < db.size(); ++k) db[k] += part[k];
    }
    check_close(b.grad(), Tensor(db, {1, 20, 70}), "grad b", 1e-4f, 1e-3f);
  }
}

TEST_CASE("ops/bmm") {
  for (const std::string& name : reference_cases("linalg", "bmm/")) {
    SUBCASE(name.c_str()) {
      check_against_torch("linalg", name, [](const std::vector<Tensor>& x, const RefCase&) { return bmm(x[0], x[1]); });
    }
  }
  for (const std::string& name : reference_cases("linalg", "bmm_t/")) {
    SUBCASE(name.c_str()) {
      const MatmulOptions options = options_of(name);
      check_against_torch("linalg", name,
                          [options](const std::vector<Tensor>& x, const RefCase&) { return bmm(x[0], x[1], options); });
    }
  }
  SUBCASE("gradcheck") {
    Generator gen(3);
    auto r = gradcheck([](const std::vector<Tensor>& x) { return bmm(x[0], x[1]); },
                       {randn({3, 2, 5}, gen), randn({3, 5, 1}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
  SUBCASE("gradcheck, transposed") {
    Generator gen(4);
    auto r = gradcheck(
        [](const std::vector<Tensor>& x) { return bmm(x[0], x[1], {.transpose_a = true, .transpose_b = true}); },
        {randn({3, 5, 2}, gen), randn({3, 4, 5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(bmm(zeros({2, 3}), zeros({2, 3, 4})),
                         doctest::Contains("bmm: (2, 3) x (2, 3, 4): both operands must be 3-d"), Error);
    CHECK_THROWS_WITH_AS(bmm(zeros({2, 3, 4}), zeros({3, 4, 5})),
                         doctest::Contains("bmm: (2, 3, 4) x (3, 4, 5): batch sizes 2 and 3 differ"), Error);
    CHECK_THROWS_WITH_AS(bmm(zeros({1, 3, 4}), zeros({2, 4, 5})), doctest::Contains("batch sizes 1 and 2 differ"),
                         Error);  // no broadcasting
    CHECK_THROWS_WITH_AS(bmm(zeros({2, 3, 4}), zeros({2, 5, 6})),
                         doctest::Contains("bmm: (2, 3, 4) x (2, 5, 6): inner sizes 4 and 5 differ"), Error);
    CHECK_THROWS_WITH_AS(bmm(zeros({2, 3, 4}), zeros({2, 6, 5}), {.transpose_b = true}),
                         doctest::Contains("bmm: (2, 3, 4) x (2, 6, 5)ᵀ: inner sizes 4 and 5 differ"), Error);
  }
}

TEST_CASE("ops/linear") {
  // Against torch's F.linear: inputs (x, weight, bias), or (x, weight) for no bias.
  for (const std::string& name : reference_cases("linalg", "linear/")) {
    SUBCASE(name.c_str()) {
      float atol = name == "linear/3d_bias" ? 1e-4f : 1e-5f;  // 3d_bias sums 17 products per output
      check_against_torch(
          "linalg", name,
          [](const std::vector<Tensor>& x, const RefCase&) {
            return x.size() == 3 ? linear(x[0], x[1], x[2]) : linear(x.at(0), x.at(1));
          },
          1e-4f, atol);
    }
  }
  SUBCASE("gradcheck") {
    Generator gen(5);
    auto r = gradcheck([](const std::vector<Tensor>& x) { return linear(x[0], x[1], x[2]); },
                       {randn({2, 3, 5}, gen), randn({7, 5}, gen), randn({7}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
  SUBCASE("past the kernel's K slices of 256: the bias is added once") {
    // The GEMM adds its product into rows that start as the bias, one K
    // slice at a time: against the definition, y = Σₖ x·Wᵀ + b in double.
    Generator gen(8);
    Tensor x = randn({2, 7, 300}, gen), w = randn({11, 300}, gen), b = randn({11}, gen);
    Tensor y = linear(x, w, b);
    Tensor want = naive_product(Tensor(x.to_vector(), {14, 300}), false, w, true);  // (14, 300)·(11, 300)ᵀ
    std::vector<float> with_bias = want.to_vector();
    for (size_t i = 0; i < with_bias.size(); ++i) with_bias[i] += b.data()[i % 11];
    check_close(Tensor(y.to_vector(), {14, 11}), Tensor(with_bias, {14, 11}), "y", 1e-4f, 1e-3f);
  }
  SUBCASE("equals matmul with the weight transposed, plus the bias") {
    Generator gen(6);
    Tensor x = randn({4, 33}, gen), w = randn({19, 33}, gen), b = randn({19}, gen);
    check_close(linear(x, w, b), add(matmul(x, transpose(w, 0, 1)), b), "linear vs matmul", 1e-5f, 1e-5f);
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(
        linear(zeros({2, 3}), zeros({4, 5})),
        doctest::Contains("linear: input (2, 3) x weight (4, 5): the input has 3 features, the weight expects 5"),
        Error);
    CHECK_THROWS_WITH_AS(linear(zeros({2, 3}), zeros({3})), doctest::Contains("linear: input (2, 3) and weight (3)"),
                         Error);
    CHECK_THROWS_WITH_AS(linear(zeros({2, 3}), zeros({4, 3}), zeros({5})),
                         doctest::Contains("linear: bias (5) does not fit weight (4, 3): expected (4)"), Error);
  }
}
