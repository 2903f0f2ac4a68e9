// The copy kernels (strided_copy, copy_rows, gather, scatter_add) against
// their reference twins, and the strided walk (kernels/walk.hpp) against
// dims merged by hand.
//
// A copy moves numbers without computing, so every fast kernel must equal
// its twin exactly. Sizes are odd (and 33, 37 and 70 cross the 32-wide tiles
// of the transpose), so every run, tile and tail of each path is taken.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "kernels/copy.hpp"
#include "kernels/kernel_test_util.hpp"
#include "kernels/walk.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

namespace {

int64_t product(const std::vector<int64_t>& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
}

// Row-major strides of `sizes`.
std::vector<int64_t> strides_of(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t step = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = step;
    step *= sizes[d];
  }
  return strides;
}

// strided_copy of src (of `sizes`) permuted by `order` (out dim k is src dim
// order[k]), against the twin.
void check_permuted_copy(const std::vector<int64_t>& sizes, const std::vector<int64_t>& order) {
  CAPTURE(sizes.size());
  std::vector<int64_t> src_strides = strides_of(sizes), out_sizes, out_strides;
  for (int64_t d : order) {
    out_sizes.push_back(sizes[static_cast<size_t>(d)]);
    out_strides.push_back(src_strides[static_cast<size_t>(d)]);
  }
  const int64_t n = product(sizes);
  std::vector<float> src = random_vector(static_cast<size_t>(n), 7), got(static_cast<size_t>(n), kNaN),
                     want(static_cast<size_t>(n), kNaN);
  strided_copy(out_sizes, out_strides, src.data(), got.data());
  strided_copy_reference(out_sizes, out_strides, src.data(), want.data());
  CHECK(got == want);
}

}  // namespace

TEST_CASE("kernels/strided walk merges dims") {
  // By hand, from the rule in walk.hpp: size-1 dims drop out, and d, d+1
  // merge when every operand's stride[d] = stride[d+1]·size[d+1].
  SUBCASE("(B, T, S) against (B, T, 1): B·T rows of S") {
    std::vector<int64_t> sizes{2, 3, 5}, a{15, 5, 1}, b{3, 1, 0};
    StridedWalk<2> walk(sizes, {a, b});
    REQUIRE(walk.dims().size() == 2);
    CHECK(walk.dims()[0].size == 6);
    CHECK(walk.dims()[0].stride == StridedWalk<2>::Offsets{5, 1});
    CHECK(walk.row_length() == 5);
    CHECK(walk.row_step(0) == 1);
    CHECK(walk.row_step(1) == 0);
  }
  SUBCASE("size-1 dims drop out; one element is one row of 1") {
    std::vector<int64_t> sizes{1, 1}, s{0, 0};
    StridedWalk<1> walk(sizes, {s});
    CHECK(walk.dims().empty());
    CHECK(walk.row_length() == 1);
    int rows = 0;
    walk.for_each_row([&](int64_t first, const StridedWalk<1>::Offsets& at) {
      CHECK(first == 0);
      CHECK(at[0] == 0);
      ++rows;
    });
    CHECK(rows == 1);
  }
  SUBCASE("permute (2, 0, 1) of (A, B, C): (C, A·B) with strides (1, C)") {
    std::vector<int64_t> sizes{5, 2, 3}, s{1, 15, 5};  // x (2, 3, 5): strides (15, 5, 1)
    StridedWalk<1> walk(sizes, {s});
    REQUIRE(walk.dims().size() == 2);
    CHECK(walk.dims()[0].size == 5);
    CHECK(walk.dims()[1].size == 6);
    CHECK(walk.dims()[1].stride[0] == 5);
  }
  SUBCASE("an empty array visits nothing") {
    std::vector<int64_t> sizes{3, 0, 2}, s{2, 2, 1};
    StridedWalk<1> walk(sizes, {s});
    CHECK(walk.empty());
    walk.for_each_row([](int64_t, const StridedWalk<1>::Offsets&) { CHECK(false); });
  }
  SUBCASE("rows come in row-major order, each operand's offset the sum of index·stride") {
    // (3, 4, 5) with operand strides that merge nowhere: every offset by the definition.
    std::vector<int64_t> sizes{3, 4, 5}, s{1, 100, 7};
    StridedWalk<1> walk(sizes, {s});
    REQUIRE(walk.dims().size() == 3);
    int64_t row = 0;
    walk.for_each_row([&](int64_t first, const StridedWalk<1>::Offsets& at) {
      CHECK(first == row * 5);
      CHECK(at[0] == (row / 4) * 1 + (row % 4) * 100);
      ++row;
    });
    CHECK(row == 12);
  }
}

TEST_CASE("kernels/strided_copy equals its reference") {
  SUBCASE("every permutation of a 4-d shape with a tile-crossing dim") {
    std::vector<int64_t> order{0, 1, 2, 3};
    do {
      check_permuted_copy({3, 5, 33, 7}, order);
    } while (std::next_permutation(order.begin(), order.end()));
  }
  SUBCASE("the last two swapped: tiles with tails") {
    check_permuted_copy({3, 70, 45}, {0, 2, 1});
    check_permuted_copy({37, 65}, {1, 0});
  }
  SUBCASE("a size-1 dim between the swapped ones") { check_permuted_copy({2, 3, 41, 1, 37}, {0, 1, 4, 3, 2}); }
  SUBCASE("one element, and empty") {
    check_permuted_copy({1, 1}, {1, 0});
    check_permuted_copy({}, {});
    check_permuted_copy({5, 0, 3}, {2, 1, 0});
  }
  SUBCASE("stride 0: expand") {
    // (3, 1, 7) broadcast to (2, 3, 5, 7): a new leading dim and a size-1 dim repeat.
    std::vector<int64_t> sizes{2, 3, 5, 7}, strides{0, 7, 0, 1};
    std::vector<float> src = random_vector(21, 9), got(210, kNaN), want(210, kNaN);
    strided_copy(sizes, strides, src.data(), got.data());
    strided_copy_reference(sizes, strides, src.data(), want.data());
    CHECK(got == want);
    // and along the last dim: (3, 1) -> (3, 33)
    std::vector<int64_t> col_sizes{3, 33}, col_strides{1, 0};
    std::vector<float> got2(99, kNaN), want2(99, kNaN);
    strided_copy(col_sizes, col_strides, src.data(), got2.data());
    strided_copy_reference(col_sizes, col_strides, src.data(), want2.data());
    CHECK(got2 == want2);
  }
}

TEST_CASE("kernels/strided_copy of integers moves what the float one moves") {
  // repeat_interleave's (outer, n, r, inner) read of (outer, n, inner), and a transpose:
  // each element's own index as its value, so the copies must agree number for number.
  struct Case {
    std::vector<int64_t> sizes, strides;
  };
  for (const Case& c : std::vector<Case>{{{2, 3, 4, 5}, {15, 5, 0, 1}}, {{3, 7, 1}, {7, 1, 0}}, {{5, 37}, {1, 5}}}) {
    const int64_t n = product(c.sizes);
    std::vector<int64_t> src(200), got(static_cast<size_t>(n), -1);
    std::iota(src.begin(), src.end(), 0);
    std::vector<float> src_f(src.begin(), src.end()), want(static_cast<size_t>(n), kNaN);
    strided_copy(c.sizes, c.strides, src.data(), got.data());
    strided_copy_reference(c.sizes, c.strides, src_f.data(), want.data());
    CHECK(std::vector<float>(got.begin(), got.end()) == want);
  }
}

TEST_CASE("kernels/copy_rows equals its reference") {
  // A (5, 7) block into a (5, 19) array at column 3, from a (5, 11) one at column 2.
  std::vector<float> src = random_vector(55, 3), got(95, 0.5f), want(95, 0.5f);
  copy_rows(5, 7, src.data() + 2, 11, got.data() + 3, 19);
  copy_rows_reference(5, 7, src.data() + 2, 11, want.data() + 3, 19);
  CHECK(got == want);
  copy_rows(5, 0, src.data(), 11, got.data(), 19);  // nothing to copy: nothing written
  CHECK(got == want);
}

TEST_CASE("kernels/gather and scatter_add equal their references") {
  struct Case {
    int64_t outer, n, inner;
    std::vector<int64_t> pos;
  };
  for (const Case& c : std::vector<Case>{
           {3, 7, 5, {2, 3, 4}},           // a run: narrow
           {3, 7, 5, {6, 0, 6, 6, 1}},     // repeated positions: index_select
           {1, 9, 1, {0, 0, 0, 4, 4, 4}},  // repeat_interleave of a vector
           {5, 4, 33, {3, 1}},             // long inner rows
           {2, 3, 4, {}},                  // nothing taken
       }) {
    CAPTURE(c.outer);
    CAPTURE(c.n);
    CAPTURE(c.inner);
    const int64_t m = static_cast<int64_t>(c.pos.size());
    const size_t taken = static_cast<size_t>(c.outer * m * c.inner),
                 whole = static_cast<size_t>(c.outer * c.n * c.inner);
    std::vector<float> x = random_vector(whole, 5), got(taken, kNaN), want(taken, kNaN);
    gather(c.outer, c.n, c.inner, m, c.pos.data(), x.data(), got.data());
    gather_reference(c.outer, c.n, c.inner, m, c.pos.data(), x.data(), want.data());
    CHECK(got == want);

    // scatter_add adds into what is there; a repeated position gets every copy.
    std::vector<float> g = random_vector(taken, 6), dx = random_vector(whole, 8), dx_ref = dx;
    scatter_add(c.outer, c.n, c.inner, m, c.pos.data(), g.data(), dx.data());
    scatter_add_reference(c.outer, c.n, c.inner, m, c.pos.data(), g.data(), dx_ref.data());
    CHECK(dx == dx_ref);
  }
}
