// The checks of exercise 07, one step of the Bahdanau decoder.
//   expected:  query, context and GRU input as qkv's nn::Seq2SeqAttentionDecoder
//              computes them; then the decoder's own GRU run on the learner's input
//              against the hidden state the library's decoder reaches in one step;
//              PyTorch's values (d2l's AdditiveAttention) and gradients
//   cases:     two layers, one layer, a source valid length of 1 and of the full
//              length, a batch of 1, a source of length 1, PyTorch's cases, gradcheck
#include "07_bahdanau_step.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

namespace {

struct Variant {
  bool last_layer = true, context_first = true, mask = true, reshaped = false;
};

DecoderStep variant(nn::AdditiveAttention& attention, const Tensor& hidden, const Tensor& enc, const IntTensor& lens,
                    const Tensor& x, Variant how) {
  const int64_t L = hidden.size(0), B = hidden.size(1), H = hidden.size(2);
  // (L, B, H) -> hidden[L - 1] (B, H) -> (B, 1, H); the mistake reads (L, B, H) as (B, L, H) with a reshape
  Tensor query = how.reshaped     ? hidden.reshape({B, L, H}).narrow(1, L - 1, 1)
                 : how.last_layer ? hidden.narrow(0, L - 1, 1).reshape({B, 1, H})
                                  : hidden.narrow(0, 0, 1).reshape({B, 1, H});
  Tensor context = attention(query, enc, enc, how.mask ? lens : IntTensor());
  Tensor rnn_input = how.context_first ? cat({context, x.unsqueeze(1)}, 2) : cat({x.unsqueeze(1), context}, 2);
  return {query, context, rnn_input};
}

void grade_case(Grader& g, const std::string& name, int64_t B, int64_t T, int64_t E, int64_t H, int64_t L,
                const IntTensor& lens, Generator& gen) {
  nn::Seq2SeqAttentionDecoder decoder(10, E, H, L, 0.0f, gen);
  decoder.eval();
  IntTensor token = randint(0, 10, {B, 1}, gen);                 // (B, 1) one target token per example
  Tensor x = decoder.embedding->forward(token).reshape({B, E});  // (B, E)
  Tensor hidden = randn({L, B, H}, gen), enc = randn({B, T, H}, gen);
  g.begin_case(name, fmt::format("hidden {} (L, B, H), enc_outputs {}, enc_valid_lens {}, x {}", hidden.shape(),
                                 enc.shape(), values(lens), x.shape()));
  nn::AdditiveAttention& attention = *decoder.attention;
  DecoderStep got =
      g.call(with_parameters({{"hidden", hidden}, {"enc_outputs", enc}, {"x", x}, {"enc_valid_lens", lens}}, attention,
                             "attention"),
             [&] { return bahdanau_step(attention, hidden, enc, lens, x); });
  DecoderStep want = variant(attention, hidden, enc, lens, x, {});
  auto mistakes = [&](Tensor DecoderStep::*step) {
    auto run = [&, step](Variant how) {
      return [=, &attention] { return variant(attention, hidden, enc, lens, x, how).*step; };
    };
    return std::vector<Mistake>{
        {"the first layer's hidden state as the query",
         "the query is the top layer's state, hidden[L - 1]: slice(0, L - 1, L), not hidden[0]",
         run({.last_layer = false})},
        {"a reshape where a transpose belongs",
         "hidden is (L, B, H): reshape({B, L, H}) keeps the memory order, so its rows mix layers and examples; pick "
         "the layer first, hidden[L - 1] (B, H), then unsqueeze(1)",
         run({.reshaped = true})},
        {"the padded source positions attended to",
         "pass enc_valid_lens to the attention, so the padding of short sources gets no weight", run({.mask = false})},
        {"the GRU input joined in the wrong order",
         "d2l joins the context first, then the embedded token: cat({context, x.unsqueeze(1)}, -1)",
         run({.context_first = false})},
    };
  };
  // The inputs of each step: the hidden state for the query, the source for the context, both parts of the join.
  auto explain_query = [&](const std::vector<int64_t>& i) {
    return fmt::format("hidden[{}, {}] (the top layer, example {}) = {}", L - 1, i[0], i[0],
                       values(at(hidden, {L - 1, i[0]})));
  };
  auto explain_context = [&](const std::vector<int64_t>& i) {
    return fmt::format("example {}: its query {}, its source valid length {}", i[0], values(at(want.query, {i[0], 0})),
                       lens.at({i[0]}));
  };
  auto explain_input = [&](const std::vector<int64_t>& i) {
    return fmt::format("example {}: column {} of [context ; x], context {}, x {}", i[0], i[2],
                       values(at(want.context, {i[0], 0})), values(at(x, {i[0]})));
  };
  g.check({"query", "hidden[L - 1] as (B, 1, H)"}, got.query, want.query, explain_query, mistakes(&DecoderStep::query));
  g.check({"context", "attention(query, enc_outputs, enc_outputs, enc_valid_lens), (B, 1, H)"}, got.context,
          want.context, explain_context, mistakes(&DecoderStep::context));
  g.check({"rnn_input", "[context ; x], (B, 1, H + E)"}, got.rnn_input, want.rnn_input, explain_input,
          mistakes(&DecoderStep::rnn_input));
  // The library's decoder, one step on the same token and state, against its GRU on your input.
  nn::DecoderState state{enc, lens, hidden, {}};
  decoder(token, state);
  Tensor next = decoder.rnn->forward(got.rnn_input.reshape({1, B, H + E}), hidden).h_n;  // (L, B, H)
  g.check({"next hidden", "the decoder's GRU on your rnn_input against nn::Seq2SeqAttentionDecoder's own step"}, next,
          state.hidden);
}

// AdditiveAttention(H, H, H) with PyTorch's weights x3, x4, x5 (W_q, W_k, w_v).
std::shared_ptr<nn::AdditiveAttention> attention_of(const std::vector<Tensor>& x, Generator& gen) {
  const int64_t H = x[0].size(2);
  auto attention = std::make_shared<nn::AdditiveAttention>(H, H, H, 0.0f, gen);
  attention->eval();
  attention->W_q->weight = x[3];
  attention->W_k->weight = x[4];
  attention->w_v->weight = x[5];
  return attention;
}

}  // namespace

int main(int argc, char** argv) {
  return grade(7, argc, argv, [](Grader& g) {
    g.forbid({{"qkv::nn::Seq2SeqAttentionDecoder::", "",
               "exercise 7 is the decoder's step itself: not through nn::Seq2SeqAttentionDecoder"}});
    Generator gen(g.seed());
    grade_case(g, "two layers", 3, 5, 4, 6, 2, int_tensor({5, 2, 3}), gen);
    grade_case(g, "one layer, a valid length of 1 and of the full length", 2, 4, 3, 5, 1, int_tensor({1, 4}), gen);
    grade_case(g, "a batch of 1, a source of length 1", 1, 1, 2, 3, 2, int_tensor({1}), gen);

    for (const TorchCase& c : g.torch_cases("07/")) {
      IntTensor lens = c.i("valid_lens");
      g.begin_case("PyTorch: " + c.name,
                   fmt::format("hidden {}, enc_outputs {}, valid_lens {}, x {}", c.f("x0").shape(), c.f("x1").shape(),
                               values(lens), c.f("x2").shape()));
      g.check_torch(
          {"rnn_input", "against d2l's decoder step in PyTorch, float64"},
          [&](const std::vector<Tensor>& x) {
            return bahdanau_step(*attention_of(x, gen), x[0], x[1], lens, x[2]).rnn_input;
          },
          c);
    }

    g.begin_case("gradcheck",
                 "hidden (2, 2, 3), enc_outputs (2, 4, 3), valid_lens [2, 4], x (2, 2), and W_q, W_k, w_v");
    IntTensor lens = int_tensor({2, 4});
    g.check_gradients("of the GRU input with respect to hidden, enc_outputs, x and the attention's weights",
                      [&](const std::vector<Tensor>& x) {
                        return bahdanau_step(*attention_of(x, gen), x[0], x[1], lens, x[2]).rnn_input;
                      },
                      {randn({2, 2, 3}, gen), randn({2, 4, 3}, gen), randn({2, 2}, gen), randn({3, 3}, gen),
                       randn({3, 3}, gen), randn({1, 3}, gen)},
                      {{"enc_valid_lens", lens}});
  });
}
