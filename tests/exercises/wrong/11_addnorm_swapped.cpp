// A wrong solution of exercise 11, kept for the tests: add & norm's
// arguments swapped. In eval mode AddNorm(X, Y) = layer_norm(Y + X) is
// symmetric; with dropout on, only the second argument is dropped out.
// grader says: add & norm's arguments swapped
#include "11_encoder_block.hpp"

namespace qkv::exercises {

EncoderBlockSteps encoder_block(nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& valid_lens) {
  Tensor attended = (*blk.attention)(X, X, X, valid_lens);  // (B, T, H)
  Tensor Y = (*blk.addnorm1)(attended, X);                  // wrong: the residual X goes first
  Tensor output = (*blk.addnorm2)((*blk.ffn)(Y), Y);        // wrong: Y goes first
  return {attended, Y, output};
}

}  // namespace qkv::exercises
