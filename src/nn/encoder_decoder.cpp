// EncoderDecoder: training with teacher forcing and greedy decoding (d2l 9.6
// "The Encoder–Decoder Architecture", 10.7.6 "Prediction"). Nothing here
// knows whether the pair is a GRU with attention or a Transformer.
//
// Letters: B batch, T source steps, S target steps, V vocabulary.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/nn/encoder_decoder.hpp>
#include <qkv/ops.hpp>

#include <algorithm>
#include <new>
#include <stdexcept>

namespace qkv::nn {

EncoderDecoder::EncoderDecoder(std::shared_ptr<Encoder> encoder, std::shared_ptr<Decoder> decoder) {
  if (!encoder || !decoder) fail("EncoderDecoder: the encoder and the decoder must not be null");
  this->encoder = register_module("encoder", std::move(encoder));
  this->decoder = register_module("decoder", std::move(decoder));
}

// Teacher forcing (d2l 10.7.4): the decoder reads the true target shifted by
// one (bos, y_1, …, y_{S-1}) and predicts y_1 … y_S, all S steps in one call.
Tensor EncoderDecoder::forward(const IntTensor& enc_X, const IntTensor& dec_X, const IntTensor& enc_valid_lens) {
  TraceScope trace(*this, {enc_X, dec_X, enc_valid_lens});
  if (enc_X.dim() != 2 || dec_X.dim() != 2 || enc_X.size(0) != dec_X.size(0))
    fail("EncoderDecoder: enc_X {} and dec_X {} must be (batch, steps) with the same batch", enc_X.shape(),
         dec_X.shape());
  EncoderOutput enc = encoder->forward(enc_X, enc_valid_lens);  // (B, T) -> (B, T, H)
  DecoderState state = decoder->init_state(enc, enc_valid_lens);
  return trace.output(decoder->forward(dec_X, state));  // (B, S) -> (B, S, V)
}

namespace {

// Puts a module back into the mode it was in when the scope ends, even when
// an error leaves the scope early.
struct RestoreMode {
  Module& module;
  bool was_training;
  ~RestoreMode() { module.train(was_training); }
};

}  // namespace

// d2l's predict_seq2seq, for one sentence. The caller passes the source ids
// with eos already appended (d2l appends it here; qkv's EncoderDecoder has no
// vocabulary). As d2l's truncate_pad, a source longer than num_steps is cut
// to its first num_steps ids; a shorter one is padded with `pad`, and
// valid_len masks the padding out of attention.
EncoderDecoder::Prediction EncoderDecoder::predict(const std::vector<int64_t>& src, int64_t num_steps, int64_t pad,
                                                   int64_t bos, int64_t eos, int64_t max_len) {
  if (src.empty()) fail("EncoderDecoder::predict: the source is empty (it should end with eos at least)");
  if (num_steps <= 0 || max_len < 0)
    fail("EncoderDecoder::predict: num_steps {} must be positive and max_len {} not negative", num_steps, max_len);
  for (size_t i = 0; i < src.size(); ++i)
    if (src[i] < 0) fail("EncoderDecoder::predict: src[{}] = {} is not a token id", i, src[i]);
  if (pad < 0 || bos < 0 || eos < 0)
    fail("EncoderDecoder::predict: pad {}, bos {} and eos {} must be token ids", pad, bos, eos);
  // (An id past the vocabulary is refused by the encoder's or decoder's Embedding.)

  RestoreMode restore{*this, is_training()};
  eval();               // no dropout
  NoGradGuard no_grad;  // no graph: nothing will be differentiated

  const int64_t len = std::min<int64_t>(static_cast<int64_t>(src.size()), num_steps);
  std::vector<int64_t> padded(src.begin(), src.begin() + len);
  try {
    padded.resize(static_cast<size_t>(num_steps), pad);
  } catch (const std::bad_alloc&) {
    fail("EncoderDecoder::predict: out of memory padding the source to num_steps {}", num_steps);
  } catch (const std::length_error&) {
    fail("EncoderDecoder::predict: num_steps {} is too large to allocate", num_steps);
  }
  IntTensor enc_X = int_tensor(padded, {1, num_steps});  // (1, T)
  IntTensor enc_valid_len = int_tensor({len}, {1});      // (1)
  DecoderState state = decoder->init_state(encoder->forward(enc_X, enc_valid_len), enc_valid_len);

  // Feed bos, then each step's most likely token, one step at a time.
  Prediction prediction;
  IntTensor dec_X = int_tensor({bos}, {1, 1});  // (1, 1)
  for (int64_t step = 0; step < max_len; ++step) {
    Tensor Y = decoder->forward(dec_X, state);  // (1, 1, V)
    // An eos the decoder cannot predict would never stop the loop: every
    // sentence would silently run to max_len.
    if (eos >= Y.size(2))
      fail("EncoderDecoder::predict: eos {} is not one of the decoder's {} output tokens", eos, Y.size(2));
    const int64_t next = argmax(Y, 2).item();  // (1, 1, V) -> (1, 1)
    // As d2l, the step that produced eos keeps its attention weights too.
    prediction.attention.push_back(decoder->attention_weights());
    if (next == eos) break;
    prediction.tokens.push_back(next);
    dec_X = int_tensor({next}, {1, 1});
  }
  return prediction;
}

}  // namespace qkv::nn
