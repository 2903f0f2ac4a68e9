// The Transformer (Vaswani et al. 2017) as d2l builds it: positional
// encoding (d2l 11.6.3), the position-wise FFN, add & norm, the encoder and
// decoder blocks, and the encoder–decoder pair that plugs into
// nn::EncoderDecoder (d2l 11.7, "The Transformer Architecture").
//
//   encoder:  ids -> embedding·sqrt(H) + P -> num_blks × [self-attention, add & norm, FFN, add & norm]
//   decoder:  ids -> embedding·sqrt(H) + P -> num_blks × [masked self-attention, add & norm,
//             attention on the encoder outputs, add & norm, FFN, add & norm] -> Linear to V logits
//
// Letters: B batch, T source steps, S target steps, H num_hiddens, F
// ffn_num_hiddens, V vocabulary, h heads.
//
// Names follow d2l, so parameters are named as in d2l's PyTorch classes
// (blks.0.attention.W_q.weight, blks.0.addnorm1.ln.weight, …). One
// difference: d2l stacks blocks in an nn.Sequential named "block0",
// "block1", …; qkv's ModuleList names them 0, 1, … (blks.0.… here,
// blks.block0.… in d2l); from_d2l_names (at the end) renames a d2l state dict.
//
// Left out on purpose: d2l's LazyLinear (input sizes are given), pre-norm
// blocks, shared embeddings, other positional encodings.
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/nn/attention.hpp>
#include <qkv/nn/dropout.hpp>
#include <qkv/nn/embedding.hpp>
#include <qkv/nn/encoder_decoder.hpp>
#include <qkv/nn/layer_norm.hpp>
#include <qkv/nn/linear.hpp>

#include <memory>
#include <vector>

namespace qkv::nn {

// --- positional encoding (d2l 11.6.3) ------------------------------------------
// Self-attention does not know the order of its inputs, so a fixed signal
// that depends on the position is added to them:
//   P[i, 2j]   = sin(i / 10000^(2j/H))
//   P[i, 2j+1] = cos(i / 10000^(2j/H))
// Column pair j is a sine wave of wavelength 2π·10000^(2j/H): low columns
// change fast, high ones slowly, like the bits of a binary counter. For
// each j, P[i+δ] is P[i] rotated by the angle δ / 10000^(2j/H): a linear map
// that depends on δ only, which is how attention can use relative positions.
//   X (B, T, H) -> dropout(X + P[:, offset : offset + T, :])
class PositionalEncoding : public Module {
 public:
  PositionalEncoding(int64_t num_hiddens, float dropout, int64_t max_len = 1000, Generator& gen = default_generator());
  // `offset` (qkv's addition, default 0 as d2l): the position of X's first
  // step, for decoding one step at a time (d2l's decoder always adds P[0]
  // at prediction time, so its steps lose their positions).
  Tensor forward(const Tensor& X, int64_t offset = 0) const;
  Tensor operator()(const Tensor& X, int64_t offset = 0) const { return forward(X, offset); }

  int64_t num_hiddens, max_len;
  std::shared_ptr<Dropout> dropout;
  Tensor P;  // (1, max_len, H): a fixed table, not a parameter (not in state_dict)

  std::string type_name() const override { return "PositionalEncoding"; }
};

// --- position-wise feed-forward network (d2l 11.7.2) ----------------------------
// The same two-layer MLP applied to every position on its own:
//   FFN(x) = dense2(relu(dense1(x)))    (B, T, D) -> (B, T, F) -> (B, T, Dout)
// NOTE: d2l's PositionWiseFFN(ffn_num_hiddens, ffn_num_outputs) uses
// LazyLinear, which learns its input size from the first call; qkv has no
// lazy layers, so the input size comes first. d2l's nn.ReLU submodule (no
// parameters) is the relu op here.
class PositionWiseFFN : public Module {
 public:
  PositionWiseFFN(int64_t ffn_num_input, int64_t ffn_num_hiddens, int64_t ffn_num_outputs,
                  Generator& gen = default_generator());
  Tensor forward(const Tensor& X) const;
  Tensor operator()(const Tensor& X) const { return forward(X); }

  std::shared_ptr<Linear> dense1;  // Linear(ffn_num_input, ffn_num_hiddens)
  std::shared_ptr<Linear> dense2;  // Linear(ffn_num_hiddens, ffn_num_outputs)

  std::string type_name() const override { return "PositionWiseFFN"; }
};

// --- add & norm (d2l 11.7.3) ----------------------------------------------------
// A residual connection, then layer normalisation:
//   AddNorm(X, Y) = LayerNorm(X + dropout(Y))     X, Y (…, *norm_shape) -> same shape
// Y is the sublayer's output, X its input: the sum lets gradients skip the
// sublayer; the norm keeps each position's features at mean 0, variance 1.
class AddNorm : public Module {
 public:
  AddNorm(Shape norm_shape, float dropout, Generator& gen = default_generator());
  Tensor forward(const Tensor& X, const Tensor& Y) const;
  Tensor operator()(const Tensor& X, const Tensor& Y) const { return forward(X, Y); }

  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<LayerNorm> ln;

  std::string type_name() const override { return "AddNorm"; }
};

// --- the encoder (d2l 11.7.4) ---------------------------------------------------
// One block: self-attention (queries = keys = values = X), then the FFN,
// each followed by add & norm. No block changes the shape: (B, T, H) -> (B, T, H).
class TransformerEncoderBlock : public Module {
 public:
  TransformerEncoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads, float dropout,
                          bool use_bias = false, Generator& gen = default_generator());
  // valid_lens (B) or (B, T), or undefined: source positions past it are padding.
  Tensor forward(const Tensor& X, const IntTensor& valid_lens = IntTensor());
  Tensor operator()(const Tensor& X, const IntTensor& valid_lens = IntTensor()) { return forward(X, valid_lens); }

  std::shared_ptr<MultiHeadAttention> attention;
  std::shared_ptr<AddNorm> addnorm1;
  std::shared_ptr<PositionWiseFFN> ffn;  // (H, F, H)
  std::shared_ptr<AddNorm> addnorm2;

  std::string type_name() const override { return "TransformerEncoderBlock"; }
};

// ids (B, T) -> embedding·sqrt(H) + P -> num_blks blocks -> (B, T, H).
// The embedding is multiplied by sqrt(H) before P is added, as in d2l and
// Vaswani et al. (d2l's reason: P's values lie in [-1, 1], so the embedding
// is rescaled before the two are summed).
class TransformerEncoder : public Encoder {
 public:
  TransformerEncoder(int64_t vocab_size, int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads,
                     int64_t num_blks, float dropout, bool use_bias = false, Generator& gen = default_generator());
  // X (B, T) ids, valid_lens (B) or undefined -> outputs (B, T, H); no state.
  EncoderOutput forward(const IntTensor& X, const IntTensor& valid_lens) override;
  EncoderOutput operator()(const IntTensor& X, const IntTensor& valid_lens) { return forward(X, valid_lens); }

  // Each block's self-attention weights from the last forward, (B, h, T, T).
  // (d2l keeps them as (B·h, T, T): blks->at<TransformerEncoderBlock>(i)->attention->attention_weights().)
  std::vector<Tensor> attention_weights() const;

  int64_t num_hiddens;
  std::shared_ptr<Embedding> embedding;
  std::shared_ptr<PositionalEncoding> pos_encoding;
  std::shared_ptr<ModuleList> blks;  // of TransformerEncoderBlock

  std::string type_name() const override { return "TransformerEncoder"; }
};

// --- the decoder (d2l 11.7.5) ---------------------------------------------------
// Block i: masked self-attention on the target, attention on the encoder
// outputs (queries from the target, keys and values from the source), then
// the FFN, each followed by add & norm.
//
// The self-attention's keys and values are state.cache[i] (this block's
// inputs at the earlier steps, d2l's state[2][i]) followed by X; the cache
// then grows by X. In training the whole target comes at once and the cache
// starts empty; in prediction one step comes at a time and each step
// attends to all the steps before it.
//
// The causal mask: with c steps already cached, query s (0-based) of X may
// see the first c + s + 1 keys, given as 2-D valid lens (B, S) with rows
// [c+1, …, c+S] (d2l's [1, …, S] when c = 0).
// NOTE: d2l applies this mask in training only (its prediction feeds one step
// at a time, where the mask keeps every key anyway). qkv applies it always,
// which gives the same numbers in both of d2l's uses and stays causal when a
// whole target is fed in eval mode (a validation loss) or after a cache.
class TransformerDecoderBlock : public Module {
 public:
  TransformerDecoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads, float dropout, int64_t i,
                          Generator& gen = default_generator());
  // X (B, S, H) -> (B, S, H); reads state.enc_outputs (B, T, H) and
  // state.enc_valid_lens, and appends X to state.cache[i].
  Tensor forward(const Tensor& X, DecoderState& state);
  Tensor operator()(const Tensor& X, DecoderState& state) { return forward(X, state); }

  int64_t i;                                       // this block's index: its entry in state.cache
  std::shared_ptr<MultiHeadAttention> attention1;  // masked self-attention
  std::shared_ptr<AddNorm> addnorm1;
  std::shared_ptr<MultiHeadAttention> attention2;  // encoder–decoder attention
  std::shared_ptr<AddNorm> addnorm2;
  std::shared_ptr<PositionWiseFFN> ffn;  // (H, F, H)
  std::shared_ptr<AddNorm> addnorm3;

  std::string type_name() const override { return "TransformerDecoderBlock"; }
};

// ids (B, S) -> embedding·sqrt(H) + P -> num_blks blocks -> dense -> logits (B, S, V).
// The positional encoding starts at the number of steps already decoded
// (state.cache[0]'s length), so decoding step by step gives the same logits
// as decoding the whole target at once.
class TransformerDecoder : public Decoder {
 public:
  TransformerDecoder(int64_t vocab_size, int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads,
                     int64_t num_blks, float dropout, Generator& gen = default_generator());
  // d2l's [enc_outputs, enc_valid_lens, [None] * num_blks].
  DecoderState init_state(const EncoderOutput& enc, const IntTensor& enc_valid_lens) override;
  Tensor forward(const IntTensor& X, DecoderState& state) override;
  Tensor operator()(const IntTensor& X, DecoderState& state) { return forward(X, state); }

  // Each block's encoder–decoder attention weights from the last forward, (B, h, S, T).
  std::vector<Tensor> attention_weights() const override;
  // Each block's masked self-attention weights from the last forward,
  // (B, h, S, c + S) with c the steps cached before it.
  std::vector<Tensor> self_attention_weights() const;

  int64_t num_hiddens, num_blks;
  std::shared_ptr<Embedding> embedding;
  std::shared_ptr<PositionalEncoding> pos_encoding;
  std::shared_ptr<ModuleList> blks;  // of TransformerDecoderBlock
  std::shared_ptr<Linear> dense;     // Linear(H, V)

  std::string type_name() const override { return "TransformerDecoder"; }
};

// --- loading d2l's weights ---------------------------------------------------------
// A state dict saved from d2l's Transformer classes, with the names qkv
// gives the same parameters. d2l stacks the blocks of TransformerEncoder and
// TransformerDecoder in an nn.Sequential whose children are "block0",
// "block1", …; qkv's ModuleList names them 0, 1, …, so every name component
// "block<N>" right after "blks" becomes "<N>":
//   blks.block0.attention.W_q.weight          -> blks.0.attention.W_q.weight
//   encoder.blks.block1.ffn.dense2.bias       -> encoder.blks.1.ffn.dense2.bias
// Every other name d2l gives these classes (embedding, attention W_q … W_o,
// addnorm1.ln, ffn.dense1, dense, …) is already qkv's, and is kept; d2l's
// positional-encoding table P is not a parameter in either. Throws qkv::Error
// if two names become one (a dict holding both blks.0.x and blks.block0.x).
//   auto state = nn::from_d2l_names(io::load_safetensors("d2l_encoder.safetensors"));
//   encoder.load_state_dict(state);
StateDict from_d2l_names(const StateDict& state);

}  // namespace qkv::nn
