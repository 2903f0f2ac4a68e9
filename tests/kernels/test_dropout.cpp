// dropout against its scalar twin: the same mask and output bit for bit,
// for any length (vector body and tail) and probability.
#include <doctest/doctest.h>

#include <cstddef>  // size_t, which kernel_test_util.hpp uses
#include <cstdint>
#include <vector>

#include "kernels/dropout.hpp"
#include "kernels/kernel_test_util.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

TEST_CASE("kernels/dropout") {
  SUBCASE("equals the reference exactly") {
    // Exact, not close: both draw the same integers and compare them to the same threshold.
    for (int64_t n : {1, 7, 8, 9, 37, 1000}) {
      for (float p : {0.1f, 0.5f, 0.9f, 1.0f / 3}) {
        for (uint64_t state : {uint64_t{0}, uint64_t{12345}, ~uint64_t{0}}) {
          CAPTURE(n);
          CAPTURE(p);
          CAPTURE(state);
          const float scale = 1 / (1 - p);
          std::vector<float> x = random_vector(n, 51), y(n), mask(n), y_ref(n), mask_ref(n);
          dropout(n, state, p, scale, x.data(), y.data(), mask.data());
          dropout_reference(n, state, p, scale, x.data(), y_ref.data(), mask_ref.data());
          CHECK(mask == mask_ref);
          CHECK(y == y_ref);
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
