// DotProductAttention and MultiHeadAttention with need_weights off (the fused
// scaled_dot_product_attention): the same outputs and gradients as with the
// weights kept (the plain path), at sizes that are not multiples of the
// kernel's tiles and with 1-D and 2-D valid lengths; no weights kept;
// dropout in training only; set_need_weights over a module tree.
#include <doctest/doctest.h>

#include <qkv/nn/attention.hpp>
#include <qkv/nn/transformer.hpp>
#include <qkv/qkv.hpp>

#include "reference.hpp"

using namespace qkv;

namespace {

// One forward and backward of `layer` on copies of the inputs, with
// need_weights as given: the output, then every parameter's and input's gradient.
template <class Layer>
std::vector<Tensor> run(Layer& layer, bool need_weights, const std::vector<Tensor>& inputs, const IntTensor& lens,
                        const Tensor& dout) {
  nn::set_need_weights(layer, need_weights);
  layer.zero_grad();
  std::vector<Tensor> x;
  for (const Tensor& t : inputs) x.push_back(t.detach().clone().requires_grad_());
  Tensor out = layer(x[0], x[1], x[2], lens);
  sum(out * dout).backward();
  std::vector<Tensor> results = {out.detach()};
  for (const Tensor& p : layer.parameters()) results.push_back(p.grad().clone());
  for (const Tensor& t : x) results.push_back(t.grad());
  return results;
}

void check_same(const std::vector<Tensor>& fused, const std::vector<Tensor>& plain) {
  REQUIRE(fused.size() == plain.size());
  for (size_t i = 0; i < fused.size(); ++i) test::check_close(fused[i], plain[i], fmt::format("result {}", i));
}

}  // namespace

TEST_CASE("nn/attention fused: DotProductAttention without its weights") {
  Generator gen(4);
  const int64_t B = 3, Q = 70, K = 67, d = 16, dv = 9;
  const std::vector<Tensor> x = {randn({B, Q, d}, gen), randn({B, K, d}, gen), randn({B, K, dv}, gen)};
  const Tensor dout = randn({B, Q, dv}, gen);
  nn::DotProductAttention attention(0.0f, gen);
  for (const IntTensor& lens : {IntTensor(), int_tensor({0, 66, 80}), randint(0, K + 2, {B, Q}, gen)}) {
    SUBCASE(fmt::format("valid_lens {}", lens.defined() ? lens.shape().str() : "none").c_str()) {
      const std::vector<Tensor> plain = run(attention, true, x, lens, dout);
      CHECK(attention.attention_weights.shape() == Shape{B, Q, K});
      const std::vector<Tensor> fused = run(attention, false, x, lens, dout);
      CHECK_FALSE(attention.attention_weights.defined());
      check_same(fused, plain);
    }
  }
}

TEST_CASE("nn/attention fused: MultiHeadAttention without its weights") {
  Generator gen(5);
  const int64_t B = 2, Q = 66, K = 65, H = 24, heads = 3;
  const std::vector<Tensor> x = {randn({B, Q, H}, gen), randn({B, K, H}, gen), randn({B, K, H}, gen)};
  const Tensor dout = randn({B, Q, H}, gen);
  nn::MultiHeadAttention attention(H, heads, 0.0f, true, gen);
  for (const IntTensor& lens : {IntTensor(), int_tensor({1, 64}), randint(0, K + 2, {B, Q}, gen)}) {
    SUBCASE(fmt::format("valid_lens {}", lens.defined() ? lens.shape().str() : "none").c_str()) {
      const std::vector<Tensor> plain = run(attention, true, x, lens, dout);
      const std::vector<Tensor> fused = run(attention, false, x, lens, dout);
      CHECK_THROWS_WITH_AS(attention.attention_weights(), doctest::Contains("with attention->need_weights on"), Error);
      check_same(fused, plain);
    }
  }
}

TEST_CASE("nn/attention fused: dropout in training, none in eval") {
  Generator gen(6);
  nn::DotProductAttention attention(0.5f, gen);
  attention.need_weights = false;
  Tensor x = randn({2, 3, 4}, gen);
  const Tensor plain = nn::DotProductAttention(0.0f)(x, x, x);  // no dropout
  const Tensor dropped = attention(x, x, x);
  CHECK_FALSE(attention.attention_weights.defined());
  CHECK(max(abs(dropped - plain)).item() > 1e-3f);  // some of 18 weights dropped: 2⁻¹⁸ that none is
  attention.eval();
  test::check_close(attention(x, x, x), plain, "eval: no dropout");
  CHECK_FALSE(attention.attention_weights.defined());
}

TEST_CASE("nn/attention fused: set_need_weights reaches every block of a Transformer") {
  nn::TransformerDecoder decoder(13, 12, 20, 3, 2, 0.0f);
  nn::set_need_weights(decoder, false);
  for (size_t i = 0; i < decoder.blks->size(); ++i) {
    auto blk = decoder.blks->at<nn::TransformerDecoderBlock>(i);
    CHECK_FALSE(blk->attention1->attention->need_weights);
    CHECK_FALSE(blk->attention2->attention->need_weights);
  }
  nn::set_need_weights(decoder, true);
  CHECK(decoder.blks->at<nn::TransformerDecoderBlock>(1)->attention2->attention->need_weights);
}
