// A wrong solution of exercise 11, kept for the tests: add & norm written
// out by hand with the mean and variance over the sequence and the features
// together, (T, H) (a norm_shape of (T, H), as in d2l's first editions),
// instead of each position's features alone.
// grader says: layer norm over the wrong axis
// grader says: yours normalises over the sequence and the features together
#include "11_encoder_block.hpp"

namespace qkv::exercises {

// LayerNorm(X + dropout(Y)) with the layer's own dropout, weight and bias.
Tensor add_norm(const nn::AddNorm& an, const Tensor& X, const Tensor& Y) {
  Tensor Z = X + (*an.dropout)(Y);  // (B, T, H)
  const int64_t B = Z.size(0), T = Z.size(1), H = Z.size(2);
  Tensor flat = Z.reshape({B, T * H});             // wrong: one mean and variance per example
  Tensor centred = flat - flat.mean(1, true);      // (B, T H)
  Tensor var = (centred * centred).mean(1, true);  // (B, 1)
  Tensor normed = (centred / (var + an.ln->eps).sqrt()).reshape({B, T, H});
  return normed * an.ln->weight + an.ln->bias;
}

EncoderBlockSteps encoder_block(nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& valid_lens) {
  Tensor attended = (*blk.attention)(X, X, X, valid_lens);    // (B, T, H)
  Tensor Y = add_norm(*blk.addnorm1, X, attended);            // (B, T, H)
  Tensor output = add_norm(*blk.addnorm2, Y, (*blk.ffn)(Y));  // (B, T, H)
  return {attended, Y, output};
}

}  // namespace qkv::exercises
