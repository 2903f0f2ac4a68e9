// The sequence loss of d2l 9.7.2 ("Loss Function"): a batch of target
// sentences is padded to one length S, and the padding must add nothing to
// the loss. The masked cross-entropy weights each position's loss by 1 (a
// real token) or 0 (padding), with the weights made by sequence_mask
// (ops/compare.hpp).
//
// Letters: B batch, S steps, V vocabulary.
#pragma once
#include <qkv/core/tensor.hpp>

namespace qkv::nn {

// d2l's MaskedSoftmaxCELoss, one loss per sequence:
//   loss[b] = (1/S) Σ_{s < valid_len[b]} -log softmax(pred[b, s])[label[b, s]]
// pred (B, S, V) logits, label (B, S) ids in [0, V), valid_len (B) -> (B).
// NOTE: as d2l's, it divides by S, not by valid_len[b]: a short sentence
// weighs less. (d2l's training loop sums these and divides by the number of
// tokens only for the printed loss.)
Tensor masked_softmax_cross_entropy(const Tensor& pred, const IntTensor& label, const IntTensor& valid_len);

}  // namespace qkv::nn
