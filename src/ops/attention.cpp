// scaled_dot_product_attention: one fused kernel forward, one backward
// (kernels/flash_attention.hpp), neither of which stores the (N, Q, K)
// weights. tests/ops/test_attention.cpp holds it equal to the plain path
// composed from bmm, masked_softmax and bmm, and to PyTorch.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/ops/attention.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/flash_attention.hpp"
#include "ops/util.hpp"

namespace qkv {

namespace {

const char* const OP = "scaled_dot_product_attention";

// query (N, Q, d), key (N, K, d), value (N, K, dv), valid_lens (N) or (N, Q) with lengths ≥ 0,
// dropout_p in [0, 1), a generator when it drops.
void check_inputs(const Tensor& query, const Tensor& key, const Tensor& value, const IntTensor& valid_lens,
                  const AttentionOptions& options) {
  if (!(options.dropout_p >= 0.0f && options.dropout_p < 1.0f))
    fail("{}: dropout_p {} must be in [0, 1)", OP, options.dropout_p);
  if (options.gen == nullptr) fail("{}: gen is null", OP);
  detail::check_input(query, OP, "query", 3, 3);
  detail::check_input(key, OP, "key", 3, 3);
  detail::check_input(value, OP, "value", 3, 3);
  const int64_t N = query.size(0), Q = query.size(1);
  if (key.size(0) != N || value.size(0) != N)
    fail("{}: query {}, key {}, value {}: batch sizes differ", OP, query.shape(), key.shape(), value.shape());
  if (key.size(2) != query.size(2))
    fail("{}: query {}, key {}: query and key sizes {} and {} differ", OP, query.shape(), key.shape(), query.size(2),
         key.size(2));
  if (value.size(1) != key.size(1))
    fail("{}: key {}, value {}: expected one value per key", OP, key.shape(), value.shape());
  if (!valid_lens.defined()) return;
  const bool per_batch = valid_lens.shape() == Shape{N};
  if (!per_batch && valid_lens.shape() != Shape{N, Q})
    fail("{}: valid_lens {} does not fit query {}: expected ({}) or ({}, {})", OP, valid_lens.shape(), query.shape(), N,
         N, Q);
  const int64_t* lens = valid_lens.data();
  for (int64_t i = 0; i < valid_lens.numel(); ++i) {
    if (lens[i] < 0) {
      std::string at = per_batch ? fmt::format("[{}]", i) : fmt::format("[{}, {}]", i / Q, i % Q);
      fail("{}: valid_lens{} is {}; lengths must be ≥ 0", OP, at, lens[i]);
    }
  }
}

// One length per query row, (N·Q): valid_lens[n] for every q, or valid_lens[n, q].
std::vector<int64_t> row_lengths(const IntTensor& valid_lens, int64_t N, int64_t Q) {
  if (!valid_lens.defined()) return {};
  const bool per_batch = valid_lens.dim() == 1;
  std::vector<int64_t> rows(static_cast<size_t>(N * Q));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t q = 0; q < Q; ++q) rows[static_cast<size_t>(n * Q + q)] = valid_lens.data()[per_batch ? n : n * Q + q];
  return rows;
}

}  // namespace

//   s = q kᵀ / √d (masked),  p = softmax(s),  out = dropout(p) v,  lse = log Σ exp(s)   per row
// backward, with p = exp(s - lse) recomputed tile by tile and D = Σ dout ⊙ out per row:
//   dv = dropout(p)ᵀ dout,   ds = p ⊙ (dropout(dout vᵀ) - D),   dq = ds k / √d,   dk = dsᵀ q / √d
// (dropout(x): x kept and scaled by 1/(1 - p), or 0, by the same mask each time.)
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const IntTensor& valid_lens, AttentionOptions options) {
  check_inputs(query, key, value, valid_lens, options);
  const int64_t N = query.size(0), Q = query.size(1), K = key.size(1), d = query.size(2), dv = value.size(2);
  kernels::AttentionSizes sizes{.N = N, .Q = Q, .K = K, .d = d, .dv = dv, .causal = options.is_causal};
  sizes.scale = 1.0f / std::sqrt(static_cast<float>(d));
  sizes.dropout = options.dropout_p;
  if (options.dropout_p > 0.0f) sizes.seed = options.gen->next_u64();  // the mask, for forward and backward
  std::vector<int64_t> lens = row_lengths(valid_lens, N, Q);           // (N·Q), or empty: every key
  // With no keys (K = 0) the output is a sum of nothing: zeros, and so are the gradients.
  const bool any = N * Q > 0 && K > 0;

  Tensor out = any ? Tensor::empty({N, Q, dv}) : zeros({N, Q, dv});  // (N, Q, dv)
  Tensor lse = Tensor::empty({N, Q});                                // (N, Q): log Σₖ exp(s[q, k])
  sizes.lens = lens.empty() ? nullptr : lens.data();
  if (any) kernels::flash_attention(sizes, query.data(), key.data(), value.data(), out.data(), lse.data());

  // The backward reads the inputs, the output (record() keeps it detached,
  // see autograd.hpp) and lse, the forward's own buffer.
  record(out, "ScaledDotProductAttentionBackward", {query, key, value}, /*saved=*/{query, key, value, out, lse},
         [lens = std::move(lens), sizes, any](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& q = saved[0];
           const Tensor& k = saved[1];
           const Tensor& v = saved[2];
           const Tensor& y = saved[3];
           const Tensor& row_lse = saved[4];
           kernels::AttentionSizes s = sizes;
           s.lens = lens.empty() ? nullptr : lens.data();  // the copy's own lengths
           Tensor dq = any ? Tensor::empty(q.shape()) : zeros(q.shape());
           Tensor dk = any ? Tensor::empty(k.shape()) : zeros(k.shape());
           Tensor dvalue = any ? Tensor::empty(v.shape()) : zeros(v.shape());
           if (any)
             kernels::flash_attention_backward(s, q.data(), k.data(), v.data(), y.data(), row_lse.data(), dout.data(),
                                               dq.data(), dk.data(), dvalue.data());
           return {dq, dk, dvalue};
         });
  return out;
}

}  // namespace qkv
