"""Reference values for nn::RNN, nn::GRU and nn::LSTM (tests/nn/test_rnn.cpp).

Sizes all different (I = 3, H = 5, T = 6, B = 2) so that a mixed-up dim
shows. Each case writes output (out0), h_n (out1) and for the LSTM c_n (out2),
and the gradients of every parameter, of x (grad_x0) and of the initial
state (grad_x1, grad_x2) when one is given. Each case also holds the
layer's constructor arguments (ints input_size, hidden_size, num_layers,
bias, batch_first, training; float dropout), which the test builds it from.
"""
import torch
from torch import nn


def layer_case(w, name, module, fn, inputs):
    """module_case, with the layer's constructor arguments written into the case."""
    config = {"input_size": module.input_size, "hidden_size": module.hidden_size, "num_layers": module.num_layers,
              "bias": int(module.bias), "batch_first": int(module.batch_first), "training": int(module.training)}
    w.module_case(name, module, fn, inputs, ints={k: torch.tensor(v) for k, v in config.items()})
    # module_case writes ints only: the float goes in before the case's "end".
    end = w.lines.pop()
    w._float("dropout", torch.tensor(float(module.dropout)))
    w.lines.append(end)


def rnn_fn(m, x, h0=None):
    return m(x, h0)  # (output, h_n)


def lstm_fn(m, x, h0=None, c0=None):
    output, (h_n, c_n) = m(x, None if h0 is None else (h0, c0))
    return output, h_n, c_n


def build(w):
    torch.manual_seed(0)
    T, B, I, H = 6, 2, 3, 5

    # RNN (tanh)
    layer_case(w, "rnn/one_layer", nn.RNN(I, H), rnn_fn, [w.randn(T, B, I)])
    layer_case(w, "rnn/two_layers_h0", nn.RNN(I, H, 2), rnn_fn, [w.randn(T, B, I), w.randn(2, B, H)])
    layer_case(w, "rnn/batch_first_no_bias", nn.RNN(I, H, bias=False, batch_first=True), rnn_fn,
               [w.randn(B, T, I)])

    # GRU
    layer_case(w, "gru/two_layers", nn.GRU(I, H, 2), rnn_fn, [w.randn(T, B, I)])
    layer_case(w, "gru/two_layers_h0", nn.GRU(I, H, 2), rnn_fn, [w.randn(T, B, I), w.randn(2, B, H)])
    layer_case(w, "gru/batch_first", nn.GRU(I, H, 2, batch_first=True), rnn_fn, [w.randn(B, T, I)])
    layer_case(w, "gru/batch_first_h0", nn.GRU(I, H, 2, batch_first=True), rnn_fn,
               [w.randn(B, T, I), w.randn(2, B, H)])
    layer_case(w, "gru/no_bias", nn.GRU(I, H, bias=False), rnn_fn, [w.randn(T, B, I)])
    layer_case(w, "gru/unbatched_h0", nn.GRU(I, H, 2), rnn_fn, [w.randn(T, I), w.randn(2, H)])
    layer_case(w, "gru/one_step", nn.GRU(I, H), rnn_fn, [w.randn(1, B, I), w.randn(1, B, H)])
    # Between-layer dropout is off in eval mode: torch's numbers exactly.
    layer_case(w, "gru/dropout_eval", nn.GRU(I, H, 3, dropout=0.5).eval(), rnn_fn, [w.randn(T, B, I)])

    # LSTM
    layer_case(w, "lstm/two_layers", nn.LSTM(I, H, 2), lstm_fn, [w.randn(T, B, I)])
    layer_case(w, "lstm/two_layers_state", nn.LSTM(I, H, 2), lstm_fn,
               [w.randn(T, B, I), w.randn(2, B, H), w.randn(2, B, H)])
    layer_case(w, "lstm/batch_first", nn.LSTM(I, H, 2, batch_first=True), lstm_fn, [w.randn(B, T, I)])
    layer_case(w, "lstm/batch_first_state", nn.LSTM(I, H, 2, batch_first=True), lstm_fn,
               [w.randn(B, T, I), w.randn(2, B, H), w.randn(2, B, H)])
    layer_case(w, "lstm/unbatched_state", nn.LSTM(I, H), lstm_fn, [w.randn(T, I), w.randn(1, H), w.randn(1, H)])
    layer_case(w, "lstm/dropout_eval", nn.LSTM(I, H, 2, dropout=0.3).eval(), lstm_fn, [w.randn(T, B, I)])
