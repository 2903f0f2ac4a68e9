// A wrong solution of exercise 11, kept for the tests: the second add & norm
// without its residual, a layer norm of the FFN's output alone.
// grader says: the second residual missing
#include "11_encoder_block.hpp"

namespace qkv::exercises {

EncoderBlockSteps encoder_block(nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& valid_lens) {
  Tensor attended = (*blk.attention)(X, X, X, valid_lens);   // (B, T, H)
  Tensor Y = (*blk.addnorm1)(X, attended);                   // (B, T, H)
  Tensor output = blk.addnorm2->ln->forward((*blk.ffn)(Y));  // wrong: no + Y
  return {attended, Y, output};
}

}  // namespace qkv::exercises
