// The masked softmax cross-entropy (d2l 9.7.2), built from cross_entropy,
// sequence_mask and mean: no hand-written backward.
//
// Letters: B batch, S steps, V vocabulary.
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/nn/loss.hpp>
#include <qkv/ops.hpp>

namespace qkv::nn {

Tensor masked_softmax_cross_entropy(const Tensor& pred, const IntTensor& label, const IntTensor& valid_len) {
  if (pred.dim() != 3) fail("masked_softmax_cross_entropy: pred {} must be (B, S, V)", pred.shape());
  const int64_t B = pred.size(0), S = pred.size(1), V = pred.size(2);
  if (label.shape() != Shape{B, S})
    fail("masked_softmax_cross_entropy: label {} does not fit pred {}: expected ({}, {})", label.shape(), pred.shape(),
         B, S);
  if (valid_len.shape() != Shape{B})
    fail("masked_softmax_cross_entropy: valid_len {} does not fit pred {}: expected ({})", valid_len.shape(),
         pred.shape(), B);
  for (int64_t i = 0; i < label.numel(); ++i) {
    const int64_t id = label.data()[i];
    if (id < 0 || id >= V)
      fail("masked_softmax_cross_entropy: label[{}, {}] = {} is not a token id in [0, {})", i / S, i % S, id, V);
  }
  // Every position's loss, padding included (d2l: reduction='none').
  Tensor unweighted = cross_entropy(reshape(pred, {B * S, V}), label.reshape({B * S}), /*weight=*/Tensor(),
                                    /*ignore_index=*/-100, Reduction::None);  // (B·S)
  // Weights 1 for real tokens, 0 past valid_len: a sequence_mask of ones.
  Tensor weights = sequence_mask(ones({B, S}), valid_len);  // (B, S)
  return mean(reshape(unweighted, {B, S}) * weights, 1);    // (B, S) -> (B)
}

}  // namespace qkv::nn
