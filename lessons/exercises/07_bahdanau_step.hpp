// Exercise 07 · one step of the Bahdanau decoder: the declaration the
// learner's file, its solution and the grader share.
#pragma once
#include "exercise.hpp"

namespace qkv::exercises {

struct DecoderStep {
  Tensor query;      // (B, 1, H): the last layer's hidden state
  Tensor context;    // (B, 1, H): attention over the encoder's outputs
  Tensor rnn_input;  // (B, 1, H + E): [context ; embedded token], the GRU's input
};

// attention: the decoder's AdditiveAttention(H, H, H); hidden (L, B, H) the
// decoder's state, enc_outputs (B, T, H), enc_valid_lens (B), x (B, E) the
// embedded token -> query (B, 1, H), context (B, 1, H), rnn_input (B, 1, H + E)
DecoderStep bahdanau_step(nn::AdditiveAttention& attention, const Tensor& hidden, const Tensor& enc_outputs,
                          const IntTensor& enc_valid_lens, const Tensor& x);

}  // namespace qkv::exercises
