// The optimizer kernels (src/kernels/optim.cpp) against their scalar twins:
// adam and sgd bit for bit (both twins fuse the same multiply-adds), scale
// bit for bit (one multiply each), and sum_squares to double's rounding (it
// adds in another order); plus values worked out by hand.
//
// Lengths 1, 3, 17 and 129 are never a multiple of the SIMD width, so both the
// vector body and the scalar tail of every kernel run.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/kernel_test_util.hpp"
#include "kernels/optim.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

namespace {

constexpr int64_t kLengths[] = {0, 1, 3, 17, 129};

// Three steps of adam and of adam_reference from the same state, each with
// a new gradient: the moments carry over, so the second and third steps
// test the m and v updates on non-zero state as well.
void check_adam_matches_reference(const AdamStep& s, int64_t n) {
  const size_t len = static_cast<size_t>(n);
  std::vector<float> p = random_vector(len, 41, -2.0f, 2.0f), m(len, 0.0f), v(len, 0.0f);
  std::vector<float> p_ref = p, m_ref = m, v_ref = v;
  for (uint32_t step = 0; step < 3; ++step) {
    std::vector<float> g = random_vector(len, 42 + step, -3.0f, 3.0f);
    adam(s, n, p.data(), g.data(), m.data(), v.data());
    adam_reference(s, n, p_ref.data(), g.data(), m_ref.data(), v_ref.data());
    CHECK(p == p_ref);  // bit for bit
    CHECK(m == m_ref);
    CHECK(v == v_ref);
  }
}

void check_sgd_matches_reference(SgdStep s, bool momentum, int64_t n) {
  const size_t len = static_cast<size_t>(n);
  std::vector<float> p = random_vector(len, 51, -2.0f, 2.0f), buf(len, 0.0f);
  std::vector<float> p_ref = p, buf_ref = buf;
  for (uint32_t step = 0; step < 3; ++step) {
    s.first = step == 0;
    std::vector<float> g = random_vector(len, 52 + step, -3.0f, 3.0f);
    sgd(s, n, p.data(), g.data(), momentum ? buf.data() : nullptr);
    sgd_reference(s, n, p_ref.data(), g.data(), momentum ? buf_ref.data() : nullptr);
    CHECK(p == p_ref);  // bit for bit
    CHECK(buf == buf_ref);
  }
}

}  // namespace

TEST_CASE("kernels/adam") {
  // Adam's defaults at step 3 (lr 1e-3, betas 0.9 and 0.999, eps 1e-8).
  const float bc1 = 1 - std::pow(0.9f, 3.0f), bc2 = 1 - std::pow(0.999f, 3.0f);
  const AdamStep plain{0.9f, 0.999f, 1e-3f / bc1, std::sqrt(bc2), 1e-8f, 0.0f, 1.0f};
  AdamStep coupled = plain, decoupled = plain;
  coupled.l2 = 0.01f;           // Adam's weight decay
  decoupled.decay = 1 - 1e-5f;  // AdamW's p·(1 − lr·λ)
  for (int64_t n : kLengths) {
    SUBCASE(fmt::format("n = {}", n).c_str()) {
      check_adam_matches_reference(plain, n);
      check_adam_matches_reference(coupled, n);
      check_adam_matches_reference(decoupled, n);
    }
  }

  SUBCASE("the first step moves by lr against the gradient's sign") {
    // From zero moments: m = (1 − β1)·g, v = (1 − β2)·g², and with the bias
    // corrections of step 1 the step is lr·g/|g| (ε = 0): p − lr·sign(g).
    const AdamStep first{0.9f, 0.999f, 0.1f / (1 - 0.9f), std::sqrt(1 - 0.999f), 0.0f, 0.0f, 1.0f};
    std::vector<float> p(19, 1.0f), g(19), m(19, 0.0f), v(19, 0.0f);
    for (size_t i = 0; i < g.size(); ++i) g[i] = (i % 2 == 0 ? 1.0f : -1.0f) * (0.25f + static_cast<float>(i));
    adam(first, 19, p.data(), g.data(), m.data(), v.data());
    for (size_t i = 0; i < p.size(); ++i) {
      INFO("i = " << i);
      CHECK(p[i] == doctest::Approx(i % 2 == 0 ? 0.9 : 1.1).epsilon(1e-6));
    }
  }
}

TEST_CASE("kernels/sgd") {
  for (int64_t n : kLengths) {
    SUBCASE(fmt::format("n = {}", n).c_str()) {
      check_sgd_matches_reference({0.1f, 0.0f, 0.0f, 0.0f, false, false}, false, n);   // plain
      check_sgd_matches_reference({0.1f, 0.0f, 0.0f, 0.01f, false, false}, false, n);  // weight decay
      check_sgd_matches_reference({0.1f, 0.9f, 0.1f, 0.01f, false, false}, true, n);   // momentum, dampening
      check_sgd_matches_reference({0.1f, 0.9f, 0.0f, 0.0f, true, false}, true, n);     // nesterov
    }
  }
  SUBCASE("by hand") {  // p − lr·g: 1 − 0.5·(−2) = 2, 3 − 0.5·4 = 1; momentum's first buffer is g
    std::vector<float> p{1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1},
        g{-2, 4, -2, 4, -2, 4, -2, 4, -2, 4, -2, 4, -2, 4, -2, 4, -2};
    std::vector<float> buf(17, 7.0f);
    sgd({0.5f, 0.9f, 0.0f, 0.0f, false, true}, 17, p.data(), g.data(), buf.data());
    for (size_t i = 0; i < p.size(); ++i) {
      CHECK(p[i] == (i % 2 == 0 ? 2.0f : 1.0f));
      CHECK(buf[i] == g[i]);
    }
  }
}

TEST_CASE("kernels/sum_squares") {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{17}, int64_t{129}, int64_t{100003}}) {
    SUBCASE(fmt::format("n = {}", n).c_str()) {
      std::vector<float> x = random_vector(static_cast<size_t>(n), 61, -3.0f, 3.0f);
      const double got = sum_squares(n, x.data()), want = sum_squares_reference(n, x.data());
      // Both sum n non-negative doubles (each square exact in double), in
      // different orders: each is within (n − 1)·2⁻⁵³ of the exact sum, relatively.
      CHECK(std::abs(got - want) <= 2 * static_cast<double>(n) * 0x1p-53 * want);
    }
  }
  SUBCASE("by hand") {  // 3² + 4² + 12² + 0 … = 169, exactly
    std::vector<float> x(37, 0.0f);
    x[0] = 3, x[17] = 4, x[36] = 12;
    CHECK(sum_squares(37, x.data()) == 169.0);
    CHECK(sum_squares_reference(37, x.data()) == 169.0);
  }
}

TEST_CASE("kernels/scale") {
  // 200,003 floats: more than two of the kernel's pieces, so the threads share it.
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{17}, int64_t{129}, int64_t{200003}}) {
    SUBCASE(fmt::format("n = {}", n).c_str()) {
      std::vector<float> x = random_vector(static_cast<size_t>(n), 71, -3.0f, 3.0f), x_ref = x;
      scale(n, 0.37f, x.data());
      scale_reference(n, 0.37f, x_ref.data());
      CHECK(x == x_ref);  // bit for bit
    }
  }
  SUBCASE("by hand") {  // powers of two scale exactly: 0.25·(4, -8, 3) = (1, -2, 0.75)
    std::vector<float> x(19, 3.0f);
    x[0] = 4, x[18] = -8;
    scale(19, 0.25f, x.data());
    CHECK(x[0] == 1.0f);
    CHECK(x[18] == -2.0f);
    for (size_t i = 1; i < 18; ++i) CHECK(x[i] == 0.75f);
  }
}
