// Bad input for scaled_dot_product_attention (include/qkv/ops/attention.hpp):
// undefined, 0-d and wrongly shaped tensors, lengths that do not fit or are
// negative, and the extreme lengths that are valid (0 and past K), checked
// against the definition.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "hardening/bad_input.hpp"

using namespace qkv;
using qkv::test::check_bad_inputs_naming_op;

namespace {
Tensor q() { return ones({2, 3, 4}); }  // (N, Q, d)
Tensor k() { return ones({2, 5, 4}); }  // (N, K, d)
Tensor v() { return ones({2, 5, 6}); }  // (N, K, dv)
}  // namespace

TEST_CASE("hardening/ops: scaled_dot_product_attention") {
  check_bad_inputs_naming_op({
      {"scaled_dot_product_attention: undefined query", [] { scaled_dot_product_attention(Tensor(), k(), v()); },
       "scaled_dot_product_attention: query is an undefined tensor"},
      {"scaled_dot_product_attention: undefined value", [] { scaled_dot_product_attention(q(), k(), Tensor()); },
       "scaled_dot_product_attention: value is an undefined tensor"},
      {"scaled_dot_product_attention: 0-d key", [] { scaled_dot_product_attention(q(), scalar_tensor(1), v()); },
       "scaled_dot_product_attention: key must be 3-d, got shape ()"},
      {"scaled_dot_product_attention: 4-d query",
       [] {
         scaled_dot_product_attention(ones({1, 2, 3, 4}), k(), v());
       },
       "scaled_dot_product_attention: query must be 3-d, got shape (1, 2, 3, 4)"},
      {"scaled_dot_product_attention: batch sizes differ",
       [] {
         scaled_dot_product_attention(q(), ones({1, 5, 4}), v());
       },
       "batch sizes differ"},
      {"scaled_dot_product_attention: query and key sizes differ",
       [] {
         scaled_dot_product_attention(q(), ones({2, 5, 3}), v());
       },
       "query and key sizes 4 and 3 differ"},
      {"scaled_dot_product_attention: fewer values than keys",
       [] {
         scaled_dot_product_attention(q(), k(), ones({2, 4, 6}));
       },
       "expected one value per key"},
      {"scaled_dot_product_attention: valid_lens of the wrong shape",
       [] {
         scaled_dot_product_attention(q(), k(), v(), int_tensor({1, 2, 3}, {1, 3}));
       },
       "valid_lens (1, 3) does not fit query (2, 3, 4)"},
      {"scaled_dot_product_attention: length at int64's minimum",
       [] {
         scaled_dot_product_attention(q(), k(), v(), int_tensor({1, std::numeric_limits<int64_t>::min()}));
       },
       "valid_lens[1] is -9223372036854775808; lengths must be ≥ 0"},
      {"scaled_dot_product_attention: dropout_p NaN",
       [] { scaled_dot_product_attention(q(), k(), v(), {}, {.dropout_p = std::nanf("")}); },
       "dropout_p nan must be in [0, 1)"},
      {"scaled_dot_product_attention: dropout_p negative",
       [] { scaled_dot_product_attention(q(), k(), v(), {}, {.dropout_p = -0.5f}); },
       "dropout_p -0.5 must be in [0, 1)"},
      {"scaled_dot_product_attention: null generator",
       [] { scaled_dot_product_attention(q(), k(), v(), {}, {.dropout_p = 0.5f, .gen = nullptr}); }, "gen is null"},
  });
}

// Valid extremes: a length at int64's maximum keeps every key (the mean of
// equal values is that value), and a length of 0 gives uniform weights.
TEST_CASE("hardening/ops: scaled_dot_product_attention at extreme lengths") {
  Tensor out = scaled_dot_product_attention(q(), k(), v(), int_tensor({std::numeric_limits<int64_t>::max(), 0}));
  CHECK(out.shape() == Shape{2, 3, 6});
  for (float x : out.to_vector()) CHECK(x == doctest::Approx(1.0f));
}
