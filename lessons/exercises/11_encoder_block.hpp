// Exercise 11 · a Transformer encoder block: the declaration the learner's
// file, its solution and the grader share.
#pragma once
#include "exercise.hpp"

namespace qkv::exercises {

struct EncoderBlockSteps {
  Tensor attended;  // (B, T, H): multi-head self-attention of X, masked by valid_lens
  Tensor Y;         // (B, T, H): add & norm of X and the attention's output
  Tensor output;    // (B, T, H): add & norm of Y and the position-wise FFN of Y
};

// blk: a TransformerEncoderBlock (its sublayers attention, addnorm1, ffn,
// addnorm2 are used, not its forward); X (B, T, H), valid_lens (B) or undefined
//   -> attended, Y, output, each (B, T, H)
EncoderBlockSteps encoder_block(nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& valid_lens);

}  // namespace qkv::exercises
