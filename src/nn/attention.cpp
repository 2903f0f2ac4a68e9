// Additive, scaled dot-product and multi-head attention, on Linear,
// masked_softmax and bmm (d2l 11.3 and 11.5), or, when the weights are not
// asked for, the fused scaled_dot_product_attention. No hand-written
// backward: gradients come from the ops.
//
// Letters: B batch, Q queries, K key–value pairs, Dq / Dk / Dv the query /
// key / value sizes, H num_hiddens, h heads.
#include <qkv/core/error.hpp>
#include <qkv/nn/attention.hpp>
#include <qkv/ops/attention.hpp>
#include <qkv/ops/elementwise.hpp>
#include <qkv/ops/linalg.hpp>
#include <qkv/ops/shape_ops.hpp>
#include <qkv/ops/softmax.hpp>

#include <cmath>
#include <mutex>
#include <utility>

namespace qkv::nn {

namespace {

// The checks every attention layer makes: 3-D inputs with one batch size, a
// value for every key, and valid_lens (B) or (B, Q) when given.
void check_inputs(const char* layer, const Tensor& queries, const Tensor& keys, const Tensor& values,
                  const IntTensor& valid_lens) {
  if (!queries.defined()) fail("{}: queries is an undefined tensor", layer);
  if (!keys.defined()) fail("{}: keys is an undefined tensor", layer);
  if (!values.defined()) fail("{}: values is an undefined tensor", layer);
  if (queries.dim() != 3 || keys.dim() != 3 || values.dim() != 3)
    fail("{}: queries {}, keys {}, values {}: expected 3-D (B, Q, D), (B, K, D), (B, K, Dv)", layer, queries.shape(),
         keys.shape(), values.shape());
  const int64_t B = queries.size(0), Q = queries.size(1);
  if (keys.size(0) != B || values.size(0) != B)
    fail("{}: queries {}, keys {}, values {}: batch sizes differ", layer, queries.shape(), keys.shape(),
         values.shape());
  if (values.size(1) != keys.size(1))
    fail("{}: keys {}, values {}: expected one value per key", layer, keys.shape(), values.shape());
  if (valid_lens.defined() && valid_lens.shape() != Shape{B} && valid_lens.shape() != Shape{B, Q})
    fail("{}: valid_lens {} does not fit queries {}: expected ({}) or ({}, {})", layer, valid_lens.shape(),
         queries.shape(), B, B, Q);
}

// The layer's own check of an input against one of its sizes, named in the
// message ("query_size"). (The Linear that projects x would refuse it too,
// but could not say which of the layer's sizes it broke.)
void check_last_dim(const char* layer, const char* what, const Tensor& x, int64_t expected, const char* size_name) {
  if (x.size(-1) != expected) fail("{}: {} {}: expected last dim {} ({})", layer, what, x.shape(), expected, size_name);
}

// attention_weights = weights.detach(), under the layer's lock: another
// thread's forward of the same layer may be storing its own (attention.hpp).
void store_weights(std::mutex& mutex, Tensor& stored, const Tensor& weights) {
  Tensor detached = weights.defined() ? weights.detach() : Tensor();
  const std::lock_guard lock(mutex);
  std::swap(stored, detached);  // the old weights are freed after the lock, with `detached`
}

}  // namespace

// --- additive attention ---------------------------------------------------------

AdditiveAttention::AdditiveAttention(int64_t key_size, int64_t query_size, int64_t num_hiddens, float dropout,
                                     Generator& gen) {
  W_k = register_module("W_k", std::make_shared<Linear>(key_size, num_hiddens, false, gen));
  W_q = register_module("W_q", std::make_shared<Linear>(query_size, num_hiddens, false, gen));
  w_v = register_module("w_v", std::make_shared<Linear>(num_hiddens, 1, false, gen));
  this->dropout = register_module("dropout", std::make_shared<Dropout>(dropout, gen));
}

Tensor AdditiveAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                  const IntTensor& valid_lens) {
  TraceScope trace(*this, {queries, keys, values, valid_lens});
  check_inputs("AdditiveAttention", queries, keys, values, valid_lens);
  check_last_dim("AdditiveAttention", "queries", queries, W_q->in_features, "query_size");
  check_last_dim("AdditiveAttention", "keys", keys, W_k->in_features, "key_size");
  Tensor q = (*W_q)(queries);  // (B, Q, Dq) -> (B, Q, H)
  Tensor k = (*W_k)(keys);     // (B, K, Dk) -> (B, K, H)
  // Every query meets every key by broadcasting the sum:
  Tensor features = (q.unsqueeze(2) + k.unsqueeze(1)).tanh();  // (B, Q, 1, H) + (B, 1, K, H) -> (B, Q, K, H)
  Tensor scores = (*w_v)(features).squeeze(-1);                // (B, Q, K, 1) -> (B, Q, K)
  Tensor weights = masked_softmax(scores, valid_lens);         // (B, Q, K), rows sum to 1
  store_weights(weights_mutex_, attention_weights, weights);
  return trace.output(bmm((*dropout)(weights), values));  // (B, Q, K) x (B, K, Dv) -> (B, Q, Dv)
}

// --- scaled dot-product attention -------------------------------------------------

DotProductAttention::DotProductAttention(float dropout, Generator& gen) : gen_(&gen) {
  this->dropout = register_module("dropout", std::make_shared<Dropout>(dropout, gen));
}

Tensor DotProductAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                    const IntTensor& valid_lens) {
  TraceScope trace(*this, {queries, keys, values, valid_lens});
  check_inputs("DotProductAttention", queries, keys, values, valid_lens);
  // The fused path computes the same output without the (B, Q, K) weights,
  // so it serves whenever they are not wanted. Its dropout draws a mask of
  // its own (from the same generator); p = 1, which it refuses, drops everything on the plain path.
  const float p = is_training() ? dropout->p : 0.0f;
  if (!need_weights && p < 1.0f) {
    store_weights(weights_mutex_, attention_weights, Tensor());  // none: an old forward's would mislead
    // (B, Q, d), (B, K, d), (B, K, Dv) -> (B, Q, Dv)
    return scaled_dot_product_attention(queries, keys, values, valid_lens, {.dropout_p = p, .gen = gen_});
  }
  // queries and keys must have one size d: bmm checks it (its inner sizes) and names both shapes.
  const float d = static_cast<float>(queries.size(-1));
  // keys read transposed by the GEMM itself: no (B, d, K) copy, forward or backward.
  Tensor scores = bmm(queries, keys, {.transpose_b = true}) / std::sqrt(d);  // (B, Q, d) x (B, K, d)ᵀ -> (B, Q, K)
  Tensor weights = masked_softmax(scores, valid_lens);                       // (B, Q, K), rows sum to 1
  store_weights(weights_mutex_, attention_weights, weights);
  return trace.output(bmm((*dropout)(weights), values));  // (B, Q, K) x (B, K, Dv) -> (B, Q, Dv)
}

// --- multi-head attention ---------------------------------------------------------

Tensor transpose_qkv(const Tensor& X, int64_t num_heads) {
  if (X.dim() != 3 || num_heads <= 0 || X.size(2) % num_heads != 0)
    fail("transpose_qkv: X {} with {} heads: expected (B, T, H) with H divisible by the heads", X.shape(), num_heads);
  const int64_t B = X.size(0), T = X.size(1), Dh = X.size(2) / num_heads;
  Tensor Y = reshape(X, {B, T, num_heads, Dh});  // (B, T, H) -> (B, T, h, H/h)
  Y = permute(Y, {0, 2, 1, 3});                  // (B, h, T, H/h)
  return reshape(Y, {B * num_heads, T, Dh});     // (B·h, T, H/h)
}

Tensor transpose_output(const Tensor& X, int64_t num_heads) {
  if (X.dim() != 3 || num_heads <= 0 || X.size(0) % num_heads != 0)
    fail("transpose_output: X {} with {} heads: expected (B·h, T, H/h) with the first dim divisible by the heads",
         X.shape(), num_heads);
  const int64_t B = X.size(0) / num_heads, T = X.size(1), Dh = X.size(2);
  Tensor Y = reshape(X, {B, num_heads, T, Dh});  // (B·h, T, H/h) -> (B, h, T, H/h)
  Y = permute(Y, {0, 2, 1, 3});                  // (B, T, h, H/h)
  return reshape(Y, {B, T, num_heads * Dh});     // (B, T, H)
}

MultiHeadAttention::MultiHeadAttention(int64_t key_size, int64_t query_size, int64_t value_size, int64_t num_hiddens,
                                       int64_t num_heads, float dropout, bool bias, Generator& gen)
    : key_size(key_size),
      query_size(query_size),
      value_size(value_size),
      num_hiddens(num_hiddens),
      num_heads(num_heads) {
  if (num_hiddens <= 0 || num_heads <= 0 || num_hiddens % num_heads != 0)
    fail("MultiHeadAttention: num_hiddens {} must be a positive multiple of num_heads {}", num_hiddens, num_heads);
  if (key_size <= 0 || query_size <= 0 || value_size <= 0)
    fail("MultiHeadAttention: key_size {}, query_size {}, value_size {} must be positive", key_size, query_size,
         value_size);
  // Registered (and initialised from gen) in d2l's order, so a d2l state dict lists the same names.
  attention = register_module("attention", std::make_shared<DotProductAttention>(dropout, gen));
  W_q = register_module("W_q", std::make_shared<Linear>(query_size, num_hiddens, bias, gen));
  W_k = register_module("W_k", std::make_shared<Linear>(key_size, num_hiddens, bias, gen));
  W_v = register_module("W_v", std::make_shared<Linear>(value_size, num_hiddens, bias, gen));
  W_o = register_module("W_o", std::make_shared<Linear>(num_hiddens, num_hiddens, bias, gen));
}

MultiHeadAttention::MultiHeadAttention(int64_t num_hiddens, int64_t num_heads, float dropout, bool bias, Generator& gen)
    : MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, dropout, bias, gen) {}

Tensor MultiHeadAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                   const IntTensor& valid_lens) {
  TraceScope trace(*this, {queries, keys, values, valid_lens});
  check_inputs("MultiHeadAttention", queries, keys, values, valid_lens);
  check_last_dim("MultiHeadAttention", "queries", queries, query_size, "query_size");
  check_last_dim("MultiHeadAttention", "keys", keys, key_size, "key_size");
  check_last_dim("MultiHeadAttention", "values", values, value_size, "value_size");
  Tensor q = transpose_qkv((*W_q)(queries), num_heads);  // (B, Q, Dq) -> (B, Q, H) -> (B·h, Q, H/h)
  Tensor k = transpose_qkv((*W_k)(keys), num_heads);     // (B, K, Dk) -> (B, K, H) -> (B·h, K, H/h)
  Tensor v = transpose_qkv((*W_v)(values), num_heads);   // (B, K, Dv) -> (B, K, H) -> (B·h, K, H/h)
  // Every head of example b sees b's valid lengths: row b·h + i (head i of
  // example b, as transpose_qkv lays the heads out) is row b repeated.
  // (B) -> (B·h), (B, Q) -> (B·h, Q)
  IntTensor lens = valid_lens.defined() ? repeat_interleave(valid_lens, num_heads, 0) : IntTensor();
  Tensor out = (*attention)(q, k, v, lens);                       // (B·h, Q, H/h): all heads in one bmm
  return trace.output((*W_o)(transpose_output(out, num_heads)));  // (B, Q, H) -> (B, Q, H)
}

const Tensor& MultiHeadAttention::attention_weights() const {
  if (!attention->attention_weights.defined())
    fail("MultiHeadAttention: no attention weights yet: call forward first, with attention->need_weights on");
  return attention->attention_weights;
}

Tensor MultiHeadAttention::attention_weights_per_head() const {
  const Tensor& w = attention_weights();
  return w.reshape({w.size(0) / num_heads, num_heads, w.size(1), w.size(2)});  // (B·h, Q, K) -> (B, h, Q, K)
}

void set_need_weights(Module& module, bool need_weights) {
  if (auto* attention = dynamic_cast<DotProductAttention*>(&module)) attention->need_weights = need_weights;
  for (const auto& [name, child] : module.named_children()) set_need_weights(*child, need_weights);
}

}  // namespace qkv::nn
