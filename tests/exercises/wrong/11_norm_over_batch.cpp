// A wrong solution of exercise 11, kept for the tests: add & norm written
// out by hand with the mean and variance over dim 0, the batch (batch
// norm's axis), instead of each position's features.
// grader says: layer norm over the wrong axis
// grader says: yours normalises over the batch (dim 0: that is batch norm)
#include "11_encoder_block.hpp"

namespace qkv::exercises {

// LayerNorm(X + dropout(Y)) with the layer's own dropout, weight and bias.
Tensor add_norm(const nn::AddNorm& an, const Tensor& X, const Tensor& Y) {
  Tensor Z = X + (*an.dropout)(Y);                 // (B, T, H)
  Tensor centred = Z - Z.mean(0, true);            // wrong: dim 0 is B; the features are dim -1
  Tensor var = (centred * centred).mean(0, true);  // wrong: the same dim
  return centred / (var + an.ln->eps).sqrt() * an.ln->weight + an.ln->bias;
}

EncoderBlockSteps encoder_block(nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& valid_lens) {
  Tensor attended = (*blk.attention)(X, X, X, valid_lens);    // (B, T, H)
  Tensor Y = add_norm(*blk.addnorm1, X, attended);            // (B, T, H)
  Tensor output = add_norm(*blk.addnorm2, Y, (*blk.ffn)(Y));  // (B, T, H)
  return {attended, Y, output};
}

}  // namespace qkv::exercises
