// nn::RNN, nn::GRU and nn::LSTM: multi-layer recurrent networks, PyTorch's
// layers with PyTorch's parameter names and gate order (d2l 9.4–9.6, 10.1–10.3).
//
// Letters: T steps, B batch, I input_size, H hidden_size, L num_layers,
// G gates per cell (RNN 1, GRU 3, LSTM 4).
//
//   x  (T, B, I), or (B, T, I) with batch_first, or (T, I) unbatched
//   h0 (L, B, H), or (L, H) unbatched; omitted: zeros (LSTM: c0 too)
//   -> output (T, B, H) (or (B, T, H), or (T, H)): the last layer's h at every step
//      h_n    (L, B, H) (or (L, H)): every layer's h at the last step (LSTM: c_n too)
//
// Layer l reads the outputs of layer l-1 (layer 0 reads x) and has
//   weight_ih_l{l} (G·H, I or H)   weight_hh_l{l} (G·H, H)   bias_ih_l{l}, bias_hh_l{l} (G·H)
// with the G gates stacked in PyTorch's order (GRU r, z, n; LSTM i, f, g, o),
// all initialised U[-1/sqrt(H), 1/sqrt(H)] as PyTorch does. With dropout > 0
// and training, each layer's outputs but the last layer's go through dropout.
//
// The three classes share the layer stack and the time loop (RNNBase::run)
// and differ only in their cell: one step of one layer (src/nn/rnn.cpp).
// Left out on purpose: bidirectional, proj_size, PackedSequence, RNN's relu.
#pragma once
#include <qkv/core/generator.hpp>
#include <qkv/nn/module.hpp>

#include <vector>

namespace qkv::nn {

struct RNNOutput {
  Tensor output;  // (T, B, H): the last layer at every step
  Tensor h_n;     // (L, B, H): every layer at the last step
};

struct LSTMOutput {
  Tensor output;  // (T, B, H)
  Tensor h_n;     // (L, B, H)
  Tensor c_n;     // (L, B, H): the memory cells at the last step
};

// What RNN, GRU and LSTM have in common (PyTorch's nn.RNNBase): the
// parameters of every layer, and the loop over layers and steps.
class RNNBase : public Module {
 public:
  int64_t input_size, hidden_size, num_layers;
  bool bias, batch_first;
  float dropout;  // between layers, in training

  // weight_ih[l] is the parameter PyTorch names weight_ih_l{l}, and so on.
  // bias_ih and bias_hh are empty when bias = false. Each element is bound
  // to its parameter: assign to an element (weight_ih[0] = …), never resize.
  std::vector<Tensor> weight_ih, weight_hh, bias_ih, bias_hh;

  std::string extra_repr() const override;  // "4, 8, num_layers=2, batch_first=True"

  // The state of one layer between steps: h (B, H), and for the LSTM c (B, H).
  struct State {
    Tensor h, c;
  };
  // One step of one layer: the input's projection xw = W_ih·x_t + b_ih
  // (B, G·H), computed by run(), and the previous state -> the next state.
  using Cell = State (*)(const Tensor& xw, const State& state, const Tensor& w_hh, const Tensor& b_hh);

 protected:
  RNNBase(const char* name, int64_t gates, int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias,
          bool batch_first, float dropout, Generator& gen);

  // What run() gives every kind of layer; each forward returns its part.
  struct Output {
    Tensor output;  // (T, B, H): the last layer at every step
    Tensor h_n;     // (L, B, H): every layer at the last step
    Tensor c_n;     // (L, B, H): the LSTM's memory cells at the last step; undefined for RNN and GRU
  };

  // Check x, h0 and c0 (undefined: zeros; c0 only for the LSTM), run every
  // layer over every step with `cell`, and shape the result as PyTorch does
  // (c_n is defined only when has_cell_state, i.e. for the LSTM).
  Output run(const Tensor& x, const Tensor& h0, const Tensor& c0, bool has_cell_state, Cell cell) const;

 private:
  const char* name_;  // "GRU": for error messages
  Generator* gen_;    // for the dropout between layers; NOTE: must outlive the layer
};

// Elman RNN with tanh: h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).
class RNN : public RNNBase {
 public:
  RNN(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, bool bias = true, bool batch_first = false,
      float dropout = 0, Generator& gen = default_generator());
  RNNOutput forward(const Tensor& x, const Tensor& h0 = Tensor()) const;
  RNNOutput operator()(const Tensor& x, const Tensor& h0 = Tensor()) const { return forward(x, h0); }
  std::string type_name() const override { return "RNN"; }
};

// Gated recurrent unit (Cho et al., 2014; d2l 10.2); gates r, z, n.
class GRU : public RNNBase {
 public:
  GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, bool bias = true, bool batch_first = false,
      float dropout = 0, Generator& gen = default_generator());
  RNNOutput forward(const Tensor& x, const Tensor& h0 = Tensor()) const;
  RNNOutput operator()(const Tensor& x, const Tensor& h0 = Tensor()) const { return forward(x, h0); }
  std::string type_name() const override { return "GRU"; }
};

// Long short-term memory (Hochreiter & Schmidhuber, 1997; d2l 10.1); gates i, f, g, o.
// PyTorch passes (h0, c0) as a tuple; here they are two arguments, both or neither.
class LSTM : public RNNBase {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, bool bias = true, bool batch_first = false,
       float dropout = 0, Generator& gen = default_generator());
  LSTMOutput forward(const Tensor& x, const Tensor& h0 = Tensor(), const Tensor& c0 = Tensor()) const;
  LSTMOutput operator()(const Tensor& x, const Tensor& h0 = Tensor(), const Tensor& c0 = Tensor()) const {
    return forward(x, h0, c0);
  }
  std::string type_name() const override { return "LSTM"; }
};

}  // namespace qkv::nn
