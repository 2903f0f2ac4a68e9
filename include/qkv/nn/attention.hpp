// Attention layers, after d2l's chapter "Attention Mechanisms and
// Transformers" (PyTorch edition): additive attention and scaled dot-product
// attention (11.3, "Attention Scoring Functions") and multi-head attention
// (11.5). Each is a thin layer over ops: Linear, masked_softmax, bmm.
//
// Every attention layer maps queries, keys and values to one output per query:
//   output[b, q] = Σₖ α(q, k) · values[b, k],   α(q, ·) = masked_softmax(score(q, ·))
// and differs only in its score. valid_lens (optional) says how many keys
// each example (1-D, (B)) or each query row (2-D, (B, Q)) may look at: keys
// past it are padding and get (almost exactly) zero weight.
//
// Letters: B batch, Q queries, K key–value pairs, Dq / Dk / Dv the query /
// key / value sizes, H num_hiddens, h heads (each head sees H/h features).
//
// Each layer keeps the attention weights of its last forward, detached from
// the graph (for drawing heatmaps, not for backpropagation). Scaled
// dot-product and multi-head attention can do without them: with
// need_weights off (PyTorch's switch of that name; on by default, as d2l's
// layers always keep them), they run the fused scaled_dot_product_attention
// (qkv/ops/attention.hpp), which never stores the (B, Q, K) weights, so
// memory grows with T, not T², and attention_weights stays undefined. In
// training, the fused path drops weights as the layer's Dropout would, with
// a mask of its own: the same in distribution, not the same draws. Forwards may
// run on several threads at once (inference on one layer): each stores its
// weights under the layer's lock, so the field then holds one forward's
// weights whole, those of whichever stored last. Read the field when no
// forward of the layer is running (docs/threads.md).
//
// Left out on purpose: d2l's LazyLinear (qkv has no lazy layers, so the
// input sizes are given), attention over more than one batch dim.
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/nn/dropout.hpp>
#include <qkv/nn/linear.hpp>
#include <qkv/nn/module.hpp>

#include <memory>
#include <mutex>

namespace qkv::nn {

// --- additive attention (d2l 11.3.3) -----------------------------------------
// score(q, k) = w_vᵀ tanh(W_q q + W_k k): queries and keys may have different
// sizes; both are mapped into num_hiddens features, added, squashed, and
// reduced to one number by w_v.
//   queries (B, Q, Dq), keys (B, K, Dk), values (B, K, Dv) -> (B, Q, Dv)
class AdditiveAttention : public Module {
 public:
  AdditiveAttention(int64_t key_size, int64_t query_size, int64_t num_hiddens, float dropout,
                    Generator& gen = default_generator());
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const IntTensor& valid_lens = IntTensor());
  Tensor operator()(const Tensor& queries, const Tensor& keys, const Tensor& values,
                    const IntTensor& valid_lens = IntTensor()) {
    return forward(queries, keys, values, valid_lens);
  }

  std::shared_ptr<Linear> W_k;  // Linear(key_size, num_hiddens, bias=False)
  std::shared_ptr<Linear> W_q;  // Linear(query_size, num_hiddens, bias=False)
  std::shared_ptr<Linear> w_v;  // Linear(num_hiddens, 1, bias=False)
  std::shared_ptr<Dropout> dropout;
  Tensor attention_weights;  // (B, Q, K) of the last forward, detached

  std::string type_name() const override { return "AdditiveAttention"; }

 private:
  std::mutex weights_mutex_;  // held while a forward stores attention_weights
};

// --- scaled dot-product attention (d2l 11.3.2) -------------------------------
// score(q, k) = q·k / sqrt(d): queries and keys have the same size d. The
// 1/sqrt(d) keeps the scores' variance near 1 whatever d is (for q, k with
// unit-variance entries, q·k has variance d), so the softmax does not saturate.
//   queries (B, Q, d), keys (B, K, d), values (B, K, Dv) -> (B, Q, Dv)
class DotProductAttention : public Module {
 public:
  explicit DotProductAttention(float dropout, Generator& gen = default_generator());
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const IntTensor& valid_lens = IntTensor());
  Tensor operator()(const Tensor& queries, const Tensor& keys, const Tensor& values,
                    const IntTensor& valid_lens = IntTensor()) {
    return forward(queries, keys, values, valid_lens);
  }

  std::shared_ptr<Dropout> dropout;
  Tensor attention_weights;  // (B, Q, K) of the last forward, detached; undefined after a fused one
  // Keep the weights (the plain path: bmm, masked_softmax, bmm); off: the
  // fused path. See the file's header.
  bool need_weights = true;

  std::string type_name() const override { return "DotProductAttention"; }

 private:
  std::mutex weights_mutex_;  // held while a forward stores attention_weights
  Generator* gen_;            // the fused path's dropout masks (Dropout keeps its own pointer to it)
};

// --- multi-head attention (d2l 11.5) -----------------------------------------
// h heads, each a scaled dot-product attention on its own H/h-feature slice
// of learned projections of queries, keys and values; their outputs are
// concatenated and mixed by W_o:
//   head_i = attention(q W_q,i, k W_k,i, v W_v,i)      (B, Q, H/h)
//   output = [head_1, …, head_h] W_o                     (B, Q, H)
// d2l's trick, kept here: one Linear per W computes every head at once, and
// transpose_qkv moves the heads into the batch dim, so one bmm serves them all.
//   queries (B, Q, Dq), keys (B, K, Dk), values (B, K, Dv) -> (B, Q, H)
// valid_lens (B) or (B, Q) is repeated for each head (repeat_interleave along dim 0).

// (B, T, H) -> (B·h, T, H/h): row b·h + i holds head i of example b.
Tensor transpose_qkv(const Tensor& X, int64_t num_heads);
// The inverse: (B·h, T, H/h) -> (B, T, H), the heads side by side again.
Tensor transpose_output(const Tensor& X, int64_t num_heads);

class MultiHeadAttention : public Module {
 public:
  // d2l's constructor (the edition with explicit sizes): W_q maps query_size
  // features to num_hiddens, W_k key_size, W_v value_size, W_o num_hiddens.
  MultiHeadAttention(int64_t key_size, int64_t query_size, int64_t value_size, int64_t num_hiddens, int64_t num_heads,
                     float dropout, bool bias = false, Generator& gen = default_generator());
  // The short form: queries, keys and values all have num_hiddens features
  // (key_size = query_size = value_size = num_hiddens). d2l's later edition
  // writes this with LazyLinear, which learns the sizes from the first input.
  MultiHeadAttention(int64_t num_hiddens, int64_t num_heads, float dropout, bool bias = false,
                     Generator& gen = default_generator());
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const IntTensor& valid_lens = IntTensor());
  Tensor operator()(const Tensor& queries, const Tensor& keys, const Tensor& values,
                    const IntTensor& valid_lens = IntTensor()) {
    return forward(queries, keys, values, valid_lens);
  }

  // The last forward's weights as d2l keeps them: (B·h, Q, K), row b·h + i
  // being head i of example b. A qkv::Error before the first forward, or
  // after one with attention->need_weights off (the fused path). As
  // the field above: call it when no forward of the layer is running.
  const Tensor& attention_weights() const;
  // The same numbers viewed per head: (B, h, Q, K), for a heatmap per head.
  Tensor attention_weights_per_head() const;

  int64_t key_size, query_size, value_size, num_hiddens, num_heads;
  std::shared_ptr<DotProductAttention> attention;
  std::shared_ptr<Linear> W_q;  // Linear(query_size, H, bias)
  std::shared_ptr<Linear> W_k;  // Linear(key_size, H, bias)
  std::shared_ptr<Linear> W_v;  // Linear(value_size, H, bias)
  std::shared_ptr<Linear> W_o;  // Linear(H, H, bias)

  std::string type_name() const override { return "MultiHeadAttention"; }
};

// need_weights for every DotProductAttention in module's tree (those of
// its MultiHeadAttention layers too): off for training, where nothing draws
// the weights and the fused path saves their memory; on again to draw them.
void set_need_weights(Module& module, bool need_weights);

}  // namespace qkv::nn
