// Beam search (lessons/support/beam_search.hpp). Expected values come from
// the definition, worked by hand on a hand-made model whose next-token
// probabilities are a fixed table, and from greedy decoding
// (EncoderDecoder::predict), which beam search with k = 1 must equal.
#include <doctest/doctest.h>

#include <cmath>

#include "beam_search.hpp"
#include "translation_model.hpp"

using namespace qkv;

namespace {

// Tokens of the hand-made model.
constexpr int64_t kPad = 0, kBos = 1, kEos = 2, kA = 3, kB = 4, kV = 5;

// Reads nothing: the decoder's table alone decides.
class NullEncoder : public nn::Encoder {
 public:
  nn::EncoderOutput forward(const IntTensor& X, const IntTensor&) override {
    return {zeros({X.size(0), X.size(1), 1}), Tensor()};  // (B, T, 1)
  }
  std::string type_name() const override { return "NullEncoder"; }
};

// P(next | previous) from a table:
//   after <bos>: A 0.6, B 0.4
//   after A:     A 0.4, B 0.3, <eos> 0.3
//   after B:     <eos> 0.9, A 0.05, B 0.05
// (every other token: logit -1e4, probability 0 in float).
class TableDecoder : public nn::Decoder {
 public:
  nn::DecoderState init_state(const nn::EncoderOutput& enc, const IntTensor& valid) override {
    return {enc.outputs, valid, Tensor(), {}};
  }
  Tensor forward(const IntTensor& X, nn::DecoderState&) override {
    const int64_t previous = X.data()[0];
    //                                   pad  bos  eos   A     B
    std::vector<double> p = previous == kBos ? std::vector<double>{0, 0, 0, 0.6, 0.4}
                            : previous == kA ? std::vector<double>{0, 0, 0.3, 0.4, 0.3}
                            : previous == kB ? std::vector<double>{0, 0, 0.9, 0.05, 0.05}
                                             : std::vector<double>(kV, 0.0);
    std::vector<float> logits;
    for (double q : p) logits.push_back(q > 0 ? static_cast<float>(std::log(q)) : -1e4f);
    return tensor(logits, {1, 1, kV});  // (1, 1, V)
  }
  std::vector<Tensor> attention_weights() const override { return {}; }
  std::string type_name() const override { return "TableDecoder"; }
};

nn::EncoderDecoder table_model() {
  return nn::EncoderDecoder(std::make_shared<NullEncoder>(), std::make_shared<TableDecoder>());
}

lesson::BeamOptions table_options(int64_t k, double alpha) {
  return {.beam_size = k, .num_steps = 3, .pad = kPad, .bos = kBos, .eos = kEos, .max_len = 2, .alpha = alpha};
}

}  // namespace

TEST_CASE("lesson support/beam_search: on a hand-made model, beam 2 finds a sequence greedy decoding misses") {
  nn::EncoderDecoder model = table_model();
  const std::vector<int64_t> src = {kA, kEos};
  // Greedy, by hand: A (0.6), then A (0.4 beats 0.3 and 0.3); max_len 2 ends it. P = 0.6 · 0.4 = 0.24.
  nn::EncoderDecoder::Prediction greedy = model.predict(src, 3, kPad, kBos, kEos, 2);
  CHECK(greedy.tokens == std::vector<int64_t>{kA, kA});
  for (double alpha : {0.0, 0.75}) {
    INFO("alpha " << alpha);
    lesson::BeamSearch one = lesson::beam_search(model, src, table_options(1, alpha));
    CHECK(one.tokens == greedy.tokens);
    CHECK(one.best.log_prob == doctest::Approx(std::log(0.24)).epsilon(1e-6));
    // Beam 2, by hand. Step 1 keeps A (0.6) and B (0.4). Step 2's six extensions: A A 0.24, A B 0.18,
    // A <eos> 0.18, B <eos> 0.36, B A 0.02, B B 0.02; kept: B <eos> (finished) and A A (cut at max_len).
    // Scores log P / L^α, both of length 2: B <eos> wins, log 0.36 > log 0.24.
    lesson::BeamSearch two = lesson::beam_search(model, src, table_options(2, alpha));
    CHECK(two.tokens == std::vector<int64_t>{kB});
    CHECK(two.best.tokens == std::vector<int64_t>{kB, kEos});
    CHECK(two.best.finished);
    CHECK(two.best.log_prob == doctest::Approx(std::log(0.36)).epsilon(1e-6));
    CHECK(two.score == doctest::Approx(std::log(0.36) / std::pow(2.0, alpha)).epsilon(1e-6));
    CHECK(two.score > one.score);
    // The beam, step by step.
    REQUIRE(two.steps.size() == 2);
    REQUIRE(two.steps[0].size() == 2);
    CHECK(two.steps[0][0].tokens == std::vector<int64_t>{kA});
    CHECK(two.steps[0][0].log_prob == doctest::Approx(std::log(0.6)).epsilon(1e-6));
    CHECK(two.steps[0][1].tokens == std::vector<int64_t>{kB});
    REQUIRE(two.steps[1].size() == 2);
    CHECK(two.steps[1][0].tokens == std::vector<int64_t>{kB, kEos});
    CHECK(two.steps[1][0].finished);
    CHECK(two.steps[1][1].tokens == std::vector<int64_t>{kA, kA});
    CHECK_FALSE(two.steps[1][1].finished);
  }
}

TEST_CASE("lesson support/beam_search: beam 1 is greedy decoding, on untrained models of both lessons") {
  const std::vector<std::vector<int64_t>> sources = {{4, 5, 6, 3}, {7, 3}, {4, 4, 4, 4, 4, 4, 4, 3}, {3}};
  lesson::TranslationModelConfig gru = {.architecture = "seq2seq_attention",
                                        .trained_by = "test",
                                        .num_steps = 6,
                                        .num_hiddens = 12,
                                        .embed_size = 8,
                                        .num_layers = 2};
  lesson::TranslationModelConfig transformer = {.architecture = "transformer",
                                                .trained_by = "test",
                                                .num_steps = 6,
                                                .num_hiddens = 8,
                                                .ffn_num_hiddens = 16,
                                                .num_heads = 2,
                                                .num_blks = 2};
  for (const auto& config : {gru, transformer}) {
    INFO(config.architecture);
    for (uint64_t seed : {1, 2, 3}) {
      Generator gen(seed);
      auto model = lesson::build_translation_model(config, 10, 12, gen);
      for (const auto& src : sources) {
        nn::EncoderDecoder::Prediction greedy = model->predict(src, 6, 1, 2, 3, 7);
        lesson::BeamSearch beam = lesson::beam_search(
            *model, src, {.beam_size = 1, .num_steps = 6, .pad = 1, .bos = 2, .eos = 3, .max_len = 7});
        CHECK(beam.tokens == greedy.tokens);
      }
    }
  }
}

TEST_CASE("lesson support/beam_search: bad input is refused, named") {
  nn::EncoderDecoder model = table_model();
  auto refused = [&](const std::vector<int64_t>& src, const lesson::BeamOptions& o, const std::string& message) {
    try {
      lesson::beam_search(model, src, o);
      FAIL("no error for: " << message);
    } catch (const Error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(message) != std::string::npos);
    }
  };
  refused({kA, kEos}, table_options(0, 0), "beam_size 0");
  lesson::BeamOptions o = table_options(2, 0);
  o.max_len = 0;
  refused({kA, kEos}, o, "max_len 0");
  refused({}, table_options(2, 0), "the source is empty");
  refused({kA, -3}, table_options(2, 0), "src[1] = -3");
  o = table_options(2, std::nan(""));
  refused({kA, kEos}, o, "alpha nan");
}
