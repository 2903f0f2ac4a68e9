// The GRU encoder and the Bahdanau attention decoder (d2l 10.7, 11.4), on
// Embedding, GRU, AdditiveAttention and Linear: no op of their own.
//
// Letters: B batch, T source steps, S target steps, E embed_size,
// H num_hiddens, L num_layers, V vocabulary.
#include <qkv/core/error.hpp>
#include <qkv/nn/seq2seq.hpp>
#include <qkv/ops.hpp>

namespace qkv::nn {

namespace {

void check_sizes(const char* layer, int64_t vocab_size, int64_t embed_size, int64_t num_hiddens, int64_t num_layers,
                 float dropout) {
  if (vocab_size <= 0 || embed_size <= 0 || num_hiddens <= 0 || num_layers <= 0)
    fail("{}: vocab_size {}, embed_size {}, num_hiddens {} and num_layers {} must be positive", layer, vocab_size,
         embed_size, num_hiddens, num_layers);
  if (!(dropout >= 0 && dropout < 1)) fail("{}: dropout {} must be in [0, 1)", layer, dropout);
}

// X must be (B, S) with S ≥ 1, and the state init_state's for a batch of B.
void check_fits_state(const IntTensor& X, const DecoderState& state, int64_t L, int64_t H) {
  if (X.dim() != 2) fail("Seq2SeqAttentionDecoder: X {} must be (batch, steps) token ids", X.shape());
  if (X.size(1) == 0) fail("Seq2SeqAttentionDecoder: X {} has no steps", X.shape());
  const int64_t B = X.size(0);
  const bool fits = state.hidden.defined() && state.hidden.shape() == Shape{L, B, H} && state.enc_outputs.defined() &&
                    state.enc_outputs.size(0) == B;
  if (!fits)
    fail("Seq2SeqAttentionDecoder: X {} does not fit the state (hidden {}, enc_outputs {}): call init_state first",
         X.shape(), state.hidden.defined() ? state.hidden.shape().str() : "undefined",
         state.enc_outputs.defined() ? state.enc_outputs.shape().str() : "undefined");
}

}  // namespace

// --- the encoder ------------------------------------------------------------------

Seq2SeqEncoder::Seq2SeqEncoder(int64_t vocab_size, int64_t embed_size, int64_t num_hiddens, int64_t num_layers,
                               float dropout, Generator& gen) {
  check_sizes("Seq2SeqEncoder", vocab_size, embed_size, num_hiddens, num_layers, dropout);
  embedding = register_module("embedding", std::make_shared<Embedding>(vocab_size, embed_size, gen));
  rnn = register_module("rnn", std::make_shared<GRU>(embed_size, num_hiddens, num_layers, /*bias=*/true,
                                                     /*batch_first=*/false, dropout, gen));
}

EncoderOutput Seq2SeqEncoder::forward(const IntTensor& X, const IntTensor& /*valid_lens*/) {
  TraceScope trace(*this, {X});
  if (X.dim() != 2) fail("Seq2SeqEncoder: X {} must be (batch, steps) token ids", X.shape());
  Tensor emb = permute(embedding->forward(X), {1, 0, 2});  // (B, T) -> (B, T, E) -> (T, B, E)
  auto [output, h_n] = rnn->forward(emb);                  // (T, B, H), (L, B, H); h0 = zeros
  EncoderOutput enc{permute(output, {1, 0, 2}), h_n};      // outputs (B, T, H), state (L, B, H)
  trace.outputs({enc.outputs, enc.state});
  return enc;
}

// --- the decoder ------------------------------------------------------------------

Seq2SeqAttentionDecoder::Seq2SeqAttentionDecoder(int64_t vocab_size, int64_t embed_size, int64_t num_hiddens,
                                                 int64_t num_layers, float dropout, Generator& gen) {
  check_sizes("Seq2SeqAttentionDecoder", vocab_size, embed_size, num_hiddens, num_layers, dropout);
  // Registered in d2l's order, so the parameters list (and print) as PyTorch's do.
  attention = register_module("attention",
                              std::make_shared<AdditiveAttention>(num_hiddens, num_hiddens, num_hiddens, dropout, gen));
  embedding = register_module("embedding", std::make_shared<Embedding>(vocab_size, embed_size, gen));
  rnn = register_module("rnn", std::make_shared<GRU>(embed_size + num_hiddens, num_hiddens, num_layers,
                                                     /*bias=*/true, /*batch_first=*/false, dropout, gen));
  dense = register_module("dense", std::make_shared<Linear>(num_hiddens, vocab_size, /*bias=*/true, gen));
}

DecoderState Seq2SeqAttentionDecoder::init_state(const EncoderOutput& enc, const IntTensor& enc_valid_lens) {
  if (!enc.outputs.defined() || !enc.state.defined())
    fail("Seq2SeqAttentionDecoder: init_state needs an RNN encoder's outputs and final state");
  const int64_t L = rnn->num_layers, H = rnn->hidden_size;
  if (enc.outputs.dim() != 3 || enc.outputs.size(2) != H)
    fail("Seq2SeqAttentionDecoder: encoder outputs {} must be (batch, steps, {})", enc.outputs.shape(), H);
  const int64_t B = enc.outputs.size(0);
  if (enc.state.shape() != Shape{L, B, H})
    fail("Seq2SeqAttentionDecoder: encoder state {} must be (num_layers, batch, num_hiddens) = ({}, {}, {})",
         enc.state.shape(), L, B, H);
  if (enc_valid_lens.defined() && enc_valid_lens.shape() != Shape{B})
    fail("Seq2SeqAttentionDecoder: enc_valid_lens {} must be ({}), one length per source", enc_valid_lens.shape(), B);
  // The encoder's last hidden state starts every decoder layer (d2l: the
  // encoder and decoder have the same num_layers and num_hiddens for this).
  return {enc.outputs, enc_valid_lens, enc.state, {}};
}

Tensor Seq2SeqAttentionDecoder::forward(const IntTensor& X, DecoderState& state) {
  TraceScope trace(*this, {X});
  check_fits_state(X, state, rnn->num_layers, rnn->hidden_size);
  const int64_t B = X.size(0), S = X.size(1), H = rnn->hidden_size, L = rnn->num_layers;
  Tensor emb = embedding->forward(X);  // (B, S) -> (B, S, E)
  Tensor hidden = state.hidden;        // (L, B, H)
  std::vector<Tensor> outputs, weights;
  for (int64_t s = 0; s < S; ++s) {
    // NOTE: moving a size-1 dim keeps the numbers in order, so (1, B, ·) and
    // (B, 1, ·) are reshapes of each other: no permute is needed.
    Tensor query = reshape(narrow(hidden, 0, L - 1, 1), {B, 1, H});  // the last layer: (1, B, H) -> (B, 1, H)
    Tensor context = attention->forward(query, state.enc_outputs, state.enc_outputs,
                                        state.enc_valid_lens);              // (B, 1, H) on (B, T, H) -> (B, 1, H)
    Tensor x = cat({context, narrow(emb, 1, s, 1)}, 2);                     // [c_s ; embed(y)]: (B, 1, H + E)
    auto [out, h_n] = rnn->forward(reshape(x, {1, B, x.size(2)}), hidden);  // one step: (1, B, H), (L, B, H)
    hidden = h_n;
    outputs.push_back(reshape(out, {B, 1, H}));
    weights.push_back(attention->attention_weights);  // (B, 1, T)
  }
  state.hidden = hidden;
  attention_weights_ = cat(weights, 1);                  // S × (B, 1, T) -> (B, S, T)
  return trace.output(dense->forward(cat(outputs, 1)));  // S × (B, 1, H) -> (B, S, H) -> (B, S, V)
}

std::vector<Tensor> Seq2SeqAttentionDecoder::attention_weights() const {
  if (!attention_weights_.defined()) fail("Seq2SeqAttentionDecoder: no attention weights yet: call forward first");
  return {attention_weights_};
}

}  // namespace qkv::nn
