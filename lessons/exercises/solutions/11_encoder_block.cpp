// Exercise 11, a reference solution: a Transformer encoder block from its sublayers.
#include "11_encoder_block.hpp"

namespace qkv::exercises {

EncoderBlockSteps encoder_block(nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& valid_lens) {
  Tensor attended = (*blk.attention)(X, X, X, valid_lens);  // (B, T, H): self-attention, padding masked
  Tensor Y = (*blk.addnorm1)(X, attended);                  // (B, T, H): LayerNorm(attended + X)
  Tensor output = (*blk.addnorm2)(Y, (*blk.ffn)(Y));        // (B, T, H): LayerNorm(ffn(Y) + Y)
  return {attended, Y, output};
}

}  // namespace qkv::exercises
