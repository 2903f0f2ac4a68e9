// The encoder–decoder architecture (d2l 9.6): an encoder reads the source
// sequence into vectors, a decoder writes the target one token at a time
// from those vectors and its own state. Both seq2seq models of the course
// (the GRU with Bahdanau attention, lesson 08, and the Transformer, lesson
// 11) fill in these two interfaces, so EncoderDecoder trains and decodes
// either one.
//
// Letters: B batch, T source steps, S target steps, H hidden size, V vocabulary.
#pragma once
#include <qkv/nn/module.hpp>

#include <vector>

namespace qkv::nn {

// What an encoder hands its decoder.
struct EncoderOutput {
  Tensor outputs;  // (B, T, H): one vector per source position
  Tensor state;    // RNN encoders: the final hidden state (num_layers, B, H); else undefined
};

// What a decoder carries from one call to the next (d2l's `state`).
struct DecoderState {
  Tensor enc_outputs;         // (B, T, H): the keys and values attention reads
  IntTensor enc_valid_lens;   // (B): source positions past these are padding
  Tensor hidden;              // RNN decoders: (num_layers, B, H)
  std::vector<Tensor> cache;  // Transformer decoders: per block, its inputs so far (B, s, H)
};

class Encoder : public Module {
 public:
  // X (B, T) token ids, valid_lens (B) (may be undefined: no padding).
  virtual EncoderOutput forward(const IntTensor& X, const IntTensor& valid_lens) = 0;
};

class Decoder : public Module {
 public:
  virtual DecoderState init_state(const EncoderOutput& enc, const IntTensor& enc_valid_lens) = 0;
  // X (B, S) token ids -> logits (B, S, V); advances `state`. In training S
  // is the whole (teacher-forced) target; in greedy decoding S = 1.
  virtual Tensor forward(const IntTensor& X, DecoderState& state) = 0;
  // The attention weights of the last forward, for drawing: the Bahdanau
  // decoder gives one (B, S, T) tensor; a Transformer decoder gives, per
  // block, its cross-attention (B, heads, S, T).
  virtual std::vector<Tensor> attention_weights() const = 0;
};

class EncoderDecoder : public Module {
 public:
  EncoderDecoder(std::shared_ptr<Encoder> encoder, std::shared_ptr<Decoder> decoder);

  // Teacher forcing: (B, T) source and (B, S) target inputs -> logits (B, S, V).
  Tensor forward(const IntTensor& enc_X, const IntTensor& dec_X, const IntTensor& enc_valid_lens);

  struct Prediction {
    std::vector<int64_t> tokens;                 // the output ids, up to (not including) eos
    std::vector<std::vector<Tensor>> attention;  // per decoding step (the eos step too, as d2l), the
                                                 // decoder's attention_weights()
  };
  // Greedy decoding of one source sentence (its ids ending in eos, unpadded;
  // as d2l's predict_seq2seq, they are cut or padded to num_steps with pad):
  // feed bos, then each argmax, until eos or max_len tokens. Runs in eval
  // mode, without recording a graph, and restores the mode it found.
  Prediction predict(const std::vector<int64_t>& src, int64_t num_steps, int64_t pad, int64_t bos, int64_t eos,
                     int64_t max_len);

  std::shared_ptr<Encoder> encoder;
  std::shared_ptr<Decoder> decoder;
  std::string type_name() const override { return "EncoderDecoder"; }
};

}  // namespace qkv::nn
