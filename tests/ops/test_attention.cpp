// Tests for src/ops/attention.cpp: scaled_dot_product_attention.
// Against PyTorch (tests/reference/attention.txt, made by
// tools/reference/attention.py), by gradcheck, and against the plain path
// composed from bmm, masked_softmax and bmm, forward and backward, at sizes
// that are not multiples of the kernel's 64 × 64 tiles and with every mask.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_against_torch;
using qkv::test::check_close;
using qkv::test::RefCase;
using qkv::test::reference_cases;

namespace {

struct Mask {
  const char* name;
  bool per_row, per_batch, causal;
};
const Mask MASKS[] = {{"none", false, false, false},
                      {"lens (N)", false, true, false},
                      {"lens (N, Q)", true, false, false},
                      {"causal", false, false, true},
                      {"causal and lens (N, Q)", true, false, true}};

// Lengths for the mask, with 0, 1 and more than K among them.
IntTensor lengths(const Mask& m, int64_t N, int64_t Q, int64_t K) {
  if (m.per_batch) {
    std::vector<int64_t> lens(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) lens[static_cast<size_t>(n)] = std::vector<int64_t>{K - 1, 0, K + 2, 1}[n % 4];
    return IntTensor(lens, {N});
  }
  if (!m.per_row) return {};
  std::vector<int64_t> lens(static_cast<size_t>(N * Q));
  for (int64_t i = 0; i < N * Q; ++i) lens[static_cast<size_t>(i)] = (i * 37 + 5) % (K + 3);
  return IntTensor(lens, {N, Q});
}

// The plain path: the weights (N, Q, K) materialised, as DotProductAttention
// computes them when they are asked for. The causal mask is the 2-D length
// min(len, q + 1) of every row.
Tensor plain_attention(const Tensor& q, const Tensor& k, const Tensor& v, IntTensor lens, bool causal) {
  const int64_t N = q.size(0), Q = q.size(1);
  if (causal) {
    std::vector<int64_t> rows(static_cast<size_t>(N * Q));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < Q; ++i) {
        int64_t end = i + 1;
        if (lens.defined()) end = std::min(end, lens.data()[lens.dim() == 1 ? n : n * Q + i]);
        rows[static_cast<size_t>(n * Q + i)] = end;
      }
    lens = IntTensor(rows, {N, Q});
  }
  Tensor scores = bmm(q, k, {.transpose_b = true}) / std::sqrt(static_cast<float>(q.size(2)));  // (N, Q, K)
  return bmm(masked_softmax(scores, lens), v);                                                  // (N, Q, dv)
}

}  // namespace

TEST_CASE("ops/scaled_dot_product_attention against PyTorch") {
  for (const std::string& name : reference_cases("attention", "scaled_dot_product_attention/")) {
    SUBCASE(name.c_str()) {
      check_against_torch("attention", name, [](const std::vector<Tensor>& x, const RefCase& c) {
        IntTensor lens = c.has("valid_lens") ? c.ints_at("valid_lens") : IntTensor();
        return scaled_dot_product_attention(x[0], x[1], x[2], lens, {.is_causal = c.ints_at("is_causal").item() != 0});
      });
    }
  }
}

TEST_CASE("ops/scaled_dot_product_attention gradcheck") {
  // (N, Q, K, d, dv): one tile and a bit, in queries and in keys.
  const int64_t N = 2, Q = 66, K = 65, d = 3, dv = 2;
  for (const Mask& m : MASKS) {
    SUBCASE(m.name) {
      Generator gen(3);
      const IntTensor lens = lengths(m, N, Q, K);
      for (float p : {0.0f, 0.3f}) {
        CAPTURE(p);
        // With dropout, every call draws its mask's seed from a generator of
        // its own with the same seed: the same mask, so a function of x alone.
        auto r = gradcheck(
            [&](const std::vector<Tensor>& x) {
              Generator mask_gen(17);
              return scaled_dot_product_attention(x[0], x[1], x[2], lens,
                                                  {.dropout_p = p, .is_causal = m.causal, .gen = &mask_gen});
            },
            {randn({N, Q, d}, gen), randn({N, K, d}, gen), randn({N, K, dv}, gen)});
        CHECK_MESSAGE(r.ok, r.message);
      }
    }
  }
}

TEST_CASE("ops/scaled_dot_product_attention equals the plain path") {
  // Several tiles each way, none full; the lessons' head size d = 64 and one that is not a register's multiple.
  struct Size {
    int64_t N, Q, K, d, dv;
  };
  for (const Size s : {Size{3, 130, 129, 64, 64}, Size{2, 70, 200, 17, 5}}) {
    for (const Mask& m : MASKS) {
      if (m.causal && s.Q != s.K) continue;
      SUBCASE(fmt::format("({}, {}, {}, {}, {}) {}", s.N, s.Q, s.K, s.d, s.dv, m.name).c_str()) {
        Generator gen(9);
        const IntTensor lens = lengths(m, s.N, s.Q, s.K);
        Tensor q1 = randn({s.N, s.Q, s.d}, gen).requires_grad_(), k1 = randn({s.N, s.K, s.d}, gen).requires_grad_();
        Tensor v1 = randn({s.N, s.K, s.dv}, gen).requires_grad_(), dout = randn({s.N, s.Q, s.dv}, gen);
        Tensor q2 = q1.detach().clone().requires_grad_(), k2 = k1.detach().clone().requires_grad_();
        Tensor v2 = v1.detach().clone().requires_grad_();
        Tensor fused = scaled_dot_product_attention(q1, k1, v1, lens, {.is_causal = m.causal});
        Tensor plain = plain_attention(q2, k2, v2, lens, m.causal);
        check_close(fused, plain, "out");
        sum(fused * dout).backward();
        sum(plain * dout).backward();
        check_close(q1.grad(), q2.grad(), "dq");
        check_close(k1.grad(), k2.grad(), "dk");
        check_close(v1.grad(), v2.grad(), "dv");
      }
    }
  }
}

TEST_CASE("ops/scaled_dot_product_attention: empty sizes") {
  SUBCASE("no keys: zeros, and zero gradients") {
    Tensor q = ones({2, 3, 4}).requires_grad_(), k = ones({2, 0, 4}), v = ones({2, 0, 5});
    Tensor out = scaled_dot_product_attention(q, k, v);
    CHECK(out.shape() == Shape{2, 3, 5});
    CHECK(sum(out).item() == 0.0f);
    sum(out).backward();
    CHECK(sum(q.grad()).item() == 0.0f);
  }
  SUBCASE("no queries") {
    CHECK(scaled_dot_product_attention(ones({2, 0, 4}), ones({2, 3, 4}), ones({2, 3, 5})).shape() == Shape{2, 0, 5});
  }
}

TEST_CASE("ops/scaled_dot_product_attention errors") {
  const Tensor q = ones({2, 3, 4}), k = ones({2, 5, 4}), v = ones({2, 5, 6});
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(Tensor(), k, v),
                       doctest::Contains("scaled_dot_product_attention: query is an undefined tensor"), qkv::Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(ones({3, 4}), k, v),
                       doctest::Contains("scaled_dot_product_attention: query must be 3-d, got shape (3, 4)"),
                       qkv::Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, ones({3, 5, 4}), v), doctest::Contains("batch sizes differ"),
                       qkv::Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, ones({2, 5, 3}), v),
                       doctest::Contains("query and key sizes 4 and 3 differ"), qkv::Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, ones({2, 4, 6})),
                       doctest::Contains("key (2, 5, 4), value (2, 4, 6): expected one value per key"), qkv::Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, int_tensor({1, 2, 3})),
                       doctest::Contains("valid_lens (3) does not fit query (2, 3, 4): expected (2) or (2, 3)"),
                       qkv::Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, int_tensor({1, 2, 3, 4, -5, 6}, {2, 3})),
                       doctest::Contains("valid_lens[1, 1] is -5; lengths must be ≥ 0"), qkv::Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, {}, {.dropout_p = 1.0f}),
                       doctest::Contains("dropout_p 1 must be in [0, 1)"), qkv::Error);
}

// Dropout's mask is drawn from the generator: the same seed gives the same
// output, another seed another; in expectation the output is the plain one
// (each kept weight scaled by 1/(1 - p)), so over 400 seeds the mean output
// is within a few standard errors of it.
TEST_CASE("ops/scaled_dot_product_attention dropout") {
  Generator gen(12);
  const Tensor q = randn({2, 5, 4}, gen), k = randn({2, 7, 4}, gen), v = randn({2, 7, 3}, gen);
  Generator g1(3), g2(3), g3(4);
  const Tensor a = scaled_dot_product_attention(q, k, v, {}, {.dropout_p = 0.5f, .gen = &g1});
  CHECK(a.to_vector() == scaled_dot_product_attention(q, k, v, {}, {.dropout_p = 0.5f, .gen = &g2}).to_vector());
  CHECK(a.to_vector() != scaled_dot_product_attention(q, k, v, {}, {.dropout_p = 0.5f, .gen = &g3}).to_vector());
  Tensor mean = zeros({2, 5, 3});
  const int runs = 400;
  for (int i = 0; i < runs; ++i)
    mean = mean + scaled_dot_product_attention(q, k, v, {}, {.dropout_p = 0.5f, .gen = &g1});
  mean = mean / static_cast<float>(runs);
  // Each output is a sum of 7 terms w·v·(0 or 2): its variance is at most Σ (w v)² ≤ max |v|², so the
  // standard error of a mean over 400 runs is at most max |v| / 20; 5 of them bound the error.
  const float bound = 5.0f * max(abs(v)).item() / 20.0f;
  CHECK(max(abs(mean - scaled_dot_product_attention(q, k, v))).item() <= bound);
}
