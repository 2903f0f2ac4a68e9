// The RNN seq2seq model with Bahdanau attention (d2l 10.7 "Sequence to
// Sequence Learning" for the encoder, 11.4 "The Bahdanau Attention
// Mechanism" for the decoder; lesson 08).
//
// The encoder is a GRU over the embedded source; it hands the decoder every
// position's output (the keys and values of attention) and its final hidden
// state (the decoder's initial state). At each target step the decoder asks
// "which source positions matter now?": its query is the last layer's hidden
// state, the answer a context vector c_s = Σ_t α(s, t) · enc_outputs[t],
// which is fed into the GRU beside the token's embedding:
//   c_s   = AdditiveAttention(query = h_{s-1}[last layer], keys = values = enc_outputs)
//   h_s   = GRU([c_s ; embed(y_{s-1})], h_{s-1})
//   logit = dense(h_s[last layer])
//
// Letters: B batch, T source steps, S target steps, E embed_size,
// H num_hiddens, L num_layers, V vocabulary.
//
// Parameter names are d2l's (embedding.weight, rnn.weight_ih_l0, …,
// attention.W_q.weight, dense.weight), so PyTorch's state dicts load as they are.
// Initialisation is PyTorch's default for each layer; d2l's train_seq2seq
// re-initialises the Linear and GRU weights with xavier_uniform_ before
// training (nn::init::xavier_uniform_ does the same here).
// Left out on purpose: LSTM cells, bidirectional encoders.
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/nn/attention.hpp>
#include <qkv/nn/embedding.hpp>
#include <qkv/nn/encoder_decoder.hpp>
#include <qkv/nn/linear.hpp>
#include <qkv/nn/rnn.hpp>

#include <memory>

namespace qkv::nn {

// d2l's Seq2SeqEncoder: Embedding(V, E) then GRU(E, H, L, dropout).
//   X (B, T) ids -> outputs (B, T, H) (the last layer at every step),
//                   state (L, B, H) (every layer at the last step)
// NOTE: d2l returns the outputs time-major, (T, B, H), and its decoder's
// init_state permutes them; here the encoder permutes, so every Encoder
// hands over (B, T, H) and a decoder need not know which encoder it got.
// valid_lens is not used: as in d2l, the GRU reads the padding too (it comes
// after the real tokens, so it only changes the final state), and the
// decoder's attention is what skips the padded positions.
class Seq2SeqEncoder : public Encoder {
 public:
  Seq2SeqEncoder(int64_t vocab_size, int64_t embed_size, int64_t num_hiddens, int64_t num_layers, float dropout = 0,
                 Generator& gen = default_generator());
  EncoderOutput forward(const IntTensor& X, const IntTensor& valid_lens = IntTensor()) override;
  EncoderOutput operator()(const IntTensor& X, const IntTensor& valid_lens = IntTensor()) {
    return forward(X, valid_lens);
  }

  std::shared_ptr<Embedding> embedding;  // (V, E)
  std::shared_ptr<GRU> rnn;              // GRU(E, H, L)

  std::string type_name() const override { return "Seq2SeqEncoder"; }
};

// d2l's Seq2SeqAttentionDecoder (Bahdanau et al., 2014).
//   X (B, S) ids, state {enc_outputs (B, T, H), enc_valid_lens (B), hidden (L, B, H)}
//   -> logits (B, S, V); state.hidden becomes the hidden state after step S.
// It runs one GRU step per target position, because each step's query is
// the hidden state the previous step produced.
class Seq2SeqAttentionDecoder : public Decoder {
 public:
  Seq2SeqAttentionDecoder(int64_t vocab_size, int64_t embed_size, int64_t num_hiddens, int64_t num_layers,
                          float dropout = 0, Generator& gen = default_generator());
  // d2l: (enc_outputs, hidden_state, enc_valid_lens). Needs enc.state (an RNN encoder's).
  DecoderState init_state(const EncoderOutput& enc, const IntTensor& enc_valid_lens) override;
  Tensor forward(const IntTensor& X, DecoderState& state) override;
  Tensor operator()(const IntTensor& X, DecoderState& state) { return forward(X, state); }
  // One tensor: the last forward's weights, step by step, (B, S, T);
  // detached. A qkv::Error before the first forward.
  std::vector<Tensor> attention_weights() const override;

  std::shared_ptr<AdditiveAttention> attention;  // AdditiveAttention(H, H, H, dropout)
  std::shared_ptr<Embedding> embedding;          // (V, E)
  std::shared_ptr<GRU> rnn;                      // GRU(E + H, H, L, dropout)
  std::shared_ptr<Linear> dense;                 // Linear(H, V)

  std::string type_name() const override { return "Seq2SeqAttentionDecoder"; }

 private:
  Tensor attention_weights_;  // (B, S, T)
};

}  // namespace qkv::nn
