// A wrong solution of exercise 11, kept for the tests: the self-attention run without valid_lens, so
// the padding is attended to.
// grader says: the padded positions attended to
#include "11_encoder_block.hpp"

namespace qkv::exercises {

EncoderBlockSteps encoder_block(nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& valid_lens) {
  (void)valid_lens;
  Tensor attended = (*blk.attention)(X, X, X);        // wrong: no mask
  Tensor Y = (*blk.addnorm1)(X, attended);            // (B, T, H): LayerNorm(attended + X)
  Tensor output = (*blk.addnorm2)(Y, (*blk.ffn)(Y));  // (B, T, H): LayerNorm(ffn(Y) + Y)
  return {attended, Y, output};
}

}  // namespace qkv::exercises
