// The seq2seq pieces of lesson 08: sequence_mask and the masked softmax
// cross-entropy, the GRU encoder and the Bahdanau attention decoder, and
// EncoderDecoder's teacher-forced forward and greedy predict.
// Against PyTorch (tools/reference/nn_seq2seq.py -> tests/reference/nn_seq2seq.txt,
// re-implementing d2l's classes), d2l's printed checks and shapes, and errors.
#include <doctest/doctest.h>

#include <qkv/nn/encoder_decoder.hpp>
#include <qkv/nn/loss.hpp>
#include <qkv/nn/seq2seq.hpp>
#include <qkv/qkv.hpp>

#include <cmath>
#include <string>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_against_torch;
using qkv::test::check_close;
using qkv::test::check_module_against_torch;
using qkv::test::RefCase;
using qkv::test::reference_cases;

// ---- sequence_mask -------------------------------------------------------------------

TEST_CASE("nn/seq2seq: sequence_mask") {
  SUBCASE("against PyTorch (values and gradients)") {
    for (const std::string& name : reference_cases("nn_seq2seq", "sequence_mask/")) {
      SUBCASE(name.c_str()) {
        check_against_torch("nn_seq2seq", name, [](const std::vector<Tensor>& x, const RefCase& c) {
          return sequence_mask(x[0], c.ints_at("valid_len"), c.tensor("value").item());
        });
      }
    }
  }
  SUBCASE("d2l's printed examples") {
    Tensor X = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    CHECK(sequence_mask(X, int_tensor({1, 2})).to_vector() == std::vector<float>{1, 0, 0, 4, 5, 0});
    CHECK(X.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});  // a new tensor; X is untouched
    // d2l: sequence_mask(torch.ones(2, 3, 4), torch.tensor([1, 2]), value=-1)
    Tensor Y = sequence_mask(ones({2, 3, 4}), int_tensor({1, 2}), -1);
    CHECK(Y.shape() == Shape{2, 3, 4});
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t s = 0; s < 3; ++s)
        for (int64_t d = 0; d < 4; ++d) CHECK(Y.at({b, s, d}) == (s < b + 1 ? 1.0f : -1.0f));
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(sequence_mask(ones({3}), int_tensor({1, 2, 3})),
                         doctest::Contains("sequence_mask: X (3) must have at least 2 dims"), Error);
    CHECK_THROWS_WITH_AS(sequence_mask(ones({2, 3}), int_tensor({1, 2, 3})),
                         doctest::Contains("sequence_mask: valid_len (3) does not fit X (2, 3): expected (2)"), Error);
    CHECK_THROWS_WITH_AS(sequence_mask(ones({2, 3}), int_tensor({1, -2})),
                         doctest::Contains("sequence_mask: valid_len[1] = -2 is negative"), Error);
  }
}

// ---- masked_softmax_cross_entropy ----------------------------------------------------

TEST_CASE("nn/seq2seq: masked_softmax_cross_entropy") {
  SUBCASE("against PyTorch (d2l's MaskedSoftmaxCELoss)") {
    for (const std::string& name : reference_cases("nn_seq2seq", "loss/")) {
      CAPTURE(name);
      check_against_torch("nn_seq2seq", name, [](const std::vector<Tensor>& x, const RefCase& c) {
        return nn::masked_softmax_cross_entropy(x[0], c.ints_at("label"), c.ints_at("valid_len"));
      });
    }
  }
  SUBCASE("d2l's printed example: ln 10 per real token, divided by S = 4") {
    // loss(torch.ones(3, 4, 10), torch.ones((3, 4), dtype=torch.long), torch.tensor([4, 2, 0]))
    //   = tensor([2.3026, 1.1513, 0.0000]): uniform logits over 10 classes cost ln 10 each.
    Tensor l = nn::masked_softmax_cross_entropy(ones({3, 4, 10}), int_tensor(std::vector<int64_t>(12, 1), {3, 4}),
                                                int_tensor({4, 2, 0}));
    const float ln10 = std::log(10.0f);
    check_close(l, tensor({ln10, ln10 * 2 / 4, 0}), "d2l's loss example", 1e-6f, 1e-6f);
  }
  SUBCASE("gradcheck") {
    Generator gen(4);
    IntTensor label = int_tensor({0, 1, 2, 3, 4, 0}, {2, 3}), valid_len = int_tensor({3, 2});
    auto r = gradcheck(
        [&](const std::vector<Tensor>& x) { return nn::masked_softmax_cross_entropy(x[0], label, valid_len); },
        {randn({2, 3, 5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
  SUBCASE("padding gets no gradient") {
    Tensor pred = randn({2, 3, 5}).requires_grad_();
    sum(nn::masked_softmax_cross_entropy(pred, int_tensor({0, 1, 2, 3, 4, 0}, {2, 3}), int_tensor({3, 1}))).backward();
    for (int64_t s = 1; s < 3; ++s)
      for (int64_t v = 0; v < 5; ++v) CHECK(pred.grad().at({1, s, v}) == 0.0f);
    CHECK(pred.grad().at({1, 0, 0}) != 0.0f);
  }
  SUBCASE("errors") {
    IntTensor label = int_tensor({0, 1, 2, 3, 4, 0}, {2, 3});
    CHECK_THROWS_WITH_AS(nn::masked_softmax_cross_entropy(ones({2, 3}), label, int_tensor({3, 1})),
                         doctest::Contains("masked_softmax_cross_entropy: pred (2, 3) must be (B, S, V)"), Error);
    CHECK_THROWS_WITH_AS(nn::masked_softmax_cross_entropy(ones({2, 4, 5}), label, int_tensor({3, 1})),
                         doctest::Contains("label (2, 3) does not fit pred (2, 4, 5): expected (2, 4)"), Error);
    CHECK_THROWS_WITH_AS(nn::masked_softmax_cross_entropy(ones({2, 3, 5}), label, int_tensor({3})),
                         doctest::Contains("valid_len (1) does not fit pred (2, 3, 5): expected (2)"), Error);
    CHECK_THROWS_WITH_AS(nn::masked_softmax_cross_entropy(ones({2, 3, 4}), label, int_tensor({3, 1})),
                         doctest::Contains("label[1, 1] = 4 is not a token id in [0, 4)"), Error);
  }
}

// ---- the GRU encoder and the Bahdanau decoder against PyTorch ------------------------

TEST_CASE("nn/seq2seq: Seq2SeqEncoder against PyTorch") {
  nn::Seq2SeqEncoder encoder(11, 5, 6, 2);
  check_module_against_torch("nn_seq2seq", "encoder", encoder, [&](const std::vector<Tensor>&, const RefCase& c) {
    nn::EncoderOutput enc = encoder(c.ints_at("X"));
    return std::vector<Tensor>{enc.outputs, enc.state};  // (B, T, H), (L, B, H)
  });
}

TEST_CASE("nn/seq2seq: Seq2SeqAttentionDecoder against PyTorch, end to end") {
  // Source padded ([7, 3, 5] of 7 steps), target of 5 steps, two vocabularies.
  // Sizes from the case's parameters: each embedding is (vocab, embed), a GRU's
  // weight_hh (3·hidden, hidden); the number of layers is written into it.
  for (const std::string& name : reference_cases("nn_seq2seq", "bahdanau/")) {
    CAPTURE(name);
    const RefCase& ref = qkv::test::reference("nn_seq2seq", name);
    const Shape src = ref.tensor("p.encoder.embedding.weight").shape();
    const Shape tgt = ref.tensor("p.decoder.embedding.weight").shape();
    const int64_t hidden = ref.tensor("p.encoder.rnn.weight_hh_l0").shape()[1];
    const int64_t layers = ref.ints_at("num_layers").item();
    auto encoder = std::make_shared<nn::Seq2SeqEncoder>(src[0], src[1], hidden, layers);
    auto decoder = std::make_shared<nn::Seq2SeqAttentionDecoder>(tgt[0], tgt[1], hidden, layers);
    nn::EncoderDecoder model(encoder, decoder);
    check_module_against_torch("nn_seq2seq", name, model, [&](const std::vector<Tensor>&, const RefCase& c) {
      IntTensor enc_X = c.ints_at("enc_X"), dec_X = c.ints_at("dec_X"), lens = c.ints_at("enc_valid_lens");
      nn::DecoderState state = decoder->init_state(encoder->forward(enc_X, lens), lens);
      Tensor Y = decoder->forward(dec_X, state);
      // EncoderDecoder::forward is the same three calls.
      check_close(model.forward(enc_X, dec_X, lens), Y, "EncoderDecoder::forward");
      std::vector<Tensor> attention = decoder->attention_weights();
      REQUIRE(attention.size() == 1);
      CHECK_FALSE(attention[0].requires_grad());                  // detached: for drawing
      return std::vector<Tensor>{Y, state.hidden, attention[0]};  // (B, S, V), (L, B, H), (B, S, T)
    });
  }
}

TEST_CASE("nn/seq2seq: gradcheck of the decoder in its encoder outputs and initial state") {
  Generator gen(6);
  nn::Seq2SeqAttentionDecoder decoder(5, 3, 4, 2, 0, gen);
  IntTensor X = randint(0, 5, {2, 3}, gen), lens = int_tensor({3, 2});
  auto r = gradcheck(
      [&](const std::vector<Tensor>& x) {
        nn::DecoderState state = decoder.init_state({x[0], x[1]}, lens);
        return decoder(X, state);
      },
      {randn({2, 3, 4}, gen), randn({2, 2, 4}, gen)});
  CHECK_MESSAGE(r.ok, r.message);
}

TEST_CASE("nn/seq2seq: d2l's shape checks for the Bahdanau decoder") {
  // d2l 11.4: vocab_size 10, embed_size 8, num_hiddens 16, num_layers 2, batch 4, num_steps 7.
  nn::Seq2SeqEncoder encoder(10, 8, 16, 2);
  nn::Seq2SeqAttentionDecoder decoder(10, 8, 16, 2);
  encoder.eval();
  decoder.eval();
  IntTensor X = zeros_int({4, 7});
  nn::DecoderState state = decoder.init_state(encoder(X), IntTensor());
  Tensor output = decoder(X, state);
  CHECK(output.shape() == Shape{4, 7, 10});
  CHECK(state.enc_outputs.shape() == Shape{4, 7, 16});
  CHECK(state.hidden.shape() == Shape{2, 4, 16});
  CHECK(decoder.attention_weights()[0].shape() == Shape{4, 7, 7});

  // The parameter names d2l's modules have.
  std::vector<std::string> names;
  for (auto& [n, p] : decoder.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"attention.W_k.weight", "attention.W_q.weight", "attention.w_v.weight",
                                          "embedding.weight", "rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0",
                                          "rnn.bias_hh_l0", "rnn.weight_ih_l1", "rnn.weight_hh_l1", "rnn.bias_ih_l1",
                                          "rnn.bias_hh_l1", "dense.weight", "dense.bias"});
  CHECK(decoder.named_parameters()[4].second.shape() == Shape{3 * 16, 8 + 16});  // GRU input: [context ; embedding]
}

TEST_CASE("nn/seq2seq: attention skips the padded source positions") {
  Generator gen(5);
  nn::Seq2SeqEncoder encoder(7, 4, 5, 1, 0, gen);
  nn::Seq2SeqAttentionDecoder decoder(6, 3, 5, 1, 0, gen);
  IntTensor lens = int_tensor({2, 4});
  nn::DecoderState state = decoder.init_state(encoder(randint(0, 7, {2, 4}, gen), lens), lens);
  decoder(randint(0, 6, {2, 3}, gen), state);
  Tensor w = decoder.attention_weights()[0];  // (2, 3, 4)
  for (int64_t s = 0; s < 3; ++s) {
    CHECK(w.at({0, s, 2}) == doctest::Approx(0.0));
    CHECK(w.at({0, s, 3}) == doctest::Approx(0.0));
    for (int64_t b = 0; b < 2; ++b)
      CHECK(w.at({b, s, 0}) + w.at({b, s, 1}) + w.at({b, s, 2}) + w.at({b, s, 3}) == doctest::Approx(1.0));
  }
}

TEST_CASE("nn/seq2seq: dropout acts in training only") {
  Generator gen(9);
  auto encoder = std::make_shared<nn::Seq2SeqEncoder>(7, 4, 5, 2, 0.5f, gen);
  auto decoder = std::make_shared<nn::Seq2SeqAttentionDecoder>(6, 3, 5, 2, 0.5f, gen);
  nn::EncoderDecoder model(encoder, decoder);
  IntTensor enc_X = randint(0, 7, {2, 4}, gen), dec_X = randint(0, 6, {2, 3}, gen), lens = int_tensor({4, 3});
  model.eval();
  Tensor a = model.forward(enc_X, dec_X, lens), b = model.forward(enc_X, dec_X, lens);
  CHECK(a.to_vector() == b.to_vector());  // eval: deterministic
  model.train();
  Tensor c = model.forward(enc_X, dec_X, lens);
  CHECK(c.to_vector() != a.to_vector());  // training: dropout changed something
}

TEST_CASE("nn/seq2seq: errors") {
  nn::Seq2SeqEncoder encoder(7, 4, 5, 2);
  nn::Seq2SeqAttentionDecoder decoder(6, 3, 5, 2);
  CHECK_THROWS_WITH_AS(nn::Seq2SeqEncoder(0, 4, 5, 2),
                       doctest::Contains("Seq2SeqEncoder: vocab_size 0, embed_size 4, num_hiddens 5 and num_layers 2 "
                                         "must be positive"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::Seq2SeqAttentionDecoder(6, 3, 5, 1, 1.0f),
                       doctest::Contains("Seq2SeqAttentionDecoder: dropout 1 must be in [0, 1)"), Error);
  CHECK_THROWS_WITH_AS(encoder(IntTensor::empty({4})),
                       doctest::Contains("Seq2SeqEncoder: X (4) must be (batch, steps) token ids"), Error);
  CHECK_THROWS_WITH_AS(encoder(int_tensor({1, 7}, {1, 2})),
                       doctest::Contains("embedding: index 7 out of range for a weight of 7 rows (7, 4)"), Error);

  nn::EncoderOutput enc = encoder(zeros_int({2, 4}));
  CHECK_THROWS_WITH_AS(decoder.init_state({enc.outputs, Tensor()}, IntTensor()),
                       doctest::Contains("Seq2SeqAttentionDecoder: init_state needs an RNN encoder's outputs and "
                                         "final state"),
                       Error);
  CHECK_THROWS_WITH_AS(decoder.init_state(enc, int_tensor({4, 4, 4})),
                       doctest::Contains("enc_valid_lens (3) must be (2), one length per source"), Error);
  nn::Seq2SeqEncoder wide(7, 4, 8, 2);
  CHECK_THROWS_WITH_AS(decoder.init_state(wide(zeros_int({2, 4})), IntTensor()),
                       doctest::Contains("Seq2SeqAttentionDecoder: encoder outputs (2, 4, 8) must be "
                                         "(batch, steps, 5)"),
                       Error);
  nn::Seq2SeqEncoder shallow(7, 4, 5, 1);
  CHECK_THROWS_WITH_AS(decoder.init_state(shallow(zeros_int({2, 4})), IntTensor()),
                       doctest::Contains("encoder state (1, 2, 5) must be (num_layers, batch, num_hiddens) = "
                                         "(2, 2, 5)"),
                       Error);

  nn::DecoderState state = decoder.init_state(enc, IntTensor());
  CHECK_THROWS_WITH_AS(decoder(IntTensor::empty({3, 2}), state),
                       doctest::Contains("Seq2SeqAttentionDecoder: X (3, 2) does not fit the state (hidden (2, 2, 5), "
                                         "enc_outputs (2, 4, 5)): call init_state first"),
                       Error);
  CHECK_THROWS_WITH_AS(decoder(IntTensor::empty({2, 0}), state),
                       doctest::Contains("Seq2SeqAttentionDecoder: X (2, 0) has no steps"), Error);
  nn::DecoderState empty;
  CHECK_THROWS_WITH_AS(decoder(IntTensor::empty({2, 1}), empty), doctest::Contains("call init_state first"), Error);
  CHECK_THROWS_WITH_AS(decoder(int_tensor({6, 0}, {2, 1}), state),
                       doctest::Contains("embedding: index 6 out of range for a weight of 6 rows"), Error);
}

// ---- EncoderDecoder::predict ---------------------------------------------------------

namespace {

// An encoder that records what predict gave it.
struct RecordingEncoder : nn::Encoder {
  IntTensor X, valid_lens;
  nn::EncoderOutput forward(const IntTensor& X_, const IntTensor& valid_lens_) override {
    X = X_;
    valid_lens = valid_lens_;
    return {zeros({X.size(0), X.size(1), 2}), Tensor()};
  }
  std::string type_name() const override { return "RecordingEncoder"; }
};

// A decoder that says the tokens of its script, one per step, and records
// what it was fed and in which mode.
struct ScriptedDecoder : nn::Decoder {
  std::vector<int64_t> script, fed;
  bool saw_training = true, saw_grad = true;
  Tensor weights;
  nn::DecoderState init_state(const nn::EncoderOutput& enc, const IntTensor& lens) override {
    return {enc.outputs, lens, Tensor(), {}};
  }
  Tensor forward(const IntTensor& X, nn::DecoderState&) override {
    REQUIRE(X.shape() == Shape{1, 1});
    const size_t step = fed.size();
    fed.push_back(X.item());
    saw_training = is_training();
    saw_grad = is_grad_enabled();
    Tensor Y = zeros({1, 1, 6});
    Y.data()[script.at(step)] = 1;
    weights = full({1, 1, 3}, static_cast<float>(step));
    return Y;
  }
  std::vector<Tensor> attention_weights() const override { return {weights}; }
  std::string type_name() const override { return "ScriptedDecoder"; }
};

}  // namespace

TEST_CASE("nn/seq2seq: EncoderDecoder::predict is d2l's greedy predict_seq2seq") {
  auto encoder = std::make_shared<RecordingEncoder>();
  auto decoder = std::make_shared<ScriptedDecoder>();
  nn::EncoderDecoder model(encoder, decoder);
  const int64_t pad = 0, bos = 1, eos = 2;

  SUBCASE("feeds bos, then each argmax; stops at eos, keeping eos's attention") {
    decoder->script = {3, 4, eos, 5};
    auto p = model.predict({5, 4, eos}, 5, pad, bos, eos, 10);
    CHECK(p.tokens == std::vector<int64_t>{3, 4});
    CHECK(decoder->fed == std::vector<int64_t>{bos, 3, 4});
    REQUIRE(p.attention.size() == 3);
    for (size_t k = 0; k < 3; ++k) CHECK(p.attention[k].at(0).at({0, 0, 0}) == static_cast<float>(k));
    // The source padded to num_steps, its valid length the unpadded one.
    CHECK(encoder->X.to_vector() == std::vector<int64_t>{5, 4, eos, pad, pad});
    CHECK(encoder->X.shape() == Shape{1, 5});
    CHECK(encoder->valid_lens.to_vector() == std::vector<int64_t>{3});
    // Eval mode without a graph while decoding, and the mode restored after.
    CHECK_FALSE(decoder->saw_training);
    CHECK_FALSE(decoder->saw_grad);
    CHECK(model.is_training());
    CHECK(decoder->is_training());
    CHECK(is_grad_enabled());
  }
  SUBCASE("stops after max_len tokens without eos") {
    decoder->script = {3, 3, 3, 3, 3};
    auto p = model.predict({eos}, 4, pad, bos, eos, 3);
    CHECK(p.tokens == std::vector<int64_t>{3, 3, 3});
    CHECK(p.attention.size() == 3);
  }
  SUBCASE("a source longer than num_steps is truncated, as d2l's truncate_pad") {
    decoder->script = {eos};
    auto p = model.predict({3, 4, 5, 4, 3, eos}, 4, pad, bos, eos, 10);
    CHECK(p.tokens.empty());
    CHECK(p.attention.size() == 1);
    CHECK(encoder->X.to_vector() == std::vector<int64_t>{3, 4, 5, 4});
    CHECK(encoder->valid_lens.to_vector() == std::vector<int64_t>{4});
  }
  SUBCASE("an eval-mode model stays in eval mode") {
    decoder->script = {eos};
    model.eval();
    model.predict({eos}, 4, pad, bos, eos, 10);
    CHECK_FALSE(model.is_training());
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(model.predict({}, 4, pad, bos, eos, 10),
                         doctest::Contains("EncoderDecoder::predict: the source is empty"), Error);
    CHECK_THROWS_WITH_AS(model.predict({3, -1}, 4, pad, bos, eos, 10),
                         doctest::Contains("EncoderDecoder::predict: src[1] = -1 is not a token id"), Error);
    CHECK_THROWS_WITH_AS(model.predict({3}, 0, pad, bos, eos, 10),
                         doctest::Contains("num_steps 0 must be positive and max_len 10 not negative"), Error);
    CHECK_THROWS_WITH_AS(model.predict({3}, 4, pad, -1, eos, 10),
                         doctest::Contains("pad 0, bos -1 and eos 2 must be token ids"), Error);
    CHECK_THROWS_WITH_AS(nn::EncoderDecoder(nullptr, decoder),
                         doctest::Contains("EncoderDecoder: the encoder and the decoder must not be null"), Error);
  }
}

TEST_CASE("nn/seq2seq: greedy predict with the Bahdanau model") {
  Generator gen(11);
  auto encoder = std::make_shared<nn::Seq2SeqEncoder>(8, 4, 6, 2, 0.2f, gen);
  auto decoder = std::make_shared<nn::Seq2SeqAttentionDecoder>(7, 4, 6, 2, 0.2f, gen);
  nn::EncoderDecoder model(encoder, decoder);
  const int64_t pad = 0, bos = 1, eos = 2;

  SUBCASE("step by step equals one teacher-forced pass over the same tokens") {
    auto p = model.predict({5, 6, 7, eos}, 6, pad, bos, eos, 5);
    REQUIRE(p.attention.size() >= 1);
    CHECK(model.is_training());
    // Feeding bos and the predicted tokens at once must give the same argmaxes.
    std::vector<int64_t> dec = {bos};
    dec.insert(dec.end(), p.tokens.begin(), p.tokens.end());
    model.eval();
    Tensor Y = model.forward(int_tensor({5, 6, 7, eos, pad, pad}, {1, 6}), int_tensor(dec, {1, (int64_t)dec.size()}),
                             int_tensor({4}));
    IntTensor best = argmax(Y, 2);  // (1, S)
    for (size_t s = 0; s < p.tokens.size(); ++s) CHECK(best.at({0, (int64_t)s}) == p.tokens[s]);
    if (p.attention.size() > p.tokens.size()) CHECK(best.at({0, -1}) == eos);  // it stopped at eos
    // Per step one (1, 1, T) weight row, zero on the padding.
    for (const auto& step : p.attention) {
      REQUIRE(step.size() == 1);
      CHECK(step[0].shape() == Shape{1, 1, 6});
      CHECK(step[0].at({0, 0, 4}) == doctest::Approx(0.0));
      CHECK(step[0].at({0, 0, 5}) == doctest::Approx(0.0));
    }
  }
  SUBCASE("a decoder that always says eos stops at once") {
    nn::init::zeros_(decoder->dense->weight);
    nn::init::zeros_(decoder->dense->bias);
    decoder->dense->bias.data()[eos] = 1;
    auto p = model.predict({5, eos}, 4, pad, bos, eos, 10);
    CHECK(p.tokens.empty());
    REQUIRE(p.attention.size() == 1);
    CHECK(p.attention[0][0].shape() == Shape{1, 1, 4});
  }
  SUBCASE("an id past the vocabulary is refused, and the mode is restored") {
    CHECK_THROWS_WITH_AS(model.predict({5, 99}, 4, pad, bos, eos, 10),
                         doctest::Contains("embedding: index 99 out of range for a weight of 8 rows (8, 4)"), Error);
    CHECK(model.is_training());
    CHECK_THROWS_WITH_AS(model.predict({5}, 4, pad, 7, eos, 10),
                         doctest::Contains("embedding: index 7 out of range for a weight of 7 rows (7, 4)"), Error);
  }
}
