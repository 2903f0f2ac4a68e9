// nn::RNN, nn::GRU and nn::LSTM: against PyTorch (tools/reference/nn_rnn.py
// -> tests/reference/nn_rnn.txt: outputs, final states and the gradients of every
// parameter, of x and of the initial state), d2l's shapes, between-layer
// dropout, and errors.
#include <doctest/doctest.h>

#include <qkv/nn/rnn.hpp>
#include <qkv/qkv.hpp>

#include <cmath>
#include <string>
#include <type_traits>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_module_against_torch;
using qkv::test::RefCase;

namespace {

// Sizes for the checks of shapes below (nn_rnn.py uses the same: I = 3, H = 5).
constexpr int64_t I = 3, H = 5;

// x0 is x; x1, if present, is h0.
template <class M>
void check_rnn(const std::string& name, M& m) {
  check_module_against_torch("nn_rnn", name, m, [&](const std::vector<Tensor>& x, const RefCase&) {
    auto [output, h_n] = m(x[0], x.size() > 1 ? x[1] : Tensor());
    return std::vector<Tensor>{output, h_n};
  });
}

// x0 is x; x1 and x2, if present, are h0 and c0.
void check_lstm(const std::string& name, nn::LSTM& m) {
  check_module_against_torch("nn_rnn", name, m, [&](const std::vector<Tensor>& x, const RefCase&) {
    auto [output, h_n, c_n] = x.size() > 1 ? m(x[0], x[1], x[2]) : m(x[0]);
    return std::vector<Tensor>{output, h_n, c_n};
  });
}

// Build the layer the case was made with (its constructor arguments are in
// the case: layers, bias, batch_first, dropout, and eval mode when training
// is 0) and compare it with PyTorch.
template <class M>
void check_layer(const std::string& name) {
  const RefCase& c = test::reference("nn_rnn", name);
  auto arg = [&](const char* key) { return c.ints_at(key).item(); };
  M m(arg("input_size"), arg("hidden_size"), arg("num_layers"), arg("bias") != 0, arg("batch_first") != 0,
      c.tensor("dropout").item());
  if (arg("training") == 0) m.eval();
  if constexpr (std::is_same_v<M, nn::LSTM>)
    check_lstm(name, m);
  else
    check_rnn(name, m);
}

std::vector<std::string> names(const nn::Module& m) {
  std::vector<std::string> out;
  for (auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

}  // namespace

// ---- against PyTorch -------------------------------------------------------------------

TEST_CASE("nn/rnn: against PyTorch") {
  for (const std::string& name : test::reference_cases("nn_rnn", "rnn/")) {
    SUBCASE(name.c_str()) { check_layer<nn::RNN>(name); }
  }
}

TEST_CASE("nn/gru: against PyTorch") {
  for (const std::string& name : test::reference_cases("nn_rnn", "gru/")) {
    SUBCASE(name.c_str()) { check_layer<nn::GRU>(name); }
  }
}

TEST_CASE("nn/lstm: against PyTorch") {
  for (const std::string& name : test::reference_cases("nn_rnn", "lstm/")) {
    SUBCASE(name.c_str()) { check_layer<nn::LSTM>(name); }
  }
}

TEST_CASE("nn/lstm: gradcheck through time (x, h0, c0)") {
  Generator gen(5);
  nn::LSTM m(2, 3, 2, true, false, 0, gen);
  auto f = [&](const std::vector<Tensor>& x) {
    auto [output, h_n, c_n] = m(x[0], x[1], x[2]);
    return cat({reshape(output, {-1}), reshape(h_n, {-1}), reshape(c_n, {-1})});
  };
  auto r = gradcheck(f, {randn({4, 2, 2}, gen), randn({2, 2, 3}, gen), randn({2, 2, 3}, gen)});
  CHECK_MESSAGE(r.ok, r.message);
}

// ---- parameters, shapes, modes -------------------------------------------------------------

TEST_CASE("nn/rnn: PyTorch's parameter names, shapes and init") {
  nn::GRU gru(I, H, 2);
  CHECK(names(gru) == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                               "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"});
  CHECK(gru.weight_ih[0].shape() == Shape{3 * H, I});
  CHECK(gru.weight_ih[1].shape() == Shape{3 * H, H});
  CHECK(gru.weight_hh[1].shape() == Shape{3 * H, H});
  CHECK(gru.bias_hh[0].shape() == Shape{3 * H});
  // PyTorch's count: per layer G·H·(in + H + 2).
  CHECK(gru.num_parameters() == 3 * H * (I + H + 2) + 3 * H * (H + H + 2));
  CHECK(nn::LSTM(I, H).weight_hh[0].shape() == Shape{4 * H, H});
  CHECK(nn::RNN(I, H).weight_ih[0].shape() == Shape{H, I});
  CHECK(names(nn::LSTM(I, H, 1, /*bias=*/false)) == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0"});

  // U[-1/sqrt(H), 1/sqrt(H)], and not all in a corner of it.
  nn::LSTM lstm(I, 64, 2);
  const float k = 1 / std::sqrt(64.0f);
  float lo = 1, hi = -1;
  for (const Tensor& p : lstm.parameters())
    for (float v : p.to_vector()) lo = std::min(lo, v), hi = std::max(hi, v);
  CHECK(lo >= -k);
  CHECK(hi <= k);
  CHECK(lo < -0.9f * k);
  CHECK(hi > 0.9f * k);

  CHECK(nn::GRU(I, H, 2, true, true, 0.5f).repr().find("GRU(3, 5, num_layers=2, batch_first=True, dropout=0.5)") == 0);
  CHECK(nn::LSTM(I, H).repr().find("LSTM(3, 5)") == 0);
  CHECK(nn::RNN(I, H, 1, false).repr().find("RNN(3, 5, bias=False)") == 0);
}

TEST_CASE("nn/rnn: d2l's shapes") {
  SUBCASE("d2l 9.6: RNN(len(vocab) = 28, 256) on X (35, 32, 28) with state (1, 32, 256)") {
    nn::RNN rnn(28, 256);
    auto [Y, state] = rnn(rand({35, 32, 28}), zeros({1, 32, 256}));
    CHECK(Y.shape() == Shape{35, 32, 256});
    CHECK(state.shape() == Shape{1, 32, 256});
  }
  SUBCASE("d2l 10.7: the encoder's GRU(8, 16, 2) on (9, 4, 8)") {
    nn::GRU gru(8, 16, 2);
    auto [output, h_n] = gru(zeros({9, 4, 8}));
    CHECK(output.shape() == Shape{9, 4, 16});
    CHECK(h_n.shape() == Shape{2, 4, 16});
  }
  SUBCASE("LSTM batch_first, unbatched") {
    nn::LSTM lstm(8, 16, 2, true, true);
    auto [output, h_n, c_n] = lstm(zeros({4, 9, 8}));
    CHECK(output.shape() == Shape{4, 9, 16});
    CHECK(h_n.shape() == Shape{2, 4, 16});
    CHECK(c_n.shape() == Shape{2, 4, 16});
    auto u = lstm(zeros({9, 8}));  // unbatched: batch_first does not apply
    CHECK(u.output.shape() == Shape{9, 16});
    CHECK(u.h_n.shape() == Shape{2, 16});
    CHECK(u.c_n.shape() == Shape{2, 16});
  }
}

TEST_CASE("nn/gru: batch_first is time-major transposed; h_n is the last output") {
  Generator gen(1);
  nn::GRU a(I, H, 2, true, false, 0, gen), b(I, H, 2, true, true, 0, gen);
  b.load_state_dict(a.state_dict());
  Tensor x = randn({6, 2, I}, gen), h0 = randn({2, 2, H}, gen);
  auto [out_a, h_a] = a(x, h0);
  auto [out_b, h_b] = b(transpose(x, 0, 1), h0);  // (B, T, I)
  test::check_close(transpose(out_b, 0, 1), out_a, "batch_first output", 0, 0);
  test::check_close(h_b, h_a, "batch_first h_n", 0, 0);
  test::check_close(narrow(h_a, 0, 1, 1), narrow(out_a, 0, 5, 1), "h_n[last layer] = output[last step]", 0, 0);
}

TEST_CASE("nn/gru: dropout between layers") {
  Generator gen(2);
  Tensor x = randn({6, 2, I}, gen);
  SUBCASE("in training the outputs differ from eval, and from one call to the next") {
    nn::GRU m(I, H, 2, true, false, 0.5f, gen);
    auto [train1, h1] = m(x);
    auto [train2, h2] = m(x);
    m.eval();
    auto [ev, h_ev] = m(x);
    CHECK(train1.to_vector() != ev.to_vector());
    CHECK(train1.to_vector() != train2.to_vector());
    // Layer 0's final state comes before any dropout: the same in both modes.
    test::check_close(narrow(h1, 0, 0, 1), narrow(h_ev, 0, 0, 1), "layer 0 h_n", 0, 0);
  }
  SUBCASE("one layer: there is no between-layer dropout, as in PyTorch") {
    nn::GRU m(I, H, 1, true, false, 0.5f, gen);
    auto [train, h] = m(x);
    m.eval();
    test::check_close(train, m(x).output, "one-layer output", 0, 0);
  }
  SUBCASE("seeded: the same generator seed gives the same training outputs") {
    Generator g1(9), g2(9);
    nn::LSTM a(I, H, 2, true, false, 0.5f, g1), b(I, H, 2, true, false, 0.5f, g2);
    test::check_close(a(x).output, b(x).output, "seeded", 0, 0);
  }
}

// ---- errors -----------------------------------------------------------------------------

TEST_CASE("nn/rnn: errors") {
  nn::GRU gru(I, H, 2);
  nn::LSTM lstm(I, H, 2);
  SUBCASE("input") {
    CHECK_THROWS_WITH_AS(
        gru(zeros({6, 2, 3, 1})),
        doctest::Contains("GRU: input (6, 2, 3, 1): expected 3 dims (T, B, I) or 2 dims (T, I) unbatched"), Error);
    CHECK_THROWS_WITH_AS(gru(zeros({6})), doctest::Contains("GRU: input (6): expected 3 dims"), Error);
    CHECK_THROWS_WITH_AS(gru(zeros({6, 2, 4})),
                         doctest::Contains("GRU: input (6, 2, 4): expected last dim input_size 3"), Error);
    CHECK_THROWS_WITH_AS(nn::RNN(I, H, 1, true, true)(zeros({2, 6, 4})),
                         doctest::Contains("RNN: input (2, 6, 4): expected last dim input_size 3"), Error);
    CHECK_THROWS_WITH_AS(gru(zeros({0, 2, 3})), doctest::Contains("GRU: input (0, 2, 3) has no time steps"), Error);
  }
  SUBCASE("initial state") {
    CHECK_THROWS_WITH_AS(gru(zeros({6, 2, 3}), zeros({1, 2, 5})),
                         doctest::Contains("GRU: h0 (1, 2, 5): expected (2, 2, 5) (num_layers, batch, hidden_size)"),
                         Error);
    CHECK_THROWS_WITH_AS(gru(zeros({6, 2, 3}), zeros({2, 3, 5})),
                         doctest::Contains("GRU: h0 (2, 3, 5): expected (2, 2, 5)"), Error);
    CHECK_THROWS_WITH_AS(gru(zeros({6, 3}), zeros({2, 1, 5})),
                         doctest::Contains("GRU: h0 (2, 1, 5): expected (2, 5) (num_layers, hidden_size)"), Error);
    CHECK_THROWS_WITH_AS(lstm(zeros({6, 2, 3}), zeros({2, 2, 5})),
                         doctest::Contains("LSTM: give both h0 and c0, or neither (got only h0)"), Error);
    CHECK_THROWS_WITH_AS(lstm(zeros({6, 2, 3}), zeros({2, 2, 5}), zeros({2, 2, 4})),
                         doctest::Contains("LSTM: c0 (2, 2, 4): expected (2, 2, 5)"), Error);
  }
  SUBCASE("constructor") {
    CHECK_THROWS_WITH_AS(nn::GRU(I, 0), doctest::Contains("GRU: hidden_size must be positive, got 0"), Error);
    CHECK_THROWS_WITH_AS(nn::LSTM(I, H, 0), doctest::Contains("LSTM: num_layers must be positive, got 0"), Error);
    CHECK_THROWS_WITH_AS(nn::RNN(0, H), doctest::Contains("RNN: input_size must be positive, got 0"), Error);
    CHECK_THROWS_WITH_AS(nn::GRU(I, H, 2, true, false, 1.0f),
                         doctest::Contains("GRU: dropout must be in [0, 1), got 1"), Error);
    CHECK_THROWS_WITH_AS(nn::GRU(I, H, 2, true, false, -0.5f),
                         doctest::Contains("GRU: dropout must be in [0, 1), got -0.5"), Error);
  }
}

// ---- the GRU step as one op ------------------------------------------------------------

namespace {

// PyTorch's GRU step composed from ops, as nn::GRU computed it before
// fused_gru_cell: the reference the op is held to.
Tensor gru_cell_composed(const Tensor& xw, const Tensor& hw, const Tensor& h) {
  std::vector<Tensor> x_ = chunk(xw, 3, 1), h_ = chunk(hw, 3, 1);  // (B, 3H) -> 3 × (B, H)
  Tensor r = sigmoid(x_[0] + h_[0]);
  Tensor z = sigmoid(x_[1] + h_[1]);
  Tensor n = tanh(x_[2] + r * h_[2]);
  return (1.0f - z) * n + z * h;
}

}  // namespace

TEST_CASE("nn/gru: fused_gru_cell equals the step composed from chunk, sigmoid, tanh, mul and add") {
  // The two differ in σ and tanh only (SIMD or scalar at different positions:
  // a few ulps), which the backward multiplies by at most four factors of
  // order 1: rtol 1e-5 (~100u) and atol 1e-6 for gradients near 0.
  Generator gen(31);
  for (auto [B, Hs] : {std::pair<int64_t, int64_t>{2, 5}, {3, 37}, {4, 32}}) {
    SUBCASE(fmt::format("B {} H {}", B, Hs).c_str()) {
      std::vector<Tensor> a{randn({B, 3 * Hs}, gen), randn({B, 3 * Hs}, gen), randn({B, Hs}, gen)}, b;
      for (Tensor& t : a) {
        t.requires_grad_();
        b.push_back(Tensor(t.to_vector(), t.shape()).requires_grad_());
      }
      Tensor y1 = fused_gru_cell(a[0], a[1], a[2]);
      Tensor y2 = gru_cell_composed(b[0], b[1], b[2]);
      qkv::test::check_close(y1, y2.detach(), "h'", 1e-5f, 1e-6f);
      Tensor dy = randn({B, Hs}, gen);
      y1.backward(dy);
      y2.backward(dy);
      for (size_t i = 0; i < 3; ++i)
        qkv::test::check_close(a[i].grad(), b[i].grad(), fmt::format("grad {}", i), 1e-5f, 1e-6f);
    }
  }
}

TEST_CASE("nn/gru: fused_gru_cell gradcheck and errors") {
  Generator gen(33);
  auto r = gradcheck([](const std::vector<Tensor>& x) { return fused_gru_cell(x[0], x[1], x[2]); },
                     {randn({2, 3 * 7}, gen), randn({2, 3 * 7}, gen), randn({2, 7}, gen)});
  CHECK_MESSAGE(r.ok, r.message);

  CHECK_THROWS_WITH_AS(fused_gru_cell(zeros({2, 9}), zeros({2, 6}), zeros({2, 3})),
                       doctest::Contains("fused_gru_cell: xw (2, 9) and hw (2, 6) should both be (2, 9) for h (2, 3)"),
                       Error);
  CHECK_THROWS_WITH_AS(fused_gru_cell(zeros({2, 9}), zeros({2, 9}), zeros({3})),
                       doctest::Contains("fused_gru_cell: h must be 2-d"), Error);
  CHECK_THROWS_WITH_AS(fused_gru_cell(Tensor(), zeros({2, 9}), zeros({2, 3})),
                       doctest::Contains("fused_gru_cell: xw is an undefined tensor"), Error);
}
