// Tests for src/ops/conv.cpp: conv1d and its im2col. Against PyTorch
// (tests/reference/conv.txt, made by tools/reference/conv.py), by gradcheck for
// several stride/padding/dilation settings, from mathematics (a hand-worked
// convolution, col2im's overlap counts), and their errors.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <string>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_against_torch;
using qkv::test::RefCase;
using qkv::test::reference_cases;

namespace {

struct Setting {
  int64_t N, C, O, L, K, stride, padding, dilation;
};
// Overlapping windows, gaps between windows, padding wider than the kernel,
// dilation with padding, a kernel as long as the input, K = 1.
const Setting GRADCHECK_SETTINGS[] = {
    {2, 3, 2, 7, 3, 1, 0, 1},  {1, 2, 3, 9, 3, 2, 1, 1},  {2, 2, 2, 10, 2, 3, 0, 1}, {1, 2, 2, 4, 3, 1, 3, 1},
    {2, 2, 3, 11, 3, 1, 2, 2}, {1, 3, 2, 13, 4, 2, 2, 3}, {2, 2, 2, 5, 5, 1, 0, 1},  {1, 4, 3, 6, 1, 1, 0, 1},
};

}  // namespace

TEST_CASE("ops/conv1d against torch") {
  for (const std::string& name : reference_cases("conv", "conv1d/")) {
    SUBCASE(name.c_str()) {
      check_against_torch("conv", name, [](const std::vector<Tensor>& x, const RefCase& c) {
        Tensor bias = x.size() > 2 ? x[2] : Tensor();
        return conv1d(x[0], x[1], bias, c.ints_at("stride").item(), c.ints_at("padding").item(),
                      c.ints_at("dilation").item());
      });
    }
  }
}

TEST_CASE("ops/conv1d gradcheck") {
  Generator gen(7);
  for (const Setting& s : GRADCHECK_SETTINGS) {
    SUBCASE(
        fmt::format("L {} K {} stride {} padding {} dilation {}", s.L, s.K, s.stride, s.padding, s.dilation).c_str()) {
      std::vector<Tensor> inputs = {randn({s.N, s.C, s.L}, gen), randn({s.O, s.C, s.K}, gen), randn({s.O}, gen)};
      auto r = gradcheck(
          [&](const std::vector<Tensor>& x) { return conv1d(x[0], x[1], x[2], s.stride, s.padding, s.dilation); },
          inputs);
      CHECK_MESSAGE(r.ok, r.message);
      auto r_no_bias = gradcheck(
          [&](const std::vector<Tensor>& x) { return conv1d(x[0], x[1], Tensor(), s.stride, s.padding, s.dilation); },
          {inputs[0], inputs[1]});
      CHECK_MESSAGE(r_no_bias.ok, r_no_bias.message);
    }
  }
}

TEST_CASE("ops/conv1d by hand (from mathematics)") {
  // x = [1 2 3 4 5], w = [1 0 -1], padding 1, stride 2, bias 10:
  // the padded input is [0 1 2 3 4 5 0]; windows start at 0, 2, 4:
  //   [0 1 2]·w = -2, [2 3 4]·w = -2, [4 5 0]·w = 4;  L_out = ⌊(5 + 2 − 2 − 1)/2⌋ + 1 = 3.
  Tensor x = tensor({1, 2, 3, 4, 5}, {1, 1, 5});
  Tensor w = tensor({1, 0, -1}, {1, 1, 3});
  Tensor y = conv1d(x, w, tensor({10}, {1}), /*stride=*/2, /*padding=*/1);
  CHECK(y.shape() == Shape{1, 1, 3});
  CHECK(y.to_vector() == std::vector<float>{8, 8, 14});
  // Dilation 2 reads x[t], x[t + 2], x[t + 4]: only t = 0 fits, 1 − 5 = −4.
  CHECK(conv1d(x, w, Tensor(), 1, 0, 2).to_vector() == std::vector<float>{-4});
}

TEST_CASE("ops/im2col1d: col2im adds each position once per window that reads it (from mathematics)") {
  // L = 6, K = 3, stride 1, no padding: positions 0..5 are read by 1, 2, 3, 3, 2, 1 windows.
  Tensor x = zeros({1, 1, 6}).requires_grad_();
  Tensor cols = im2col1d(x, 3);
  CHECK(cols.shape() == Shape{1, 4, 3});
  sum(cols).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{1, 2, 3, 3, 2, 1});
  // Stride 2 > dilation·(K − 1): K = 2, gaps, so position 2 of every 3 is never read.
  Tensor x2 = zeros({1, 1, 7}).requires_grad_();
  sum(im2col1d(x2, 2, /*stride=*/3)).backward();
  CHECK(x2.grad().to_vector() == std::vector<float>{1, 1, 0, 1, 1, 0, 0});
  // Column layout: cols[n, t, c·K + k] = x[n, c, t + k].
  Tensor y = im2col1d(tensor({0, 1, 2, 10, 11, 12}, {1, 2, 3}), 2);
  CHECK(y.to_vector() == std::vector<float>{0, 1, 10, 11, 1, 2, 11, 12});
}

TEST_CASE("ops/conv1d errors") {
  Tensor x = zeros({2, 3, 8}), w = zeros({4, 3, 3});
  CHECK_THROWS_WITH_AS(conv1d(zeros({3, 8}), w), doctest::Contains("conv1d: input (3, 8) must be 3-D (N, C_in, L)"),
                       Error);
  CHECK_THROWS_WITH_AS(conv1d(x, zeros({4, 3})), doctest::Contains("conv1d: weight (4, 3) must be 3-D"), Error);
  CHECK_THROWS_WITH_AS(conv1d(x, zeros({4, 2, 3})),
                       doctest::Contains("conv1d: input (2, 3, 8) has 3 channels, but weight (4, 2, 3) expects 2"),
                       Error);
  CHECK_THROWS_WITH_AS(conv1d(x, w, zeros({3})),
                       doctest::Contains("conv1d: bias (3) does not fit weight (4, 3, 3): expected (4)"), Error);
  CHECK_THROWS_WITH_AS(conv1d(x, w, Tensor(), 0), doctest::Contains("conv1d: stride 0 must be ≥ 1"), Error);
  CHECK_THROWS_WITH_AS(conv1d(x, w, Tensor(), 1, 0, 0), doctest::Contains("conv1d: dilation 0 must be ≥ 1"), Error);
  CHECK_THROWS_WITH_AS(conv1d(x, w, Tensor(), 1, -1), doctest::Contains("conv1d: padding -1 must be ≥ 0"), Error);
  // L = 8, K = 3, dilation 4: the kernel spans 9 > 8 positions, L_out = ⌊(8 − 9)/1⌋ + 1 = 0.
  CHECK_THROWS_WITH_AS(conv1d(x, w, Tensor(), 1, 0, 4),
                       doctest::Contains("conv1d: input (2, 3, 8) is too short: length 8 padded by 0 on each side is "
                                         "8, but kernel size 3 with dilation 4 spans 9 positions, so L_out = 0 < 1"),
                       Error);
  // Stride 3, short by 5: L_out = ⌊−5/3⌋ + 1 = −1.
  CHECK_THROWS_WITH_AS(conv1d(zeros({1, 3, 4}), zeros({1, 3, 9}), Tensor(), 3),
                       doctest::Contains("spans 9 positions, so L_out = -1 < 1"), Error);
  CHECK_THROWS_WITH_AS(im2col1d(x, 0), doctest::Contains("im2col1d: kernel size 0 must be ≥ 1"), Error);
  CHECK_THROWS_WITH_AS(conv1d(x, zeros({4, 3, 0})), doctest::Contains("conv1d: kernel size 0 must be ≥ 1"), Error);
}
