// softmax, log_softmax and d2l's masked_softmax.
//
//   softmax(x)ᵢ = exp(xᵢ) / Σⱼ exp(xⱼ)      along `dim`
//   backward:   dx = y ⊙ (dy - Σⱼ dyⱼ yⱼ)
//   log_softmax backward: dx = dy - softmax(x) · Σⱼ dyⱼ
// Both subtract the max first, so logits of ±1e4 stay finite.
#pragma once
#include <qkv/core/tensor.hpp>

namespace qkv {

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// d2l's masked softmax over the last dim of x (B, Q, K): in batch b (and,
// with 2-D valid_lens, query row q) only the first valid_lens[b] (or
// valid_lens[b, q]) keys count; the others are set to -1e6 before the
// softmax, so they get (almost exactly) zero weight. valid_lens is 1-D (B)
// or 2-D (B, Q); undefined means plain softmax.
Tensor masked_softmax(const Tensor& x, const IntTensor& valid_lens);

}  // namespace qkv
