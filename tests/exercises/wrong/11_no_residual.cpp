// A wrong solution of exercise 11, kept for the tests: the first add & norm without its residual: a
// layer norm of the attention's output alone.
// grader says: no residual connection
#include "11_encoder_block.hpp"

namespace qkv::exercises {

EncoderBlockSteps encoder_block(nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& valid_lens) {
  Tensor attended = (*blk.attention)(X, X, X, valid_lens);  // (B, T, H): self-attention, padding masked
  Tensor Y = blk.addnorm1->ln->forward(attended);           // wrong: no + X
  Tensor output = (*blk.addnorm2)(Y, (*blk.ffn)(Y));        // (B, T, H): LayerNorm(ffn(Y) + Y)
  return {attended, Y, output};
}

}  // namespace qkv::exercises
