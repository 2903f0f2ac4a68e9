// dropout against qkv::Generator, whose stream it must reproduce: the same
// mask bit for bit as gen.uniform() element by element, for any length.
#include <doctest/doctest.h>

#include <qkv/core/generator.hpp>

#include <cstddef>  // size_t, which kernel_test_util.hpp uses
#include <cstdint>
#include <vector>

#include "kernels/dropout.hpp"
#include "kernels/kernel_test_util.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

TEST_CASE("kernels/dropout") {
  SUBCASE("the mask of gen.uniform() >= p, drawn element by element") {
    // Exact, not close: both draw the same integers and compare the same floats.
    // The AVX-512 build draws 16 at a time, then the rest one by one: lengths
    // below, at and past 16. 100,003 is cut into pieces (one task each,
    // whatever the thread count), each starting mid-stream.
    for (int64_t n : {1, 7, 16, 17, 37, 1000, 100'003}) {
      for (float p : {0.1f, 0.5f, 0.9f, 1.0f / 3}) {
        for (uint64_t seed : {uint64_t{0}, uint64_t{12345}, ~uint64_t{0}}) {
          CAPTURE(n);
          CAPTURE(p);
          CAPTURE(seed);
          const float scale = 1 / (1 - p);
          std::vector<float> x = random_vector(n, 51), y(n), mask(n);
          dropout(n, seed, p, scale, x.data(), y.data(), mask.data());
          qkv::Generator gen(seed);
          int64_t bad = 0;
          for (int64_t i = 0; i < n; ++i) {
            const float want = gen.uniform() >= p ? scale : 0.0f;
            bad += !(mask[i] == want && y[i] == x[i] * want);
          }
          CHECK(bad == 0);
        }
      }
    }
  }

  SUBCASE("p = 1 drops everything") {
    // Mathematics: every u = k·2⁻²⁴ < 1, so p = 1 keeps nothing.
    std::vector<float> x(37, 1.0f), y(37), mask(37);
    dropout(37, 99, 1.0f, 0.0f, x.data(), y.data(), mask.data());
    for (int64_t i = 0; i < 37; ++i) CHECK((mask[i] == 0.0f && y[i] == 0.0f));
  }
}
