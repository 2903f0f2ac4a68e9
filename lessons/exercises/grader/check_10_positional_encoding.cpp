// The checks of exercise 10, the sinusoidal positional encoding matrix.
//   expected:  qkv's nn::PositionalEncoding's table P, and d2l's PositionalEncoding
//              in PyTorch (its P, stored)
//   cases:     lesson 10's table (60 positions, 32 features), H = 2, one position,
//              a wide table, three random tables (fresh at every grading), PyTorch's
//              tables. No gradients: P is a constant.
#include <cmath>

#include "10_positional_encoding.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

namespace {

// The table with one known mistake switched on.
struct Variant {
  bool swap = false, halves = false, odd_own_frequency = false, from_one = false, j_over_H = false;
};

Tensor variant(int64_t max_len, int64_t H, Variant how) {
  std::vector<float> P(static_cast<size_t>(max_len * H));
  for (int64_t i = 0; i < max_len; ++i) {
    for (int64_t j = 0; j < H / 2; ++j) {
      auto angle = [&](int64_t col) {
        const double exponent = static_cast<double>(how.j_over_H ? j : col) / static_cast<double>(H);
        return static_cast<double>(how.from_one ? i + 1 : i) / std::pow(10000.0, exponent);
      };
      const double a = angle(2 * j), b = how.odd_own_frequency ? angle(2 * j + 1) : a;
      const float s = static_cast<float>(std::sin(a)), c = static_cast<float>(std::cos(b));
      const int64_t sin_col = how.halves ? j : 2 * j, cos_col = how.halves ? H / 2 + j : 2 * j + 1;
      P[static_cast<size_t>(i * H + sin_col)] = how.swap ? c : s;
      P[static_cast<size_t>(i * H + cos_col)] = how.swap ? s : c;
    }
  }
  return tensor(P, {max_len, H});
}

void check_table(Grader& g, const Tensor& got, const Tensor& want, int64_t max_len, int64_t H) {
  auto explain = [=](const std::vector<int64_t>& i) {
    const int64_t col = i[1] - i[1] % 2;
    return fmt::format(
        "position i = {}, column {} ({} of the pair 2j = {}): angle i / 10000^({}/{}) = {:.6g}", i[0], i[1],
        i[1] % 2 ? "cos" : "sin", col, col, H,
        static_cast<double>(i[0]) / std::pow(10000.0, static_cast<double>(col) / static_cast<double>(H)));
  };
  auto mistake = [=](Variant how) { return [=] { return variant(max_len, H, how); }; };
  g.check({"P", "P[i, 2j] = sin(i / 10000^(2j/H)), P[i, 2j+1] = cos(…), (max_len, H)"}, got, want, explain,
          {{"sin and cos swapped", "the even columns 2j hold sin, the odd ones 2j+1 cos", mistake({.swap = true})},
           {"sin and cos in two halves instead of interleaved",
            "column 2j is sin and column 2j+1 is cos of the same angle: interleave them, not [sin … | cos …]",
            mistake({.halves = true})},
           {"each cos column given its own frequency",
            "the pair (2j, 2j+1) shares one angle, i / 10000^(2j/H): the odd column uses its even neighbour's 2j",
            mistake({.odd_own_frequency = true})},
           {"the exponent j/H instead of 2j/H",
            "j counts pairs, so the exponent is 2j/H (the even column's index over H): frequencies down to 1/10000",
            mistake({.j_over_H = true})},
           {"positions counted from 1", "the first position is i = 0, whose row is [0, 1, 0, 1, …]",
            mistake({.from_one = true})}});
}

void grade_case(Grader& g, const std::string& name, int64_t max_len, int64_t H) {
  g.begin_case(name, fmt::format("max_len {}, num_hiddens {}", max_len, H));
  Tensor got = g.call({}, [&] { return positional_encoding(max_len, H); });
  nn::PositionalEncoding layer(H, 0.0f, max_len);
  check_table(g, got, layer.P.reshape({max_len, H}), max_len, H);
}

}  // namespace

int main(int argc, char** argv) {
  return grade(10, argc, argv, [](Grader& g) {
    g.forbid({{"qkv::nn::PositionalEncoding::", "",
               "exercise 10 is the positional encoding itself: not nn::PositionalEncoding's table"}});
    grade_case(g, "lesson 10's table", 60, 32);
    grade_case(g, "H = 2", 5, 2);
    grade_case(g, "one position", 1, 8);
    grade_case(g, "a wide table", 12, 128);
    // Random tables, fresh at every grading: 1 to 50 positions, an even H from 2 to 64.
    Generator gen(g.seed());
    for (int i = 1; i <= 3; ++i) {
      const int64_t max_len = 1 + randint(0, 50, {1}, gen).at({0});
      const int64_t H = 2 * (1 + randint(0, 32, {1}, gen).at({0}));
      grade_case(g, fmt::format("a random table {}", i), max_len, H);
    }
    for (const TorchCase& c : g.torch_cases("10/")) {
      const Tensor P = c.f("P");
      const int64_t max_len = P.size(0), H = P.size(1);
      g.begin_case("PyTorch: " + c.name, fmt::format("max_len {}, num_hiddens {}", max_len, H));
      Tensor got = g.call({}, [&] { return positional_encoding(max_len, H); });
      check_table(g, got, P, max_len, H);
    }
  });
}
