// nn::Embedding, nn::Dropout and nn::LayerNorm: against PyTorch
// (tools/reference/nn_layers.py -> tests/reference/nn_layers.txt), d2l's printed
// check, dropout's behaviour, and errors.
#include <doctest/doctest.h>

#include <qkv/nn/dropout.hpp>
#include <qkv/nn/embedding.hpp>
#include <qkv/nn/layer_norm.hpp>
#include <qkv/qkv.hpp>

#include <cmath>
#include <string>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_module_against_torch;
using qkv::test::reference_cases;

// ---- Embedding -------------------------------------------------------------------

TEST_CASE("nn/embedding: against PyTorch") {
  // repeated_ids: an id used several times gets every gradient contribution; 1d: 1-d ids.
  for (const std::string& name : reference_cases("nn_layers", "embedding/")) {
    SUBCASE(name.c_str()) {
      const Shape table = test::reference("nn_layers", name).tensor("p.weight").shape();  // (num_embeddings, dim)
      nn::Embedding emb(table[0], table[1]);
      check_module_against_torch("nn_layers", name, emb, [&](const std::vector<Tensor>&, const test::RefCase& c) {
        return std::vector<Tensor>{emb(c.ints_at("ids"))};
      });
    }
  }
}

TEST_CASE("nn/embedding: lookup, gradient by hand, init and printing") {
  Generator gen(3);
  nn::Embedding emb(4, 2, gen);
  CHECK(emb.weight.shape() == Shape{4, 2});
  Tensor y = emb(int_tensor({1, 1, 3, 1}, {2, 2}));  // (2, 2) -> (2, 2, 2)
  CHECK(y.shape() == Shape{2, 2, 2});
  CHECK(y.at({1, 0, 1}) == emb.weight.at({3, 1}));
  sum(y).backward();
  // Row 1 was picked three times, row 3 once, rows 0 and 2 never.
  CHECK(emb.weight.grad().to_vector() == std::vector<float>{0, 0, 3, 3, 0, 0, 1, 1});

  // N(0, 1): a large table has mean ≈ 0 and variance ≈ 1.
  nn::Embedding big(200, 50, gen);
  std::vector<float> v = big.weight.to_vector();
  double m = 0, s2 = 0;
  for (float x : v) m += x;
  m /= static_cast<double>(v.size());
  for (float x : v) s2 += (x - m) * (x - m);
  s2 /= static_cast<double>(v.size());
  CHECK(std::abs(m) < 0.03);
  CHECK(std::abs(s2 - 1) < 0.05);

  CHECK(emb.repr().find("Embedding(4, 2)") == 0);
}

TEST_CASE("nn/embedding: errors") {
  nn::Embedding emb(10, 3);
  CHECK_THROWS_WITH_AS(emb(int_tensor({1, 10, 2})),
                       doctest::Contains("embedding: index 10 out of range for a weight of 10 rows (10, 3)"), Error);
  CHECK_THROWS_WITH_AS(emb(int_tensor({-1})),
                       doctest::Contains("embedding: index -1 out of range for a weight of 10 rows"), Error);
  CHECK_THROWS_WITH_AS(emb(IntTensor()), doctest::Contains("Embedding: ids is an undefined IntTensor"), Error);
  CHECK_THROWS_WITH_AS(nn::Embedding(0, 3),
                       doctest::Contains("Embedding: num_embeddings 0 and embedding_dim 3 must be positive"), Error);
}

// ---- Dropout ---------------------------------------------------------------------

TEST_CASE("nn/dropout: eval mode against PyTorch") {
  nn::Dropout drop(0.5);
  drop.eval();
  check_module_against_torch(
      "nn_layers", "dropout/eval", drop,
      [&](const std::vector<Tensor>& x, const test::RefCase&) { return std::vector<Tensor>{drop(x[0])}; });
}

TEST_CASE("nn/dropout: training drops a fraction p and scales the rest") {
  Generator gen(7);
  const float p = 0.3f;
  nn::Dropout drop(p, gen);
  Tensor x = ones({100, 100});
  SUBCASE("training") {
    CHECK(drop.is_training());
    std::vector<float> y = drop(x).to_vector();
    int64_t dropped = 0, scaled = 0;
    for (float v : y) {
      if (v == 0)
        ++dropped;
      else if (std::abs(v - 1 / (1 - p)) < 1e-6f)
        ++scaled;  // survivors scaled by 1/(1-p)
    }
    CHECK(dropped + scaled == 10000);
    // 10000 Bernoulli(0.3) draws: standard deviation ≈ 0.0046 of the fraction.
    CHECK(std::abs(static_cast<double>(dropped) / 10000 - p) < 0.02);
  }
  SUBCASE("eval is the identity") {
    drop.eval();
    CHECK(drop(x).to_vector() == x.to_vector());
    drop.train();
    CHECK(drop(x).to_vector() != x.to_vector());
  }
  SUBCASE("the gradient goes through the kept elements only, scaled") {
    Tensor leaf = ones({50}).requires_grad_();
    Tensor y = drop(leaf);
    sum(y).backward();
    CHECK(leaf.grad().to_vector() == y.to_vector());  // d(sum(x ⊙ mask))/dx = mask = y for x = 1
  }
  SUBCASE("p = 0 keeps everything, p = 1 drops everything") {
    CHECK(nn::Dropout(0.0f, gen)(x).to_vector() == x.to_vector());
    CHECK(sum(nn::Dropout(1.0f, gen)(x)).item() == 0);
  }
}

TEST_CASE("nn/dropout: seeded repeatability") {
  Generator g1(42), g2(42);
  nn::Dropout a(0.5f, g1), b(0.5f, g2);
  Tensor x = ones({64});
  std::vector<float> first = a(x).to_vector();
  CHECK(first == b(x).to_vector());  // the same seed gives the same mask
  CHECK(first != a(x).to_vector());  // the layer draws on from its generator: a new mask
  g2.manual_seed(42);
  CHECK(first == b(x).to_vector());  // reseeding the generator replays the masks
}

TEST_CASE("nn/dropout: errors and printing") {
  CHECK_THROWS_WITH_AS(nn::Dropout(1.5f),
                       doctest::Contains("Dropout: probability has to be between 0 and 1, but got 1.5"), Error);
  CHECK_THROWS_WITH_AS(nn::Dropout(-0.1f), doctest::Contains("Dropout: probability"), Error);
  CHECK(nn::Dropout(0.25f).repr().find("Dropout(p=0.25, inplace=False)") == 0);
}

// ---- LayerNorm -------------------------------------------------------------------

TEST_CASE("nn/layer_norm: against PyTorch") {
  // Over the last dim, over the last two, and without affine parameters; each
  // case holds the constructor's arguments.
  for (const std::string& name : reference_cases("nn_layers", "layer_norm/")) {
    SUBCASE(name.c_str()) {
      const test::RefCase& c = test::reference("nn_layers", name);
      const bool affine = c.ints_at("elementwise_affine").item() != 0;
      nn::LayerNorm ln(Shape(c.ints_at("normalized_shape").to_vector()), c.tensor("eps").item(), affine);
      if (!affine) CHECK(ln.parameters().empty());
      check_module_against_torch("nn_layers", name, ln, [&](const std::vector<Tensor>& x, const test::RefCase&) {
        return std::vector<Tensor>{ln(x[0])};
      });
    }
  }
}

TEST_CASE("nn/layer_norm: d2l's check") {
  // d2l 11.7: ln = nn.LayerNorm(2); ln(tensor([[1, 2], [2, 3]])) prints
  // [[-1.0000, 1.0000], [-1.0000, 1.0000]]: each row is normalised on its own
  // (exactly ±0.5 / sqrt(0.25 + 1e-5) ≈ ±0.99998).
  nn::LayerNorm ln(2);
  Tensor y = ln(tensor({1, 2, 2, 3}, {2, 2}));
  std::vector<float> want = {-1, 1, -1, 1};
  for (size_t i = 0; i < want.size(); ++i) CHECK(y.to_vector()[i] == doctest::Approx(want[i]).epsilon(1e-3));
}

TEST_CASE("nn/layer_norm: init, printing and errors") {
  nn::LayerNorm ln(Shape{2, 3});
  CHECK(ln.weight.to_vector() == std::vector<float>(6, 1.0f));
  CHECK(ln.bias.to_vector() == std::vector<float>(6, 0.0f));
  CHECK(ln.repr().find("LayerNorm((2, 3), eps=1e-05, elementwise_affine=True)") == 0);
  CHECK(nn::LayerNorm(4).repr().find("LayerNorm((4,), eps=1e-05, elementwise_affine=True)") == 0);
  CHECK_THROWS_WITH_AS(
      ln(zeros({4, 3, 2})),
      doctest::Contains("layer_norm: normalized_shape (2, 3) does not match the trailing dims of x (4, 3, 2)"), Error);
  CHECK_THROWS_WITH_AS(
      ln(zeros({3})),
      doctest::Contains("layer_norm: normalized_shape (2, 3) does not match the trailing dims of x (3)"), Error);
  CHECK_THROWS_WITH_AS(nn::LayerNorm(0), doctest::Contains("LayerNorm: normalized_shape (0) must have positive sizes"),
                       Error);
}
