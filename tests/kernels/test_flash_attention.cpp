// The fused attention's tiled SIMD kernels against their plain reference
// (one query row at a time), at sizes that are not multiples of the tiles
// (BR = BC = 64), with every mask, with and without dropout; its numbers on
// 1 and 3 threads, bit for bit; outputs known from the math alone; and
// dropout's mask keeping 1 - p of the weights.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/flash_attention.hpp"
#include "kernels/kernel_test_util.hpp"
#include "kernels/parallel.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

namespace {

enum class Mask { none, per_head, per_row, causal, causal_and_rows };

struct Case {
  int64_t N, Q, K, d, dv;
};

// The forward's and the backward's results.
struct Results {
  std::vector<float> out, lse, dq, dk, dv;
};

// N·Q lengths for the mask: one per head (repeated over its rows), or one
// per row, including 0 (a row that sees no key), lengths past K, and 1.
std::vector<int64_t> lengths(const Case& c, Mask mask) {
  std::vector<int64_t> lens(static_cast<size_t>(c.N * c.Q));
  Lcg rng{7};
  for (int64_t n = 0; n < c.N; ++n) {
    const auto head_len = static_cast<int64_t>(rng.uniform(0.0f, static_cast<float>(c.K) + 3.0f));
    for (int64_t i = 0; i < c.Q; ++i) {
      auto len = static_cast<int64_t>(rng.uniform(0.0f, static_cast<float>(c.K) + 3.0f));
      if (i % 7 == 3) len = 0;
      if (i % 7 == 5) len = 1;
      lens[static_cast<size_t>(n * c.Q + i)] = mask == Mask::per_head ? head_len : len;
    }
  }
  return lens;
}

template <class Forward, class Backward>
Results run(const Case& c, Mask mask, float dropout, Forward forward, Backward backward) {
  const std::vector<int64_t> lens = lengths(c, mask);
  AttentionSizes s{.N = c.N, .Q = c.Q, .K = c.K, .d = c.d, .dv = c.dv};
  s.scale = 1.0f / std::sqrt(static_cast<float>(c.d));
  s.lens = mask == Mask::per_head || mask == Mask::per_row || mask == Mask::causal_and_rows ? lens.data() : nullptr;
  s.causal = mask == Mask::causal || mask == Mask::causal_and_rows;
  s.dropout = dropout;
  s.seed = 0x5eed;
  const auto q = random_vector(static_cast<size_t>(c.N * c.Q * c.d), 11, -2.0f, 2.0f);
  const auto k = random_vector(static_cast<size_t>(c.N * c.K * c.d), 12, -2.0f, 2.0f);
  const auto v = random_vector(static_cast<size_t>(c.N * c.K * c.dv), 13);
  const auto dout = random_vector(static_cast<size_t>(c.N * c.Q * c.dv), 14);
  Results r;
  r.out.resize(static_cast<size_t>(c.N * c.Q * c.dv));
  r.lse.resize(static_cast<size_t>(c.N * c.Q));
  r.dq.resize(q.size());
  r.dk.resize(k.size());
  r.dv.resize(v.size());
  forward(s, q.data(), k.data(), v.data(), r.out.data(), r.lse.data());
  backward(s, q.data(), k.data(), v.data(), r.out.data(), r.lse.data(), dout.data(), r.dq.data(), r.dk.data(),
           r.dv.data());
  return r;
}

// Entries of got farther from want than tol·(1 + |want|).
int64_t mismatches(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    bad += !(std::abs(double(got[i]) - double(want[i])) <= tol * (1.0 + std::abs(double(want[i]))));
  return bad;
}

struct ThreadsFor {
  int old = num_threads();
  explicit ThreadsFor(int n) { set_num_threads(n); }
  ~ThreadsFor() { set_num_threads(old); }
};

const Case kCases[] = {
    {1, 1, 1, 1, 1},       // one query, one key
    {2, 5, 9, 3, 2},       // smaller than a tile and than a register
    {2, 64, 64, 16, 16},   // exactly one tile
    {3, 70, 130, 64, 64},  // the lessons' head size, tiles cut short
    {2, 129, 65, 17, 23},  // d and dv not multiples of a register
    {1, 200, 150, 40, 8},  // more queries than keys
};

}  // namespace

TEST_CASE("kernels/flash_attention equals its reference") {
  for (const Case& c : kCases) {
    for (Mask mask : {Mask::none, Mask::per_head, Mask::per_row, Mask::causal, Mask::causal_and_rows})
      for (float dropout : {0.0f, 0.3f}) {
        CAPTURE(dropout);
        CAPTURE(c.N);
        CAPTURE(c.Q);
        CAPTURE(c.K);
        CAPTURE(c.d);
        CAPTURE(c.dv);
        CAPTURE(static_cast<int>(mask));
        const Results want = run(c, mask, dropout, flash_attention_reference, flash_attention_backward_reference);
        const Results got = run(c, mask, dropout, flash_attention, flash_attention_backward);
        // Tolerance: the two sum the same terms in other orders and with
        // other exps (xsimd's and libm's, a few ulps each). A sum of n terms
        // moves by up to n·u of its terms' magnitudes; the longest sums here
        // run over K keys (the output, dq), Q queries (dk, dv) and d features
        // (a score), each term of size ≤ ~4 (|q|,|k| ≤ 2, |v|, |dout| ≤ 1):
        // 8·(Q + K + d + 16)·u relative, with 1 added for entries near 0.
        const double tol = 8.0 * static_cast<double>(c.Q + c.K + c.d + 16) * kU;
        CHECK(mismatches(got.out, want.out, tol) == 0);
        CHECK(mismatches(got.lse, want.lse, tol) == 0);
        CHECK(mismatches(got.dq, want.dq, tol) == 0);
        CHECK(mismatches(got.dk, want.dk, tol) == 0);
        CHECK(mismatches(got.dv, want.dv, tol) == 0);
      }
  }
}

TEST_CASE("kernels/flash_attention gives the same numbers on any thread count") {
  const Case c{5, 150, 140, 32, 24};
  for (Mask mask : {Mask::none, Mask::per_row, Mask::causal}) {
    CAPTURE(static_cast<int>(mask));
    const float dropout = mask == Mask::per_row ? 0.2f : 0.0f;
    Results one, three;
    {
      ThreadsFor threads(1);
      one = run(c, mask, dropout, flash_attention, flash_attention_backward);
    }
    {
      ThreadsFor threads(3);
      three = run(c, mask, dropout, flash_attention, flash_attention_backward);
    }
    CHECK(one.out == three.out);
    CHECK(one.lse == three.lse);
    CHECK(one.dq == three.dq);
    CHECK(one.dk == three.dk);
    CHECK(one.dv == three.dv);
  }
}

// From the definition: a query that sees one key gets that key's value,
// lse = its score, and no gradient for q or k (a softmax of one entry is 1
// whatever the score); a row that sees no key gets the mean of all values.
TEST_CASE("kernels/flash_attention: outputs known in closed form") {
  const int64_t Q = 3, K = 70, d = 4, dv = 3;
  const auto q = random_vector(Q * d, 21), k = random_vector(K * d, 22), v = random_vector(K * dv, 23);
  const std::vector<int64_t> lens = {1, 0, 1};  // row 0, 2: key 0 alone; row 1: no key
  AttentionSizes s{.N = 1, .Q = Q, .K = K, .d = d, .dv = dv, .scale = 0.5f, .lens = lens.data()};
  std::vector<float> out(Q * dv), lse(Q), dout(Q * dv, 1.0f), dq(Q * d), dk(K * d), dvv(K * dv);
  flash_attention(s, q.data(), k.data(), v.data(), out.data(), lse.data());
  flash_attention_backward(s, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(), dq.data(), dk.data(),
                           dvv.data());
  for (int64_t c = 0; c < dv; ++c) {
    CHECK(out[c] == v[c]);
    CHECK(out[2 * dv + c] == v[c]);
    double mean = 0.0;
    for (int64_t j = 0; j < K; ++j) mean += v[j * dv + c];
    mean /= K;
    CHECK(std::abs(out[dv + c] - mean) <= 1e-6);
  }
  float score = 0.0f;
  for (int64_t c = 0; c < d; ++c) score += q[c] * k[c];
  CHECK(std::abs(lse[0] - 0.5f * score) <= 1e-6f);
  CHECK(std::abs(lse[1] - std::log(static_cast<float>(K))) <= 1e-6f);
  CHECK(std::all_of(dq.begin(), dq.end(), [](float x) { return x == 0.0f; }));
  CHECK(std::all_of(dk.begin(), dk.end(), [](float x) { return x == 0.0f; }));
  // dv: key 0 gets dout from rows 0 and 2 (weight 1) and 1/K from row 1; every other key 1/K.
  CHECK(std::abs(dvv[0] - (2.0f + 1.0f / K)) <= 1e-6f);
  CHECK(std::abs(dvv[5 * dv] - 1.0f / K) <= 1e-6f);
}

// With equal scores (q = 0) every weight is 1/K, so with v = 1 a row's output
// is (its kept keys) / (K (1 - p)): the mask can be read off the output and
// held to dropout_keeps, and over 200 × 300 weights the kept share must be
// 1 - p within 4 standard deviations (√(p(1 - p)/60000) = 0.0019).
TEST_CASE("kernels/flash_attention: dropout keeps 1 - p of the weights") {
  const int64_t Q = 200, K = 300;
  const float p = 0.25f;
  const std::vector<float> q(Q, 0.0f), k(K, 1.0f), v(K, 1.0f);
  AttentionSizes s{.N = 1, .Q = Q, .K = K, .d = 1, .dv = 1, .dropout = p, .seed = 99};
  std::vector<float> out(Q), lse(Q);
  flash_attention(s, q.data(), k.data(), v.data(), out.data(), lse.data());
  int64_t kept_total = 0;
  for (int64_t i = 0; i < Q; ++i) {
    int64_t kept = 0;
    for (int64_t j = 0; j < K; ++j) kept += dropout_keeps(99, i, j, p);
    CHECK(std::abs(out[i] - static_cast<float>(kept) / (K * (1 - p))) <= 1e-5f);
    kept_total += kept;
  }
  const double share = static_cast<double>(kept_total) / (Q * K);
  CHECK(std::abs(share - (1 - p)) <= 4 * std::sqrt(p * (1 - p) / (Q * K)));
}
