// RNN, GRU and LSTM: one loop over layers and steps (RNNBase::run) and one
// cell per kind, so autograd differentiates through time (backpropagation
// through time, d2l 9.7). The RNN and LSTM cells are composed from ops; the
// GRU's elementwise part is one op, fused_gru_cell, with its own backward.
//
// Letters as in the header: T steps, B batch, I input_size, H hidden_size,
// L num_layers, G gates.
//
// NOTE (speed): the input projection W_ih·x_t + b_ih does not depend on the
// recurrence, so it could be one GEMM over all T steps,
// (T, B, I) -> (T, B, G·H), split into steps afterwards; the split's backward
// would cost one (T, B, G·H) gradient buffer that every step adds into
// (record_accumulate). run() does one small GEMM per step instead: the
// all-steps form is no faster overall, since its extra passes over
// (T, B, G·H) arrays (the projection, its per-step copies, that buffer) cost
// about what the larger GEMM saves. It loses where I is small and wins where
// I is as large as H (docs/kernel_notes.md has the measurements).
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/nn/init.hpp>
#include <qkv/nn/rnn.hpp>
#include <qkv/ops/elementwise.hpp>
#include <qkv/ops/functional.hpp>
#include <qkv/ops/linalg.hpp>
#include <qkv/ops/shape_ops.hpp>

#include <cmath>
#include <new>
#include <stdexcept>

#include "stack.hpp"

namespace qkv::nn {

// ---- the cells: one step of one layer ------------------------------------------------
// Each gets xw = W_ih·x_t + b_ih (B, G·H) and the previous state, and returns
// the next state. In the equations W_ir, W_hr, b_ir, b_hr, … are one gate's
// block of H rows in weight_ih, weight_hh, bias_ih, bias_hh.

namespace {

// Elman RNN (d2l 9.4):
//   h' = tanh(W_ih x + b_ih + W_hh h + b_hh)
RNNBase::State rnn_tanh_cell(const Tensor& xw, const RNNBase::State& s, const Tensor& w_hh, const Tensor& b_hh) {
  return {tanh(xw + linear(s.h, w_hh, b_hh)), Tensor()};  // (B, H) + (B, H) -> (B, H)
}

// GRU (d2l 10.2), in PyTorch's form:
//   r  = σ(W_ir x + b_ir + W_hr h + b_hr)          reset gate
//   z  = σ(W_iz x + b_iz + W_hz h + b_hz)          update gate
//   n  = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))  candidate
//   h' = (1 - z) ⊙ n + z ⊙ h
// NOTE: r multiplies W_hn h + b_hn, as in PyTorch and cuDNN; d2l's
// from-scratch GRU resets h before the product, W_hn (r ⊙ h): a slightly
// different model, so its weights would not give PyTorch's numbers.
// The step is fused_gru_cell (one kernel each way; tests/nn/test_rnn.cpp holds
// it equal to the composition chunk, sigmoid, tanh, mul, add of the lines above).
RNNBase::State gru_cell(const Tensor& xw, const RNNBase::State& s, const Tensor& w_hh, const Tensor& b_hh) {
  Tensor hw = linear(s.h, w_hh, b_hh);             // (B, H) -> (B, 3H): h_r, h_z, h_n
  return {fused_gru_cell(xw, hw, s.h), Tensor()};  // (B, 3H), (B, 3H), (B, H) -> (B, H)
}

// LSTM (d2l 10.1), PyTorch's gate order:
//   i  = σ(W_ii x + b_ii + W_hi h + b_hi)      input gate
//   f  = σ(W_if x + b_if + W_hf h + b_hf)      forget gate
//   g  = tanh(W_ig x + b_ig + W_hg h + b_hg)   candidate memory
//   o  = σ(W_io x + b_io + W_ho h + b_ho)      output gate
//   c' = f ⊙ c + i ⊙ g
//   h' = o ⊙ tanh(c')
RNNBase::State lstm_cell(const Tensor& xw, const RNNBase::State& s, const Tensor& w_hh, const Tensor& b_hh) {
  std::vector<Tensor> gates = chunk(xw + linear(s.h, w_hh, b_hh), 4, 1);  // (B, 4H) -> 4 × (B, H)
  Tensor i = sigmoid(gates[0]), f = sigmoid(gates[1]), g = tanh(gates[2]), o = sigmoid(gates[3]);
  Tensor c = f * s.c + i * g;  // (B, H)
  return {o * tanh(c), c};     // (B, H), (B, H)
}

// The l-th entry, or an undefined tensor when there are none (bias = false).
Tensor entry(const std::vector<Tensor>& v, int64_t l) { return v.empty() ? Tensor() : v[static_cast<size_t>(l)]; }

}  // namespace

// ---- parameters ------------------------------------------------------------------------

RNNBase::RNNBase(const char* name, int64_t gates, int64_t input_size, int64_t hidden_size, int64_t num_layers,
                 bool bias, bool batch_first, float dropout, Generator& gen)
    : input_size(input_size),
      hidden_size(hidden_size),
      num_layers(num_layers),
      bias(bias),
      batch_first(batch_first),
      dropout(dropout),
      name_(name),
      gen_(&gen) {
  if (input_size <= 0) fail("{}: input_size must be positive, got {}", name, input_size);
  if (hidden_size <= 0) fail("{}: hidden_size must be positive, got {}", name, hidden_size);
  if (num_layers <= 0) fail("{}: num_layers must be positive, got {}", name, num_layers);
  if (!(dropout >= 0 && dropout < 1)) fail("{}: dropout must be in [0, 1), got {}", name, dropout);
  // PyTorch's default: every weight and bias ~ U[-1/sqrt(H), 1/sqrt(H)].
  const float k = 1.0f / std::sqrt(static_cast<float>(hidden_size));
  auto uniform = [&](Shape shape) {
    Tensor t = Tensor::empty(std::move(shape), name);
    init::uniform_(t, -k, k, gen);
    return t;
  };
  const int64_t GH = checked_mul(gates, hidden_size, name);
  // A layer holds at least GH·H weights (weight_hh). If GH·H overflows, the
  // first weight's shape check below names it.
  if (int64_t per_layer = 0; !__builtin_mul_overflow(GH, hidden_size, &per_layer))
    detail::check_stack_size(name, "num_layers", num_layers, per_layer);
  // Sized once, before binding: register_parameter keeps each element's
  // address, so the vectors must never grow after this.
  const auto L = static_cast<size_t>(num_layers);
  try {
    weight_ih.resize(L);
    weight_hh.resize(L);
    if (bias) {
      bias_ih.resize(L);
      bias_hh.resize(L);
    }
  } catch (const std::bad_alloc&) {
    fail("{}: out of memory making room for num_layers {}", name, num_layers);
  } catch (const std::length_error&) {
    fail("{}: num_layers {} is too large to allocate", name, num_layers);
  }
  for (size_t l = 0; l < L; ++l) {
    const int64_t in = l == 0 ? input_size : hidden_size;  // layer l > 0 reads layer l-1's h
    register_parameter(fmt::format("weight_ih_l{}", l), weight_ih[l], uniform({GH, in}));
    register_parameter(fmt::format("weight_hh_l{}", l), weight_hh[l], uniform({GH, hidden_size}));
    if (bias) {
      register_parameter(fmt::format("bias_ih_l{}", l), bias_ih[l], uniform({GH}));
      register_parameter(fmt::format("bias_hh_l{}", l), bias_hh[l], uniform({GH}));
    }
  }
}

// PyTorch prints only what differs from the defaults.
std::string RNNBase::extra_repr() const {
  std::string s = fmt::format("{}, {}", input_size, hidden_size);
  if (num_layers != 1) s += fmt::format(", num_layers={}", num_layers);
  if (!bias) s += ", bias=False";
  if (batch_first) s += ", batch_first=True";
  if (dropout != 0) s += fmt::format(", dropout={}", dropout);
  return s;
}

// ---- the loop over layers and steps ------------------------------------------------------

RNNBase::Output RNNBase::run(const Tensor& x, const Tensor& h0, const Tensor& c0, bool has_cell_state,
                             Cell cell) const {
  if (!x.defined()) fail("{}: input is an undefined tensor", name_);
  // Bring x to time-major (T, B, I); an unbatched (T, I) is a batch of one.
  if (x.dim() != 3 && x.dim() != 2)
    fail("{}: input {}: expected 3 dims ({}) or 2 dims (T, I) unbatched", name_, x.shape(),
         batch_first ? "B, T, I" : "T, B, I");
  if (x.size(-1) != input_size) fail("{}: input {}: expected last dim input_size {}", name_, x.shape(), input_size);
  const bool batched = x.dim() == 3;
  Tensor xs = !batched      ? unsqueeze(x, 1)     // (T, I) -> (T, 1, I)
              : batch_first ? transpose(x, 0, 1)  // (B, T, I) -> (T, B, I)
                            : x;                  // (T, B, I)
  const int64_t T = xs.size(0), B = xs.size(1), L = num_layers, H = hidden_size;
  if (T == 0) fail("{}: input {} has no time steps", name_, x.shape());

  // The initial state of each layer, (B, H): zeros, or the layer's slice of h0 / c0.
  if (has_cell_state && h0.defined() != c0.defined())
    fail("{}: give both h0 and c0, or neither (got only {})", name_, h0.defined() ? "h0" : "c0");
  auto initial = [&](const Tensor& s0, const char* what) {
    std::vector<Tensor> per_layer;
    if (!s0.defined()) {
      for (int64_t l = 0; l < L; ++l) per_layer.push_back(zeros({B, H}));
      return per_layer;
    }
    Shape want = batched ? Shape{L, B, H} : Shape{L, H};
    if (s0.shape() != want)
      fail("{}: {} {}: expected {} (num_layers, {}hidden_size)", name_, what, s0.shape(), want,
           batched ? "batch, " : "");
    for (const Tensor& s : split(s0, 1, 0)) per_layer.push_back(reshape(s, {B, H}));  // (L, B, H) -> L × (B, H)
    return per_layer;
  };
  std::vector<Tensor> h = initial(h0, "h0"), c;
  if (has_cell_state) c = initial(c0, "c0");

  // Layer by layer, step by step. Layer 0 reads x's steps; layer l reads the
  // outputs of layer l-1, through dropout in training.
  std::vector<Tensor> inputs;                                                                 // T × (B, I)
  for (const Tensor& x_t : split(xs, 1, 0)) inputs.push_back(reshape(x_t, {B, input_size}));  // (1, B, I) -> (B, I)
  std::vector<Tensor> h_n, c_n;
  for (int64_t l = 0; l < L; ++l) {
    const bool last = l + 1 == L;
    State s{h[l], has_cell_state ? c[l] : Tensor()};
    std::vector<Tensor> outputs;  // T × (B, H)
    for (const Tensor& x_t : inputs) {
      Tensor xw = linear(x_t, weight_ih[l], entry(bias_ih, l));  // (B, I or H) -> (B, G·H)
      s = cell(xw, s, weight_hh[l], entry(bias_hh, l));          // (B, G·H), (B, H) -> (B, H)
      outputs.push_back(last ? s.h : qkv::dropout(s.h, dropout, is_training(), *gen_));
    }
    inputs = std::move(outputs);
    h_n.push_back(s.h);
    c_n.push_back(s.c);
  }
  Tensor output = stack(inputs, 0);  // T × (B, H) -> (T, B, H)

  // Back to the caller's layout.
  Output out;
  out.output = !batched      ? reshape(output, {T, H})                 // (T, 1, H) -> (T, H)
               : batch_first ? transpose(output, 0, 1)                 // (T, B, H) -> (B, T, H)
                             : output;                                 // (T, B, H)
  out.h_n = batched ? stack(h_n, 0) : reshape(stack(h_n, 0), {L, H});  // L × (B, H) -> (L, B, H) or (L, H)
  if (has_cell_state) out.c_n = batched ? stack(c_n, 0) : reshape(stack(c_n, 0), {L, H});
  return out;
}

// ---- the three layers ----------------------------------------------------------------------

RNN::RNN(int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first, float dropout,
         Generator& gen)
    : RNNBase("RNN", 1, input_size, hidden_size, num_layers, bias, batch_first, dropout, gen) {}

RNNOutput RNN::forward(const Tensor& x, const Tensor& h0) const {
  TraceScope trace(*this, {x, h0});
  Output r = run(x, h0, Tensor(), false, rnn_tanh_cell);
  trace.outputs({r.output, r.h_n});
  return {r.output, r.h_n};
}

GRU::GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first, float dropout,
         Generator& gen)
    : RNNBase("GRU", 3, input_size, hidden_size, num_layers, bias, batch_first, dropout, gen) {}

RNNOutput GRU::forward(const Tensor& x, const Tensor& h0) const {
  TraceScope trace(*this, {x, h0});
  Output r = run(x, h0, Tensor(), false, gru_cell);
  trace.outputs({r.output, r.h_n});
  return {r.output, r.h_n};
}

LSTM::LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first, float dropout,
           Generator& gen)
    : RNNBase("LSTM", 4, input_size, hidden_size, num_layers, bias, batch_first, dropout, gen) {}

LSTMOutput LSTM::forward(const Tensor& x, const Tensor& h0, const Tensor& c0) const {
  TraceScope trace(*this, {x, h0, c0});
  Output r = run(x, h0, c0, true, lstm_cell);
  trace.outputs({r.output, r.h_n, r.c_n});
  return {r.output, r.h_n, r.c_n};
}

}  // namespace qkv::nn
