// The Transformer's layers: PositionalEncoding, PositionWiseFFN, AddNorm, the
// encoder and decoder blocks, TransformerEncoder and TransformerDecoder.
// d2l's shape checks, PyTorch's values and gradients
// (tools/reference/nn_transformer.py), step-by-step decoding against
// whole-target decoding, dropout, errors.
#include <doctest/doctest.h>

#include <qkv/nn/transformer.hpp>
#include <qkv/qkv.hpp>

#include <cmath>
#include <string>

#include "reference.hpp"

using namespace qkv;

namespace {

// Column t of ids (B, S), as (B, 1): the decoder's input at step t.
IntTensor column(const IntTensor& ids, int64_t t) {
  std::vector<int64_t> col;
  for (int64_t b = 0; b < ids.size(0); ++b) col.push_back(ids.at({b, t}));
  return int_tensor(col, {ids.size(0), 1});
}

std::vector<std::string> names(const nn::Module& m) {
  std::vector<std::string> out;
  for (auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

}  // namespace

TEST_CASE("nn/transformer: positional encoding") {
  nn::PositionalEncoding pe(32, 0.5f, 60);
  pe.eval();
  SUBCASE("P against torch, and the formula at a few entries") {
    test::check_close(pe.P, test::reference("nn_transformer", "pos_encoding/P").tensor("P"), "P", 1e-5f, 1e-6f);
    CHECK(pe.P.shape() == Shape{1, 60, 32});
    CHECK(pe.P.at({0, 0, 0}) == 0);  // sin 0
    CHECK(pe.P.at({0, 0, 1}) == 1);  // cos 0
    CHECK(pe.P.at({0, 7, 4}) == doctest::Approx(std::sin(7 / std::pow(10000.0, 4.0 / 32))));
    CHECK(pe.P.at({0, 7, 5}) == doctest::Approx(std::cos(7 / std::pow(10000.0, 4.0 / 32))));
    CHECK(pe.parameters().empty());  // P is fixed, not learned
  }
  SUBCASE("P[i + δ] is P[i] rotated by an angle that depends on δ only") {
    // Pair j = (sin θᵢ, cos θᵢ) with θᵢ = i·ω: a rotation by δ·ω maps it to pair j of row i + δ.
    const int64_t delta = 5, j = 3;
    const double omega = 1 / std::pow(10000.0, 2.0 * j / 32);
    for (int64_t i : {0, 11, 40}) {
      double s = pe.P.at({0, i, 2 * j}), c = pe.P.at({0, i, 2 * j + 1});
      double a = delta * omega;
      CHECK(pe.P.at({0, i + delta, 2 * j}) == doctest::Approx(s * std::cos(a) + c * std::sin(a)).epsilon(1e-5));
      CHECK(pe.P.at({0, i + delta, 2 * j + 1}) == doctest::Approx(c * std::cos(a) - s * std::sin(a)).epsilon(1e-5));
    }
  }
  SUBCASE("forward against torch, from position 0 and from position 5") {
    test::check_module_against_torch(
        "nn_transformer", "pos_encoding/forward", pe,
        [&](const std::vector<Tensor>& x, const test::RefCase&) { return std::vector<Tensor>{pe(x[0])}; });
    test::check_module_against_torch(
        "nn_transformer", "pos_encoding/offset5", pe,
        [&](const std::vector<Tensor>& x, const test::RefCase&) { return std::vector<Tensor>{pe(x[0], 5)}; });
  }
  SUBCASE("an odd num_hiddens ends on a sine column") {
    nn::PositionalEncoding odd(5, 0, 10);
    CHECK(odd.P.at({0, 3, 4}) == doctest::Approx(std::sin(3 / std::pow(10000.0, 4.0 / 5))));
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(pe(zeros({2, 61, 32})),
                         doctest::Contains("PositionalEncoding: positions 0 to 60 do not fit max_len 60"), Error);
    CHECK_THROWS_WITH_AS(pe(zeros({2, 10, 32}), 55),
                         doctest::Contains("PositionalEncoding: positions 55 to 64 do not fit max_len 60"), Error);
    CHECK_THROWS_WITH_AS(pe(zeros({2, 10, 31})),
                         doctest::Contains("PositionalEncoding: X (2, 10, 31): expected (B, T, 32)"), Error);
  }
}

TEST_CASE("nn/transformer: position-wise FFN and add & norm") {
  SUBCASE("d2l's checks") {
    nn::PositionWiseFFN ffn(4, 4, 8);  // d2l: PositionWiseFFN(4, 8) on ones (2, 3, 4)
    Tensor out = ffn(ones({2, 3, 4}));
    CHECK(out.shape() == Shape{2, 3, 8});
    // The same MLP at every position: equal inputs give equal outputs.
    CHECK(narrow(out, 1, 0, 1).to_vector() == narrow(out, 1, 2, 1).to_vector());
    nn::AddNorm add_norm({4}, 0.5f);  // d2l: AddNorm(4, 0.5)
    add_norm.eval();
    CHECK(add_norm(ones({2, 3, 4}), ones({2, 3, 4})).shape() == Shape{2, 3, 4});
  }
  SUBCASE("against torch") {
    nn::PositionWiseFFN ffn(6, 10, 4);
    test::check_module_against_torch(
        "nn_transformer", "ffn", ffn,
        [&](const std::vector<Tensor>& x, const test::RefCase&) { return std::vector<Tensor>{ffn(x[0])}; });
    nn::AddNorm add_norm({5}, 0.3f);
    add_norm.eval();
    test::check_module_against_torch(
        "nn_transformer", "addnorm", add_norm,
        [&](const std::vector<Tensor>& x, const test::RefCase&) { return std::vector<Tensor>{add_norm(x[0], x[1])}; });
  }
  SUBCASE("errors") {
    nn::PositionWiseFFN ffn(6, 10, 4);
    CHECK_THROWS_WITH_AS(ffn(zeros({2, 3, 5})),
                         doctest::Contains("PositionWiseFFN: X (2, 3, 5): expected last dim 6 (ffn_num_input)"), Error);
    nn::AddNorm add_norm({5}, 0);
    CHECK_THROWS_WITH_AS(add_norm(zeros({2, 3, 5}), zeros({2, 4, 5})),
                         doctest::Contains("AddNorm: X (2, 3, 5) and Y (2, 4, 5): expected the same shape"), Error);
  }
}

TEST_CASE("nn/transformer: encoder block") {
  SUBCASE("d2l's check: no layer changes the shape") {
    nn::TransformerEncoderBlock blk(24, 48, 8, 0.5f);
    blk.eval();
    CHECK(blk(ones({2, 100, 24}), int_tensor({3, 2})).shape() == Shape{2, 100, 24});
  }
  SUBCASE("against torch") {
    // Sizes from the case's FFN weight p.ffn.dense1.weight (ffn_num_hiddens,
    // num_hiddens); attention biases when it has p.attention.W_q.bias;
    // num_heads written into it.
    for (const std::string& name : test::reference_cases("nn_transformer", "encoder_block")) {
      CAPTURE(name);
      const test::RefCase& ref = test::reference("nn_transformer", name);
      const Shape dense1 = ref.tensor("p.ffn.dense1.weight").shape();
      nn::TransformerEncoderBlock blk(dense1[1], dense1[0], ref.ints_at("num_heads").item(), 0.4f,
                                      ref.has("p.attention.W_q.bias"));
      blk.eval();
      test::check_module_against_torch("nn_transformer", name, blk,
                                       [&](const std::vector<Tensor>& x, const test::RefCase& c) {
                                         return std::vector<Tensor>{blk(x[0], c.ints_at("valid_lens"))};
                                       });
    }
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(nn::TransformerEncoderBlock(24, 48, 5, 0),
                         doctest::Contains("MultiHeadAttention: num_hiddens 24"), Error);
  }
}

TEST_CASE("nn/transformer: encoder") {
  SUBCASE("d2l's check: TransformerEncoder(200, 24, 48, 8, 2, 0.5) on ones (2, 100)") {
    nn::TransformerEncoder encoder(200, 24, 48, 8, 2, 0.5f);
    encoder.eval();
    nn::EncoderOutput enc = encoder(int_tensor(std::vector<int64_t>(200, 1), {2, 100}), int_tensor({3, 2}));
    CHECK(enc.outputs.shape() == Shape{2, 100, 24});
    CHECK_FALSE(enc.state.defined());
    std::vector<Tensor> weights = encoder.attention_weights();
    REQUIRE(weights.size() == 2);
    CHECK(weights[1].shape() == Shape{2, 8, 100, 100});
    CHECK(weights[1].at({1, 7, 50, 2}) == 0);  // example 1 has 2 valid positions
  }
  SUBCASE("parameter names follow d2l's") {
    nn::TransformerEncoder encoder(11, 12, 20, 3, 2, 0);
    std::vector<std::string> n = names(encoder);
    CHECK(n.size() == 1 + 2 * 12);
    CHECK(n[0] == "embedding.weight");
    CHECK(n[1] == "blks.0.attention.W_q.weight");
    CHECK(n[5] == "blks.0.addnorm1.ln.weight");
    CHECK(n[7] == "blks.0.ffn.dense1.weight");
    CHECK(n.back() == "blks.1.addnorm2.ln.bias");
  }
  SUBCASE("against torch") {
    nn::TransformerEncoder encoder(11, 12, 20, 3, 2, 0.2f);
    encoder.eval();
    test::check_module_against_torch("nn_transformer", "encoder", encoder,
                                     [&](const std::vector<Tensor>&, const test::RefCase& c) {
                                       Tensor out = encoder(c.ints_at("X"), c.ints_at("valid_lens")).outputs;
                                       return std::vector<Tensor>{out, encoder.attention_weights()[1]};
                                     });
  }
  SUBCASE("dropout in training only") {
    Generator gen(5);
    nn::TransformerEncoder encoder(11, 12, 20, 3, 1, 0.5f, false, gen);
    IntTensor X = int_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor a = encoder(X, IntTensor()).outputs, b = encoder(X, IntTensor()).outputs;
    CHECK(a.to_vector() != b.to_vector());
    encoder.eval();
    CHECK(encoder(X, IntTensor()).outputs.to_vector() == encoder(X, IntTensor()).outputs.to_vector());
  }
  SUBCASE("errors") {
    nn::TransformerEncoder encoder(11, 12, 20, 3, 1, 0);
    CHECK_THROWS_WITH_AS(encoder(int_tensor({1, 2, 3}), IntTensor()),
                         doctest::Contains("TransformerEncoder: X (3): expected token ids (B, T)"), Error);
    CHECK_THROWS_WITH_AS(encoder(int_tensor({1, 11}, {1, 2}), IntTensor()),
                         doctest::Contains("embedding: index 11 out of range for a weight of 11 rows (11, 12)"), Error);
    CHECK_THROWS_WITH_AS(encoder(int_tensor({1, 2}, {1, 2}), int_tensor({1, 2})),
                         doctest::Contains("MultiHeadAttention: valid_lens (2) does not fit queries (1, 2, 12)"),
                         Error);
  }
}

TEST_CASE("nn/transformer: decoder block") {
  SUBCASE("d2l's check: the output keeps X's shape") {
    nn::TransformerEncoderBlock encoder_blk(24, 48, 8, 0.5f);
    nn::TransformerDecoderBlock decoder_blk(24, 48, 8, 0.5f, 0);
    Tensor X = ones({2, 100, 24});
    IntTensor valid_lens = int_tensor({3, 2});
    nn::DecoderState state{encoder_blk(X, valid_lens), valid_lens, Tensor(), {Tensor()}};
    CHECK(decoder_blk(X, state).shape() == Shape{2, 100, 24});
    CHECK(state.cache[0].shape() == Shape{2, 100, 24});  // the block's inputs, for the next step
  }
  SUBCASE("against torch, training mode: the whole target with d2l's causal mask") {
    nn::TransformerDecoderBlock blk(12, 20, 3, 0, 0);
    auto run = [&](const std::vector<Tensor>& x, const test::RefCase& c) {
      nn::DecoderState state{x[1], c.ints_at("enc_valid_lens"), Tensor(), {Tensor()}};
      Tensor out = blk(x[0], state);
      CHECK(state.cache[0].same(x[0]));  // an empty cache becomes X itself
      return std::vector<Tensor>{out};
    };
    test::check_module_against_torch("nn_transformer", "decoder_block/train", blk, run);
    // qkv masks in eval mode too (d2l only in training), so eval gives the same numbers.
    nn::TransformerDecoderBlock eval_blk(12, 20, 3, 0.5f, 0);
    eval_blk.eval();
    test::check_module_against_torch("nn_transformer", "decoder_block/train", eval_blk,
                                     [&](const std::vector<Tensor>& x, const test::RefCase& c) {
                                       nn::DecoderState state{x[1], c.ints_at("enc_valid_lens"), Tensor(), {Tensor()}};
                                       return std::vector<Tensor>{eval_blk(x[0], state)};
                                     });
  }
  SUBCASE("against torch, evaluation mode: one step after three cached ones") {
    nn::TransformerDecoderBlock blk(12, 20, 3, 0.5f, 0);
    blk.eval();
    test::check_module_against_torch("nn_transformer", "decoder_block/cached_step", blk,
                                     [&](const std::vector<Tensor>& x, const test::RefCase& c) {
                                       nn::DecoderState state{x[1], c.ints_at("enc_valid_lens"), Tensor(), {x[2]}};
                                       Tensor out = blk(x[0], state);
                                       CHECK(state.cache[0].shape() == Shape{2, 4, 12});
                                       return std::vector<Tensor>{out};
                                     });
  }
  SUBCASE("errors") {
    nn::TransformerDecoderBlock blk(12, 20, 3, 0, 1);
    nn::DecoderState state{zeros({2, 5, 12}), IntTensor(), Tensor(), {Tensor()}};
    CHECK_THROWS_WITH_AS(blk(zeros({2, 4, 12}), state),
                         doctest::Contains("TransformerDecoderBlock 1: state.cache has 1 entries; make the state with "
                                           "TransformerDecoder::init_state"),
                         Error);
    state.cache = {zeros({3, 2, 12}), zeros({3, 2, 12})};
    CHECK_THROWS_WITH_AS(
        blk(zeros({2, 1, 12}), state),
        doctest::Contains("TransformerDecoderBlock 1: X (2, 1, 12) does not continue the cached steps (3, 2, 12)"),
        Error);
    state.cache = {Tensor(), Tensor()};
    CHECK_THROWS_WITH_AS(blk(zeros({2, 4, 11}), state),
                         doctest::Contains("MultiHeadAttention: queries (2, 4, 11): expected last dim 12"), Error);
  }
}

TEST_CASE("nn/transformer: decoder") {
  SUBCASE("parameter names follow d2l's") {
    nn::TransformerDecoder decoder(13, 12, 20, 3, 2, 0);
    std::vector<std::string> n = names(decoder);
    CHECK(n.size() == 1 + 2 * 18 + 2);
    CHECK(n[1] == "blks.0.attention1.W_q.weight");
    CHECK(n[7] == "blks.0.attention2.W_q.weight");
    CHECK(n[n.size() - 2] == "dense.weight");
  }
  SUBCASE("against torch, training mode") {
    nn::TransformerDecoder decoder(13, 12, 20, 3, 2, 0);
    test::check_module_against_torch(
        "nn_transformer", "decoder/train", decoder, [&](const std::vector<Tensor>& x, const test::RefCase& c) {
          nn::DecoderState state = decoder.init_state({x[0], Tensor()}, c.ints_at("enc_valid_lens"));
          Tensor logits = decoder(c.ints_at("X"), state);
          return std::vector<Tensor>{logits, decoder.attention_weights()[1], decoder.self_attention_weights()[0]};
        });
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(nn::TransformerDecoder(13, 12, 20, 3, 0, 0),
                         doctest::Contains("TransformerDecoder: num_blks 0 must be positive"), Error);
    nn::TransformerDecoder decoder(13, 12, 20, 3, 2, 0);
    nn::DecoderState empty;
    CHECK_THROWS_WITH_AS(decoder(int_tensor({1, 2}, {1, 2}), empty),
                         doctest::Contains("TransformerDecoder: state.cache has 0 entries, expected 2"), Error);
    CHECK_THROWS_WITH_AS(decoder.init_state({zeros({2, 5, 8}), Tensor()}, IntTensor()),
                         doctest::Contains("TransformerDecoder: encoder outputs (2, 5, 8): expected (B, T, 12)"),
                         Error);
    nn::DecoderState state = decoder.init_state({zeros({2, 5, 12}), Tensor()}, IntTensor());
    CHECK_THROWS_WITH_AS(decoder(int_tensor({1, 2}), state),
                         doctest::Contains("TransformerDecoder: X (2): expected token ids (B, S)"), Error);
    CHECK_THROWS_WITH_AS(
        decoder(int_tensor({1, 2, 3}, {3, 1}), state),
        doctest::Contains(
            "MultiHeadAttention: queries (3, 1, 12), keys (2, 5, 12), values (2, 5, 12): batch sizes differ"),
        Error);
  }
}

TEST_CASE("nn/transformer: decoding step by step equals decoding the whole target") {
  // Mathematics: with the causal mask, position s of the whole target sees
  // positions 0 … s only, which is exactly what step s sees through the
  // cache; and step s's positional encoding is P[s] in both. So the logits agree.
  Generator gen(6);
  const int64_t B = 2, T = 5, S = 4, V = 13;
  nn::TransformerEncoder encoder(11, 12, 20, 3, 2, 0.3f, false, gen);
  nn::TransformerDecoder decoder(V, 12, 20, 3, 2, 0.3f, gen);
  encoder.eval();
  decoder.eval();
  IntTensor src = randint(0, 11, {B, T}, gen), tgt = randint(0, V, {B, S}, gen);
  IntTensor enc_valid_lens = int_tensor({3, 5});
  nn::EncoderOutput enc = encoder(src, enc_valid_lens);

  nn::DecoderState whole_state = decoder.init_state(enc, enc_valid_lens);
  Tensor whole = decoder(tgt, whole_state);  // (B, S, V)
  std::vector<Tensor> whole_cross = decoder.attention_weights();

  nn::DecoderState state = decoder.init_state(enc, enc_valid_lens);
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < S; ++t) {
    steps.push_back(decoder(column(tgt, t), state));  // (B, 1, V)
    CHECK(state.cache[1].shape() == Shape{B, t + 1, 12});
    CHECK(decoder.self_attention_weights()[0].shape() == Shape{B, 3, 1, t + 1});
    // Each step's cross-attention is the whole target's row t.
    test::check_close(decoder.attention_weights()[1], narrow(whole_cross[1], 2, t, 1), "cross-attention", 1e-4f, 1e-5f);
  }
  test::check_close(cat(steps, 1), whole, "logits", 1e-4f, 1e-4f);

  // The same numbers in training mode with dropout off (d2l's training path).
  nn::TransformerDecoder train_decoder(V, 12, 20, 3, 2, 0, gen);
  train_decoder.load_state_dict(decoder.state_dict());
  nn::DecoderState train_state = train_decoder.init_state(enc, enc_valid_lens);
  test::check_close(train_decoder(tgt, train_state), whole, "training-mode logits", 1e-5f, 1e-5f);
}

TEST_CASE("nn/transformer: in nn::EncoderDecoder") {
  Generator gen(7);
  const int64_t V = 9, bos = 1, eos = 2;
  auto encoder = std::make_shared<nn::TransformerEncoder>(11, 12, 20, 3, 2, 0.1f, false, gen);
  auto decoder = std::make_shared<nn::TransformerDecoder>(V, 12, 20, 3, 2, 0.1f, gen);
  nn::EncoderDecoder model(encoder, decoder);
  IntTensor src = randint(3, 11, {2, 5}, gen), tgt = randint(0, V, {2, 4}, gen);
  CHECK(model.forward(src, tgt, int_tensor({5, 3})).shape() == Shape{2, 4, V});

  // Greedy decoding one step at a time picks, at every step, the argmax of
  // the teacher-forced logits of the prefix it has produced.
  std::vector<int64_t> sentence = {4, 7, 5, eos};
  nn::EncoderDecoder::Prediction p = model.predict(sentence, 6, 0, bos, eos, 5);
  CHECK(model.is_training());  // predict restores the mode
  REQUIRE(p.attention.size() >= 1);
  CHECK(p.attention[0].size() == 2);                      // one per block
  CHECK(p.attention[0][1].shape() == Shape{1, 3, 1, 6});  // (B, h, 1, T)
  model.eval();
  std::vector<int64_t> prefix = {bos};
  prefix.insert(prefix.end(), p.tokens.begin(), p.tokens.end());
  std::vector<int64_t> padded = sentence;
  padded.resize(6, 0);
  const auto S = static_cast<int64_t>(prefix.size());
  Tensor logits = model.forward(int_tensor(padded, {1, 6}), int_tensor(prefix, {1, S}), int_tensor({4}));
  IntTensor best = argmax(logits, 2);  // (1, S)
  for (int64_t s = 0; s + 1 < S; ++s) CHECK(best.at({0, s}) == prefix[static_cast<size_t>(s) + 1]);
  if (static_cast<int64_t>(p.attention.size()) == S) CHECK(best.at({0, S - 1}) == eos);  // stopped on eos
}
