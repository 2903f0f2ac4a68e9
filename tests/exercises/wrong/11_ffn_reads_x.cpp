// A wrong solution of exercise 11, kept for the tests: the position-wise FFN applied to X instead of
// Y.
// grader says: the FFN reads X instead of Y
#include "11_encoder_block.hpp"

namespace qkv::exercises {

EncoderBlockSteps encoder_block(nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& valid_lens) {
  Tensor attended = (*blk.attention)(X, X, X, valid_lens);  // (B, T, H): self-attention, padding masked
  Tensor Y = (*blk.addnorm1)(X, attended);                  // (B, T, H): LayerNorm(attended + X)
  Tensor output = (*blk.addnorm2)(Y, (*blk.ffn)(X));        // wrong: ffn(X)
  return {attended, Y, output};
}

}  // namespace qkv::exercises
