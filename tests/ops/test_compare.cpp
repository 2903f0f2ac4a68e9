// Tests for src/ops/compare.cpp: the comparisons lt le gt ge eq ne (free
// functions, operators and methods, on Tensor and IntTensor), where and
// sequence_mask. Against PyTorch (tests/reference/compare.txt, made by
// tools/reference/compare.py: broadcasting, scalars, ties and NaN), by
// gradcheck, from mathematics, and their errors.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_against_torch;
using qkv::test::check_close;
using qkv::test::RefCase;
using qkv::test::reference;

namespace {

const float NaN = std::numeric_limits<float>::quiet_NaN();

// The float operand `key` of a case, with NaN put back where the case's
// int mask <key>_nan says (the data files cannot spell NaN).
Tensor operand(const RefCase& c, const std::string& key) {
  Tensor x = c.tensor(key);
  return c.has(key + "_nan") ? masked_fill(x, c.ints_at(key + "_nan"), NaN) : x;
}

// Every form of one comparison must give torch's mask: forms(a, b) returns
// {free function, operator, method}.
void check_masks(const std::vector<IntTensor>& got, const IntTensor& want, const std::string& what) {
  const char* const FORM[] = {"free function", "operator", "method"};
  REQUIRE(got.size() == 3);
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(what << ", " << FORM[i]);
    REQUIRE(got[i].shape() == want.shape());
    CHECK(got[i].to_vector() == want.to_vector());
  }
}

// The float cases of compare.py, then the IntTensor ones; a 0-d second
// operand is also passed as a plain scalar (the float / int64 overloads).
template <class Forms>
void check_compare_against_torch(const std::string& op, Forms forms) {
  for (const char* tag : {"same", "broadcast", "row", "scalar", "scalar_tie", "nan", "nan_scalar"}) {
    SUBCASE(tag) {
      const RefCase& c = reference("compare", op + "/" + tag);
      Tensor a = operand(c, "x0"), b = operand(c, "x1");
      IntTensor want = c.ints_at("out");
      check_masks(forms(a, b), want, c.name);
      if (b.dim() == 0) check_masks(forms(a, b.item()), want, c.name + " with a float scalar");
    }
  }
  for (const char* tag : {"int_same", "int_broadcast", "int_row", "int_scalar"}) {
    SUBCASE(tag) {
      const RefCase& c = reference("compare", op + "/" + tag);
      IntTensor a = c.ints_at("a0"), b = c.ints_at("a1");
      IntTensor want = c.ints_at("out");
      check_masks(forms(a, b), want, c.name);
      if (b.dim() == 0) check_masks(forms(a, b.item()), want, c.name + " with an int64 scalar");
    }
  }
}

}  // namespace

// ---- comparisons ------------------------------------------------------------------

TEST_CASE("ops/lt against torch") {
  check_compare_against_torch("lt", [](const auto& a, const auto& b) {
    return std::vector<IntTensor>{lt(a, b), a < b, a.lt(b)};
  });
}
TEST_CASE("ops/le against torch") {
  check_compare_against_torch("le", [](const auto& a, const auto& b) {
    return std::vector<IntTensor>{le(a, b), a <= b, a.le(b)};
  });
}
TEST_CASE("ops/gt against torch") {
  check_compare_against_torch("gt", [](const auto& a, const auto& b) {
    return std::vector<IntTensor>{gt(a, b), a > b, a.gt(b)};
  });
}
TEST_CASE("ops/ge against torch") {
  check_compare_against_torch("ge", [](const auto& a, const auto& b) {
    return std::vector<IntTensor>{ge(a, b), a >= b, a.ge(b)};
  });
}
TEST_CASE("ops/eq against torch") {
  check_compare_against_torch("eq", [](const auto& a, const auto& b) {
    return std::vector<IntTensor>{eq(a, b), a == b, a.eq(b)};
  });
}
TEST_CASE("ops/ne against torch") {
  check_compare_against_torch("ne", [](const auto& a, const auto& b) {
    return std::vector<IntTensor>{ne(a, b), a != b, a.ne(b)};
  });
}

TEST_CASE("ops/comparisons from mathematics") {
  SUBCASE("a length mask: arange(4) < lengths[:, None]") {
    IntTensor keep = arange_int(0, 4) < int_tensor({2, 3}).reshape({2, 1});  // (4) < (2, 1) -> (2, 4)
    CHECK(keep.shape() == Shape{2, 4});
    CHECK(keep.to_vector() == std::vector<int64_t>{1, 1, 0, 0, 1, 1, 1, 0});
  }
  SUBCASE("NaN: every comparison is false except ne, also NaN against itself") {
    Tensor x = tensor({NaN});
    CHECK((x < x).item() == 0);
    CHECK((x <= x).item() == 0);
    CHECK((x > x).item() == 0);
    CHECK((x >= x).item() == 0);
    CHECK((x == x).item() == 0);
    CHECK((x != x).item() == 1);
  }
  SUBCASE("infinities order as numbers") {
    const float inf = std::numeric_limits<float>::infinity();
    Tensor x = tensor({-inf, -1, inf});
    CHECK((x < inf).to_vector() == std::vector<int64_t>{1, 1, 0});
    CHECK((x == tensor({-inf, 0, inf})).to_vector() == std::vector<int64_t>{1, 0, 1});
  }
  SUBCASE("empty operands give an empty mask of the broadcast shape") {
    IntTensor m = zeros({0, 3}) < zeros({3});
    CHECK(m.shape() == Shape{0, 3});
    CHECK(m.numel() == 0);
  }
  SUBCASE("a comparison has no gradient: its operands stay out of the graph") {
    Tensor x = randn({3}).requires_grad_();
    Tensor y = where(x > 0.0f, x, 0.0f);  // relu, written with a mask
    sum(y).backward();
    for (int64_t i = 0; i < 3; ++i) CHECK(x.grad().at({i}) == (x.at({i}) > 0 ? 1.0f : 0.0f));
  }
}

TEST_CASE("ops/comparison errors") {
  CHECK_THROWS_WITH_AS(lt(zeros({2, 3}), zeros({4})), doctest::Contains("lt: shapes (2, 3) and (4) do not broadcast"),
                       Error);
  CHECK_THROWS_WITH_AS(static_cast<void>(zeros({2, 3}) == zeros({2, 2})),
                       doctest::Contains("eq: shapes (2, 3) and (2, 2) do not broadcast"), Error);
  CHECK_THROWS_WITH_AS(static_cast<void>(IntTensor::empty({5}) >= IntTensor::empty({2, 3})),
                       doctest::Contains("ge: shapes (5) and (2, 3) do not broadcast"), Error);
  CHECK_THROWS_WITH_AS(gt(Tensor(), zeros({2})), doctest::Contains("gt: undefined a"), Error);
  CHECK_THROWS_WITH_AS(ne(zeros({2}), Tensor()), doctest::Contains("ne: undefined b"), Error);
  CHECK_THROWS_WITH_AS(static_cast<void>(IntTensor() < 3), doctest::Contains("lt: undefined a"), Error);
  CHECK_THROWS_WITH_AS(le(int_tensor({1}), IntTensor()), doctest::Contains("le: undefined b"), Error);
}

// ---- where -------------------------------------------------------------------------

TEST_CASE("ops/where against torch") {
  for (const char* tag : {"same", "broadcast", "broadcast_mask", "scalar_b", "scalar_a"}) {
    SUBCASE(tag) {
      check_against_torch("compare", std::string("where/") + tag, [](const std::vector<Tensor>& x, const RefCase& c) {
        return where(c.ints_at("mask"), x[0], x[1]);
      });
    }
  }
  SUBCASE("float scalar forms") {
    const RefCase& b = reference("compare", "where/scalar_b");
    check_close(where(b.ints_at("mask"), b.tensor("x0"), b.tensor("x1").item()), b.tensor("out"), "where(mask, a, s)");
    const RefCase& a = reference("compare", "where/scalar_a");
    check_close(where(a.ints_at("mask"), a.tensor("x0").item(), a.tensor("x1")), a.tensor("out"), "where(mask, s, b)");
  }
}

TEST_CASE("ops/where gradcheck") {
  Generator gen(7);
  struct Shapes {
    Shape mask, a, b;
  };
  for (const Shapes& s :
       {Shapes{{3, 4}, {3, 4}, {3, 4}}, Shapes{{2, 1, 4}, {3, 1}, {4}}, Shapes{{3, 1}, {2, 3, 4}, {}}}) {
    SUBCASE(fmt::format("mask {} a {} b {}", s.mask, s.a, s.b).c_str()) {
      IntTensor mask = randint(0, 2, s.mask, gen);
      auto r = gradcheck([&](const std::vector<Tensor>& x) { return where(mask, x[0], x[1]); },
                         {randn(s.a, gen), randn(s.b, gen)});
      CHECK_MESSAGE(r.ok, r.message);
    }
  }
}

TEST_CASE("ops/where from mathematics") {
  SUBCASE("the branch not taken gets exactly zero gradient, even from an infinite dout") {
    // y = where([1, 0], a, b), dout = [inf, 1]: da = [inf, 0], db = [0, 1]
    // (a gradient made by multiplying with the mask would give db[0] = inf·0 = NaN).
    Tensor a = tensor({1, 2}).requires_grad_(), b = tensor({3, 4}).requires_grad_();
    where(int_tensor({1, 0}), a, b).backward(tensor({std::numeric_limits<float>::infinity(), 1}));
    CHECK(a.grad().to_vector() == std::vector<float>{std::numeric_limits<float>::infinity(), 0});
    CHECK(b.grad().to_vector() == std::vector<float>{0, 1});
  }
  SUBCASE("any non-zero mask value picks a") {
    Tensor y = where(int_tensor({0, -3, 7}), tensor({1, 2, 3}), 9.0f);
    CHECK(y.to_vector() == std::vector<float>{9, 2, 3});
  }
}

TEST_CASE("ops/where errors") {
  CHECK_THROWS_WITH_AS(where(int_tensor({1, 0, 1}), zeros({2}), zeros({3})),
                       doctest::Contains("where: mask (3), a (2) and b (3) do not broadcast"), Error);
  CHECK_THROWS_WITH_AS(where(int_tensor({1, 0}), zeros({2, 3}), 0.0f),
                       doctest::Contains("where: mask (2), a (2, 3) and b () do not broadcast"), Error);
  CHECK_THROWS_WITH_AS(where(IntTensor(), zeros({2}), zeros({2})), doctest::Contains("where: undefined mask"), Error);
  CHECK_THROWS_WITH_AS(where(int_tensor({1, 0}), Tensor(), zeros({2})), doctest::Contains("where: undefined a"), Error);
  CHECK_THROWS_WITH_AS(where(int_tensor({1, 0}), 1.0f, Tensor()), doctest::Contains("where: undefined b"), Error);
}

// ---- sequence_mask -----------------------------------------------------------------

TEST_CASE("ops/sequence_mask against torch") {
  for (const char* tag : {"2d", "3d_value", "4d"}) {
    SUBCASE(tag) {
      check_against_torch("compare", std::string("sequence_mask/") + tag,
                          [](const std::vector<Tensor>& x, const RefCase& c) {
                            return sequence_mask(x[0], c.ints_at("valid_len"), c.tensor("value").item());
                          });
    }
  }
}

TEST_CASE("ops/sequence_mask gradcheck") {
  Generator gen(8);
  IntTensor valid_len = int_tensor({0, 2, 5});
  auto r = gradcheck([&](const std::vector<Tensor>& x) { return sequence_mask(x[0], valid_len, -1.0f); },
                     {randn({3, 4, 2}, gen)});
  CHECK_MESSAGE(r.ok, r.message);
}

TEST_CASE("ops/sequence_mask errors") {
  CHECK_THROWS_WITH_AS(sequence_mask(ones({3}), int_tensor({1, 2, 3})),
                       doctest::Contains("sequence_mask: X (3) must have at least 2 dims"), Error);
  CHECK_THROWS_WITH_AS(sequence_mask(ones({2, 3}), int_tensor({1, 2, 3})),
                       doctest::Contains("sequence_mask: valid_len (3) does not fit X (2, 3): expected (2)"), Error);
  CHECK_THROWS_WITH_AS(sequence_mask(ones({2, 3}), int_tensor({1, -2})),
                       doctest::Contains("sequence_mask: valid_len[1] = -2 is negative"), Error);
  CHECK_THROWS_WITH_AS(sequence_mask(Tensor(), int_tensor({1})), doctest::Contains("sequence_mask: undefined X"),
                       Error);
  CHECK_THROWS_WITH_AS(sequence_mask(ones({2, 3}), IntTensor()),
                       doctest::Contains("sequence_mask: undefined valid_len"), Error);
}
