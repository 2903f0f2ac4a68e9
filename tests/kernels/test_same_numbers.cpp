// The same numbers on every build (src/kernels/simd.hpp): each kernel with a
// sum over a row or a transcendental function equals its scalar reference
// bit for bit, at sizes that are multiples of no register width (so the
// 16 running sums, the registers and the scalar tail all take part); a sum's
// order is the one simd.hpp defines, written out here by hand; and qkv's
// exp, log and tanh (kernels/math.hpp) against the mathematics, the
// double-precision C library.
//
// The scalar build runs the references themselves, and every SIMD build is
// held to them here: so AVX-512, AVX2, SSE2, NEON and WebAssembly agree,
// given the same choice of fused multiply-adds (QKV_SAME_NUMBERS).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/elementwise.hpp"
#include "kernels/flash_attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gru.hpp"
#include "kernels/kernel_test_util.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/math.hpp"
#include "kernels/optim.hpp"
#include "kernels/reduce.hpp"
#include "kernels/simd.hpp"
#include "kernels/softmax.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

namespace {

// Sizes a multiple of no register width (4, 8, 16) nor of the 16 running sums.
const int64_t kSizes[] = {1, 3, 7, 15, 17, 31, 45, 201, 1003};

// The number of floats of a and b whose bits differ (NaNs of any payload count as equal).
int64_t bits_differ(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    bad += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  }
  return bad;
}

// Distance in ulps of float f from the double y (the float's ulp at y).
double ulps(float f, double y) {
  const double ulp = std::ldexp(1.0, std::max(std::ilogb(static_cast<float>(y)), -126) - 23);
  return std::abs(static_cast<double>(f) - y) / ulp;
}

}  // namespace

TEST_CASE("kernels/same numbers: a row's sum is 16 running sums folded in one tree") {
  // Terms chosen so that every order of addition gives another float: large
  // and small terms interleaved. The expected value follows simd.hpp's
  // definition, written out again here: term k into running sum k mod 16,
  // then s[l] += s[l + 8], s[l] += s[l + 4], s[l] += s[l + 2], s[0] + s[1].
  for (int64_t n : kSizes) {
    CAPTURE(n);
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
      x[static_cast<size_t>(k)] = (k % 3 == 0 ? 1e7f : 0.3f) * (k % 2 == 0 ? 1.0f : -0.7f) + static_cast<float>(k);
    float s[16] = {};
    for (int64_t k = 0; k < n; ++k) s[k % 16] = s[k % 16] + x[static_cast<size_t>(k)];
    for (int l = 0; l < 8; ++l) s[l] = s[l] + s[l + 8];
    for (int l = 0; l < 4; ++l) s[l] = s[l] + s[l + 4];
    for (int l = 0; l < 2; ++l) s[l] = s[l] + s[l + 2];
    const float expected = s[0] + s[1];
    float got = 0, got_ref = 0;
    reduce(Reduce::Sum, 1, n, 1, x.data(), &got);
    reduce_reference(Reduce::Sum, 1, n, 1, x.data(), &got_ref);
    CHECK(std::memcmp(&got, &expected, sizeof(float)) == 0);
    CHECK(std::memcmp(&got_ref, &expected, sizeof(float)) == 0);
  }
}

TEST_CASE("kernels/same numbers: reductions equal their references bit for bit") {
  for (int64_t n : kSizes) {
    CAPTURE(n);
    for (int64_t inner : {int64_t{1}, int64_t{3}, int64_t{19}}) {
      CAPTURE(inner);
      const std::vector<float> x = random_vector(static_cast<size_t>(3 * n * inner), 7);
      std::vector<float> out(static_cast<size_t>(3 * inner)), ref(out.size());
      reduce(Reduce::Sum, 3, n, inner, x.data(), out.data());
      reduce_reference(Reduce::Sum, 3, n, inner, x.data(), ref.data());
      CHECK(bits_differ(out, ref) == 0);
    }
  }
  // A row long enough to be summed in pieces (2·2¹⁵ floats and more).
  const int64_t long_n = (int64_t{1} << 16) + 1001;
  const std::vector<float> x = random_vector(static_cast<size_t>(long_n), 8);
  std::vector<float> out(1), ref(1);
  reduce(Reduce::Sum, 1, long_n, 1, x.data(), out.data());
  reduce_reference(Reduce::Sum, 1, long_n, 1, x.data(), ref.data());
  CHECK(bits_differ(out, ref) == 0);
  // The sum of squares of clip_grad_norm_, in doubles, short and in pieces.
  for (int64_t m : {int64_t{1003}, (int64_t{1} << 17) + 77}) {
    const std::vector<float> g = random_vector(static_cast<size_t>(m), 9);
    const double a = sum_squares(m, g.data()), b = sum_squares_reference(m, g.data());
    CHECK(std::memcmp(&a, &b, sizeof(double)) == 0);
  }
}

TEST_CASE("kernels/same numbers: softmax, its backward and cross-entropy equal their references bit for bit") {
  for (int64_t n : kSizes) {
    CAPTURE(n);
    const int64_t rows = 5;
    const std::vector<float> x = random_vector(static_cast<size_t>(rows * n), 11, -8.0f, 8.0f);
    const std::vector<float> dy = random_vector(x.size(), 12);
    std::vector<float> y(x.size()), y_ref(x.size()), dx(x.size()), dx_ref(x.size());

    softmax(rows, n, 1, x.data(), y.data());
    softmax_reference(rows, n, 1, x.data(), y_ref.data());
    CHECK(bits_differ(y, y_ref) == 0);
    softmax_backward(rows, n, 1, y_ref.data(), dy.data(), dx.data());
    softmax_backward_reference(rows, n, 1, y_ref.data(), dy.data(), dx_ref.data());
    CHECK(bits_differ(dx, dx_ref) == 0);

    log_softmax(rows, n, 1, x.data(), y.data());
    log_softmax_reference(rows, n, 1, x.data(), y_ref.data());
    CHECK(bits_differ(y, y_ref) == 0);
    log_softmax_backward(rows, n, 1, y_ref.data(), dy.data(), dx.data());
    log_softmax_backward_reference(rows, n, 1, y_ref.data(), dy.data(), dx_ref.data());
    CHECK(bits_differ(dx, dx_ref) == 0);

    const std::vector<int64_t> lens = {0, 1, n / 2, n, n + 3};
    masked_softmax(rows, n, lens.data(), x.data(), y.data());
    masked_softmax_reference(rows, n, lens.data(), x.data(), y_ref.data());
    CHECK(bits_differ(y, y_ref) == 0);

    // Cross-entropy over n classes, with and without weights and smoothing.
    std::vector<int64_t> target(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) target[static_cast<size_t>(i)] = (i * 7) % n;
    const std::vector<float> weight = random_vector(static_cast<size_t>(n), 13, 0.5f, 2.0f);
    const std::vector<float> dloss = random_vector(static_cast<size_t>(rows), 14);
    for (const float* w : {static_cast<const float*>(nullptr), weight.data()}) {
      for (float smoothing : {0.0f, 0.1f}) {
        CAPTURE(smoothing);
        std::vector<float> loss(static_cast<size_t>(rows)), loss_ref(loss.size());
        std::vector<float> stats(static_cast<size_t>(2 * rows)), stats_ref(stats.size());
        cross_entropy(rows, n, x.data(), target.data(), w, -100, smoothing, loss.data(), stats.data());
        cross_entropy_reference(rows, n, x.data(), target.data(), w, -100, smoothing, loss_ref.data(),
                                stats_ref.data());
        CHECK(bits_differ(loss, loss_ref) == 0);
        CHECK(bits_differ(stats, stats_ref) == 0);
        cross_entropy_backward(rows, n, x.data(), stats_ref.data(), target.data(), w, -100, smoothing, dloss.data(),
                               dx.data());
        cross_entropy_backward_reference(rows, n, x.data(), stats_ref.data(), target.data(), w, -100, smoothing,
                                         dloss.data(), dx_ref.data());
        CHECK(bits_differ(dx, dx_ref) == 0);
      }
    }
  }
}

TEST_CASE("kernels/same numbers: layer norm and its backward equal their references bit for bit") {
  for (int64_t D : kSizes) {
    CAPTURE(D);
    const int64_t rows = 4;
    const std::vector<float> x = random_vector(static_cast<size_t>(rows * D), 21, -3.0f, 3.0f);
    const std::vector<float> w = random_vector(static_cast<size_t>(D), 22),
                             b = random_vector(static_cast<size_t>(D), 23);
    const std::vector<float> dy = random_vector(x.size(), 24);
    std::vector<float> y(x.size()), y_ref(x.size()), mean(4), mean_ref(4), rstd(4), rstd_ref(4);
    layer_norm(rows, D, x.data(), w.data(), b.data(), 1e-5f, y.data(), mean.data(), rstd.data());
    layer_norm_reference(rows, D, x.data(), w.data(), b.data(), 1e-5f, y_ref.data(), mean_ref.data(), rstd_ref.data());
    CHECK(bits_differ(y, y_ref) == 0);
    CHECK(bits_differ(mean, mean_ref) == 0);
    CHECK(bits_differ(rstd, rstd_ref) == 0);
    std::vector<float> dx(x.size()), dx_ref(x.size()), dw(w.size(), 0.5f), dw_ref(dw), db(w.size(), 0.25f), db_ref(db);
    layer_norm_backward(rows, D, x.data(), w.data(), mean_ref.data(), rstd_ref.data(), dy.data(), dx.data(), dw.data(),
                        db.data());
    layer_norm_backward_reference(rows, D, x.data(), w.data(), mean_ref.data(), rstd_ref.data(), dy.data(),
                                  dx_ref.data(), dw_ref.data(), db_ref.data());
    CHECK(bits_differ(dx, dx_ref) == 0);
    CHECK(bits_differ(dw, dw_ref) == 0);
    CHECK(bits_differ(db, db_ref) == 0);
  }
}

TEST_CASE("kernels/same numbers: exp, log, tanh, sigmoid and the GRU cell equal their references bit for bit") {
  for (int64_t n : kSizes) {
    CAPTURE(n);
    std::vector<float> x = random_vector(static_cast<size_t>(n), 31, -30.0f, 30.0f);
    // The edges: ±0, ±∞, NaN, the overflow and underflow thresholds, subnormals.
    const float edges[] = {0.0f,    -0.0f,  kInf,   -kInf,  kNaN,   88.72283f, 88.7229f, -87.33655f, -103.9f,
                           -104.1f, 1e-45f, 1e-40f, 1e-30f, 0.625f, -0.625f,   9.0f,     1e30f};
    for (size_t i = 0; i < std::size(edges) && i < x.size(); ++i) x[i] = edges[i];
    for (Unary op : {Unary::Exp, Unary::Log, Unary::Tanh, Unary::Sigmoid}) {
      CAPTURE(static_cast<int>(op));
      std::vector<float> y(x.size()), y_ref(x.size());
      unary(op, n, x.data(), y.data());
      unary_reference(op, n, x.data(), y_ref.data());
      CHECK(bits_differ(y, y_ref) == 0);
    }
    // The GRU cell: σ and tanh of every gate, forward and backward.
    const int64_t B = 3, H = n;
    const std::vector<float> xw = random_vector(static_cast<size_t>(B * 3 * H), 32, -4.0f, 4.0f);
    const std::vector<float> hw = random_vector(xw.size(), 33, -4.0f, 4.0f);
    const std::vector<float> h = random_vector(static_cast<size_t>(B * H), 34);
    std::vector<float> h_next(h.size()), h_next_ref(h.size()), gates(xw.size()), gates_ref(xw.size());
    gru_cell(B, H, xw.data(), hw.data(), h.data(), h_next.data(), gates.data());
    gru_cell_reference(B, H, xw.data(), hw.data(), h.data(), h_next_ref.data(), gates_ref.data());
    CHECK(bits_differ(h_next, h_next_ref) == 0);
    CHECK(bits_differ(gates, gates_ref) == 0);
  }
}

// exp of a batch against exp of a float, on every float whose eˣ is a
// subnormal or rounds to one (-104.5 … -86.5: where the two ways of applying
// 2ⁿ, math.hpp's times_two_to, could differ) and on every 509th float of
// all 2³² (each magnitude and sign, ±∞ and NaNs). And exp_below_overflow,
// which skips exp's holding of x above 88.8, against exp on each of them up
// to 88.8.
TEST_CASE("kernels/same numbers: a batch's exp equals a float's on every subnormal result and a sweep of all floats") {
  std::vector<float> x;
  for (float f = -104.5f; f <= -86.5f; f = std::nextafter(f, 0.0f)) x.push_back(f);
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 509) {
    float f;
    const auto u = static_cast<uint32_t>(b);
    std::memcpy(&f, &u, sizeof f);
    x.push_back(f);
  }
  x.resize((x.size() + 15) / 16 * 16, 0.0f);  // whole registers of every width
  std::vector<float> y(x.size()), y_below(x.size()), y_ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) y_ref[i] = math::exp(x[i]);
#if QKV_SIMD
  for (size_t i = 0; i < x.size(); i += W) {
    const batch xi = batch::load_unaligned(x.data() + i);
    math::exp(xi).store_unaligned(y.data() + i);
    math::exp_below_overflow(xi).store_unaligned(y_below.data() + i);
  }
#else  // a float's exp_below_overflow only where it is defined (above, 2ⁿ's exponent field overflows an int)
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = math::exp(x[i]);
    y_below[i] = x[i] <= 88.8f || std::isnan(x[i]) ? math::exp_below_overflow(x[i]) : 0.0f;
  }
#endif
  CHECK(bits_differ(y, y_ref) == 0);
  int64_t below = 0, below_differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] <= 88.8f) && !std::isnan(x[i])) continue;
    ++below;
    below_differ +=
        !(std::isnan(y_below[i]) && std::isnan(y_ref[i])) && std::memcmp(&y_below[i], &y_ref[i], sizeof(float)) != 0;
  }
  CHECK(below > 4000000);
  CHECK(below_differ == 0);
  // The subnormal results are there: e⁻¹⁰⁰ ≈ 3.7e-44.
  CHECK(math::exp(-100.0f) > 0.0f);
  CHECK(math::exp(-100.0f) < std::numeric_limits<float>::min());
}

TEST_CASE("kernels/same numbers: fused attention equals its reference bit for bit") {
  // Q and K past one tile of 64 and not a multiple of any width; every mask.
  const int64_t N = 2, Q = 70, K = 133, d = 20, dv = 12;
  const std::vector<float> q = random_vector(static_cast<size_t>(N * Q * d), 41, -2.0f, 2.0f);
  const std::vector<float> k = random_vector(static_cast<size_t>(N * K * d), 42, -2.0f, 2.0f);
  const std::vector<float> v = random_vector(static_cast<size_t>(N * K * dv), 43);
  const std::vector<float> dout = random_vector(static_cast<size_t>(N * Q * dv), 44);
  std::vector<int64_t> lens(static_cast<size_t>(N * Q));
  for (size_t i = 0; i < lens.size(); ++i) lens[i] = static_cast<int64_t>(i * 37 % (K + 1));
  for (int mask = 0; mask < 3; ++mask) {
    for (float dropout : {0.0f, 0.2f}) {
      CAPTURE(mask);
      CAPTURE(dropout);
      AttentionSizes s{N,         Q,       K, d, dv, 1.0f / std::sqrt(float(d)), mask == 1 ? lens.data() : nullptr,
                       mask == 2, dropout, 5};
      std::vector<float> out(dout.size()), out_ref(dout.size()), lse(static_cast<size_t>(N * Q)), lse_ref(lse.size());
      flash_attention(s, q.data(), k.data(), v.data(), out.data(), lse.data());
      flash_attention_reference(s, q.data(), k.data(), v.data(), out_ref.data(), lse_ref.data());
      CHECK(bits_differ(out, out_ref) == 0);
      CHECK(bits_differ(lse, lse_ref) == 0);
      std::vector<float> dq(q.size()), dq_ref(q.size()), dk(k.size()), dk_ref(k.size()), dvv(v.size()),
          dv_ref(v.size());
      flash_attention_backward(s, q.data(), k.data(), v.data(), out_ref.data(), lse_ref.data(), dout.data(), dq.data(),
                               dk.data(), dvv.data());
      flash_attention_backward_reference(s, q.data(), k.data(), v.data(), out_ref.data(), lse_ref.data(), dout.data(),
                                         dq_ref.data(), dk_ref.data(), dv_ref.data());
      CHECK(bits_differ(dq, dq_ref) == 0);
      CHECK(bits_differ(dk, dk_ref) == 0);
      CHECK(bits_differ(dvv, dv_ref) == 0);
    }
  }
}

TEST_CASE("kernels/same numbers: gemm sums each element in GEMM_KC slices, as its reference") {
  // K past two slices; M and N past the register tiles and multiples of no
  // width; and products of a few rows, whose blocks are all edges.
  // NOTE: the default native build has two orders of its own (gemm.hpp): C's
  // last 1 or 2 columns as dot products, and even and odd k apart in small
  // edge blocks. There only the first shape's other columns are held to the
  // reference; a QKV_SAME_NUMBERS build is held to it everywhere.
  const int64_t shapes[][3] = {{37, 600, 53}, {10, 32, 96}, {1, 75, 50}, {640, 32, 201}, {3, 300, 7}};
  for (const auto& shape : shapes) {
    const int64_t M = shape[0], K = shape[1], N = shape[2];
    if (!QKV_SAME_NUMBERS && M != 37) continue;
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        CAPTURE(M);
        CAPTURE(K);
        CAPTURE(N);
        CAPTURE(ta);
        CAPTURE(tb);
        const std::vector<float> A = random_vector(static_cast<size_t>(M * K), 51);
        const std::vector<float> B = random_vector(static_cast<size_t>(K * N), 52);
        const int64_t lda = ta ? M : K, ldb = tb ? K : N;
        for (bool accumulate : {false, true}) {
          std::vector<float> C(static_cast<size_t>(M * N), 0.5f), C_ref(C);
          gemm(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, C.data(), N, accumulate);
          gemm_reference(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, C_ref.data(), N, accumulate);
          int64_t bad = 0;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              if (!QKV_SAME_NUMBERS && j >= N - 2) continue;
              const size_t at = static_cast<size_t>(i * N + j);
              bad += std::memcmp(&C[at], &C_ref[at], sizeof(float)) != 0;
            }
          CHECK(bad == 0);
        }
      }
    }
  }
}

// qkv's exp, log and tanh against the double-precision C library, whose
// results are within an ulp of a double, far below a float's: the
// mathematics, for a float. The bound: Cephes' polynomials are accurate to
// about 1 ulp; rounding the argument reduction and the scaling adds up to
// one more for exp and log, and tanh's 1 − 2/(e^(2x) + 1) near 0.625, where
// the subtraction loses a bit of e^(2x)'s error, one more again. Every
// float in steps of 1/4096 of an ulp-spaced grid is too many to try; 2·10⁶
// spaced log-uniformly over each range are checked.
TEST_CASE("kernels/same numbers: exp, log and tanh are within 2, 2 and 3 ulp of the mathematics") {
  auto worst = [](double lo, double hi, bool log_spaced, auto f, auto exact) {
    double w = 0;
    const int steps = 2000000;
    for (int i = 0; i <= steps; ++i) {
      const double t = static_cast<double>(i) / steps;
      const double xd = log_spaced ? lo * std::pow(hi / lo, t) : lo + (hi - lo) * t;
      const float x = static_cast<float>(xd);
      const double y = exact(static_cast<double>(x));
      if (y == 0 || std::isinf(y) || std::abs(y) < 1.1754943508222875e-38) continue;
      w = std::max(w, ulps(f(x), y));
    }
    return w;
  };
  const double exp_err = worst(
      -87.0, 88.7, false, [](float x) { return math::exp(x); }, [](double x) { return std::exp(x); });
  const double log_err = worst(
      1e-37, 1e37, true, [](float x) { return math::log(x); }, [](double x) { return std::log(x); });
  const double log_near_1 = worst(
      0.5, 2.0, false, [](float x) { return math::log(x); }, [](double x) { return std::log(x); });
  const double tanh_err = worst(
      1e-6, 10.0, true, [](float x) { return math::tanh(x); }, [](double x) { return std::tanh(x); });
  const double tanh_neg = worst(
      -10.0, -1e-6, false, [](float x) { return math::tanh(x); }, [](double x) { return std::tanh(x); });
  MESSAGE("max ulp error: exp ", exp_err, ", log ", log_err, " (", log_near_1, " on [0.5, 2]), tanh ", tanh_err, " (",
          tanh_neg, " below 0)");
  CHECK(exp_err <= 2.0);
  CHECK(log_err <= 2.0);
  CHECK(log_near_1 <= 2.0);
  CHECK(tanh_err <= 3.0);
  CHECK(tanh_neg <= 3.0);

  // The edges, from the mathematics.
  CHECK(math::exp(0.0f) == 1.0f);
  CHECK(math::exp(-kInf) == 0.0f);
  CHECK(math::exp(kInf) == kInf);
  CHECK(math::exp(89.0f) == kInf);
  CHECK(math::exp(-104.5f) == 0.0f);
  CHECK(std::isnan(math::exp(kNaN)));
  CHECK(math::exp(-100.0f) > 0.0f);  // e⁻¹⁰⁰ ≈ 3.7e-44, a subnormal
  CHECK(ulps(math::exp(-100.0f), std::exp(-100.0)) <= 1.0);
  CHECK(math::log(1.0f) == 0.0f);
  CHECK(math::log(0.0f) == -kInf);
  CHECK(math::log(kInf) == kInf);
  CHECK(std::isnan(math::log(-1.0f)));
  CHECK(std::isnan(math::log(kNaN)));
  CHECK(ulps(math::log(1e-45f), std::log(double{1e-45f})) <= 2.0);  // a subnormal
  CHECK(math::tanh(0.0f) == 0.0f);
  CHECK(math::tanh(20.0f) == 1.0f);
  CHECK(math::tanh(-kInf) == -1.0f);
  CHECK(std::isnan(math::tanh(kNaN)));
}
