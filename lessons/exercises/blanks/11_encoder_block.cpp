// Exercise 11 · a Transformer encoder block
//
// Lesson 11 (lessons/11_transformer.cpp); the notes: 004 2.2 Transformer与
// Scaled Dot-Product Attention.
//
// An encoder block is two sublayers, each wrapped in a residual connection
// and a layer norm ("add & norm", AddNorm(X, Y) = LayerNorm(dropout(Y) + X)):
//   attended = MultiHeadAttention(X, X, X, valid_lens)     self-attention: every position looks at all
//   Y        = AddNorm(X, attended)                        the residual X first, the sublayer's output second
//   output   = AddNorm(Y, PositionWiseFFN(Y))              the same MLP at every position, reading Y
// Every step keeps the shape (B, T, H), so blocks stack. The padded
// positions (past valid_lens) must get no attention.
// The block's sublayers are blk.attention, blk.addnorm1, blk.ffn and
// blk.addnorm2 (shared_ptrs: call them as (*blk.attention)(…)); write what
// its forward does, without calling blk.forward.
//
// Write encoder_block below:
//   blk, X (B, T, H), valid_lens (B) or undefined -> attended, Y, output, each (B, T, H)
//
// Not allowed: blk.forward (the grader checks what your file calls).
//
// Grade it: ./qkv.sh exercise 11       a hint: ./qkv.sh exercise 11 --hint
#include "11_encoder_block.hpp"

namespace qkv::exercises {

EncoderBlockSteps encoder_block(nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& valid_lens) {
  not_written_yet("encoder_block", blk, X, valid_lens);
}

}  // namespace qkv::exercises
