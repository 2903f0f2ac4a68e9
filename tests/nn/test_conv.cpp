// nn::Conv1d: against torch.nn.Conv1d with the same weights
// (tools/reference/conv.py -> tests/reference/conv.txt), PyTorch's initialisation
// bounds (from its formula), printing, and errors.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <algorithm>
#include <cmath>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_module_against_torch;
using qkv::test::reference_cases;

TEST_CASE("nn/conv1d: against PyTorch") {
  for (const std::string& name : reference_cases("conv", "Conv1d/")) {
    SUBCASE(name.c_str()) {
      const test::RefCase& c = test::reference("conv", name);
      auto at = [&](const char* key) { return c.ints_at(key).item(); };
      nn::Conv1d conv(at("in_channels"), at("out_channels"), at("kernel_size"), at("stride"), at("padding"),
                      at("dilation"), at("bias") != 0);
      check_module_against_torch("conv", name, conv, [&](const std::vector<Tensor>& x, const test::RefCase&) {
        return std::vector<Tensor>{conv(x[0])};
      });
    }
  }
}

TEST_CASE("nn/conv1d: shapes, PyTorch's initialisation, printing") {
  Generator gen(5);
  nn::Conv1d conv(8, 16, 5, 1, 2, 1, true, gen);
  CHECK(conv.weight.shape() == Shape{16, 8, 5});
  CHECK(conv.bias.shape() == Shape{16});
  CHECK(conv.named_parameters().size() == 2);
  CHECK(conv(zeros({3, 8, 20})).shape() == Shape{3, 16, 20});  // padding (K − 1)/2 keeps the length
  // kaiming_uniform(a = √5): bound = √(2 / (1 + 5)) · √(3 / fan_in) = 1/√fan_in, fan_in = 8·5 = 40;
  // the bias has the same bound. 640 draws come close to it.
  const float bound = 1.0f / std::sqrt(40.0f);
  for (const Tensor& p : {conv.weight, conv.bias}) {
    std::vector<float> v = p.to_vector();
    float largest = 0;
    for (float x : v) largest = std::max(largest, std::abs(x));
    CHECK(largest <= bound);
  }
  std::vector<float> w = conv.weight.to_vector();
  CHECK(*std::max_element(w.begin(), w.end()) > 0.95f * bound);
  CHECK(*std::min_element(w.begin(), w.end()) < -0.95f * bound);

  nn::Conv1d plain(2, 3, 4, 1, 0, 1, false);
  CHECK(!plain.bias.defined());
  CHECK(plain.named_parameters().size() == 1);
  // torch.nn.Conv1d's repr.
  CHECK(plain.repr().find("Conv1d(2, 3, kernel_size=(4,), stride=(1,), bias=False)") == 0);
  CHECK(nn::Conv1d(4, 6, 3, 2, 2, 2)
            .repr()
            .find("Conv1d(4, 6, kernel_size=(3,), stride=(2,), padding=(2,), dilation=(2,))") == 0);
}

TEST_CASE("nn/conv1d: errors") {
  CHECK_THROWS_WITH_AS(nn::Conv1d(0, 3, 2),
                       doctest::Contains("Conv1d: in_channels 0, out_channels 3 and kernel_size 2 must be positive"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::Conv1d(2, 3, 2, 0),
                       doctest::Contains("Conv1d: stride 0 and dilation 1 must be ≥ 1 and padding 0 ≥ 0"), Error);
  CHECK_THROWS_WITH_AS(nn::Conv1d(2, 3, 2, 1, -1),
                       doctest::Contains("Conv1d: stride 1 and dilation 1 must be ≥ 1 and padding -1 ≥ 0"), Error);
  nn::Conv1d conv(2, 3, 3);
  CHECK_THROWS_WITH_AS(conv(zeros({1, 4, 5})),
                       doctest::Contains("conv1d: input (1, 4, 5) has 4 channels, but weight (3, 2, 3) expects 2"),
                       Error);
}
