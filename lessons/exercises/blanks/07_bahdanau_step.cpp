// Exercise 07 · one step of the Bahdanau decoder
//
// Lesson 08 (lessons/08_seq2seq_attention.cpp); the notes: 003 带有注意力机制的seq2seq模型.
//
// At each target step s, the decoder asks which source positions matter now.
// Its query is the hidden state the previous step left in the last GRU layer;
// attention over the encoder's outputs (keys = values = enc_outputs, the
// padded positions masked) answers with a context vector; and the GRU reads
// the context beside the token's embedding (context first, as d2l writes it):
//   query     = hidden[L - 1]                                  (L, B, H) -> (B, H) -> (B, 1, H)
//   context   = attention(query, enc_outputs, enc_outputs, enc_valid_lens)    -> (B, 1, H)
//   rnn_input = [context ; x]                                  (B, 1, H) ++ (B, 1, E) -> (B, 1, H + E)
// (qkv's nn::Seq2SeqAttentionDecoder does this in its forward, then runs the GRU step.)
//
// Write bahdanau_step below:
//   attention AdditiveAttention(H, H, H), hidden (L, B, H), enc_outputs (B, T, H), enc_valid_lens (B),
//   x (B, E) -> query (B, 1, H), context (B, 1, H), rnn_input (B, 1, H + E)
//
// Not allowed: nn::Seq2SeqAttentionDecoder (the grader checks what your file calls).
//
// Grade it: ./qkv.sh exercise 7        a hint: ./qkv.sh exercise 7 --hint
#include "07_bahdanau_step.hpp"

namespace qkv::exercises {

DecoderStep bahdanau_step(nn::AdditiveAttention& attention, const Tensor& hidden, const Tensor& enc_outputs,
                          const IntTensor& enc_valid_lens, const Tensor& x) {
  not_written_yet("bahdanau_step", attention, hidden, enc_outputs, enc_valid_lens, x);
}

}  // namespace qkv::exercises
