// Scaled dot-product attention as one op, PyTorch 2's
// torch.nn.functional.scaled_dot_product_attention with d2l's valid lengths
// for its mask:
//
//   query (N, Q, d), key (N, K, d), value (N, K, dv) -> (N, Q, dv)
//   out = masked_softmax(query keyᵀ / √d, valid_lens) value
//
// N is every batch dim folded into one (B·h for multi-head attention). It
// computes what bmm, masked_softmax and bmm compute (the plain path, which
// DotProductAttention keeps for when its weights are asked for), without
// storing the (N, Q, K) weights, forward or backward: a fused kernel with
// an online softmax (src/kernels/flash_attention.hpp) keeps memory linear
// in Q and K. The backward recomputes the weights from the output and each
// row's log-sum-exp.
//
// valid_lens: undefined (every key), (N) one length per batch entry, or
// (N, Q) one per query row: row q sees keys k < its length; a row of length
// 0 gets uniform weights (d2l's -1e6). is_causal: row q sees keys k ≤ q
// (PyTorch's is_causal); with valid_lens, a row sees what both allow.
// dropout_p: each weight is dropped with probability p and the kept ones
// scaled by 1/(1 - p), as Dropout on the weights does; the mask is a hash
// of a seed drawn from `gen` (one draw per call) and the weight's place, so
// the backward draws it again instead of storing it (a mask of its own,
// not the one Dropout would draw from the same generator).
//
//   scaled_dot_product_attention(q, k, v, valid_lens, {.is_causal = true})
//
// Left out on purpose: additive float masks, and `scale` (always 1/√d).
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/core/tensor.hpp>

namespace qkv {

struct AttentionOptions {
  float dropout_p = 0.0f;                 // in [0, 1)
  bool is_causal = false;                 // row q sees keys k ≤ q
  Generator* gen = &default_generator();  // the dropout mask's seed comes from here
};

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const IntTensor& valid_lens = IntTensor(), AttentionOptions options = {});

}  // namespace qkv
