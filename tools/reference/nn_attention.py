"""Reference values for the attention layers (tests/nn/test_attention.cpp).

The classes below are d2l's (d2l.ai, "Attention Mechanisms and Transformers",
PyTorch edition) with d2l's attribute names, so the parameter names written
here (p.W_q.weight, …) load into qkv's layers. The one change: d2l's
nn.LazyLinear becomes nn.Linear with its input size given, as qkv has no lazy
layers. Dropout is 0 (the C++ side runs in eval mode). The test builds each
layer from its case: sizes from the shapes of its p.* parameters, and a
multi-head case's num_heads, written into it as an int.
"""
import math

import torch
from torch import nn

from reference import d2l
from reference.d2l import masked_softmax


class AdditiveAttention(nn.Module):
    """d2l's additive attention (d2l 11.3.3)."""

    def __init__(self, key_size, query_size, num_hiddens, dropout):
        super().__init__()
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    """d2l's scaled dot-product attention (d2l 11.3.2)."""

    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


def transpose_qkv(X, num_heads):
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    X = X.permute(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])


def transpose_output(X, num_heads):
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


class MultiHeadAttention(nn.Module):
    """d2l's multi-head attention (d2l 11.5)."""

    def __init__(self, num_hiddens, num_heads, dropout, bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        queries = transpose_qkv(self.W_q(queries), self.num_heads)
        keys = transpose_qkv(self.W_k(keys), self.num_heads)
        values = transpose_qkv(self.W_v(values), self.num_heads)
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        output = self.attention(queries, keys, values, valid_lens)
        return self.W_o(transpose_output(output, self.num_heads))


def with_weights(m, out, weights):
    """The output and the (detached) attention weights: qkv keeps its weights
    detached too, so no gradient flows through out1."""
    return out, weights.detach()


def build(w):
    torch.manual_seed(0)

    # --- additive attention ------------------------------------------------
    for name, lens in [("1d_lens", torch.tensor([2, 6])), ("2d_lens", torch.tensor([[1, 3, 10], [4, 2, 7]])),
                       ("no_lens", None)]:
        m = AdditiveAttention(key_size=3, query_size=5, num_hiddens=8, dropout=0.0)
        q, k, v = w.randn(2, 3, 5), w.randn(2, 10, 3), w.randn(2, 10, 4)
        w.module_case(f"additive/{name}", m,
                      lambda m, q, k, v, lens=lens: with_weights(m, m(q, k, v, lens), m.attention_weights),
                      [q, k, v], ints={} if lens is None else {"valid_lens": lens})

    # --- scaled dot-product attention --------------------------------------
    for name, lens in [("1d_lens", torch.tensor([2, 5])), ("2d_lens", torch.tensor([[1, 6, 3], [2, 2, 5]])),
                       ("no_lens", None)]:
        m = DotProductAttention(dropout=0.0)
        q, k, v = w.randn(2, 3, 4), w.randn(2, 6, 4), w.randn(2, 6, 3)
        w.module_case(f"dot/{name}", m,
                      lambda m, q, k, v, lens=lens: with_weights(m, m(q, k, v, lens), m.attention_weights),
                      [q, k, v], ints={} if lens is None else {"valid_lens": lens})

    # --- multi-head attention ----------------------------------------------
    w.case("transpose_qkv", lambda x: transpose_qkv(x, 3), [w.randn(2, 4, 6)])
    w.case("transpose_output", lambda x: transpose_output(x, 3), [w.randn(6, 4, 2)])

    def per_head(m, out):
        B_h, Q, K = m.attention.attention_weights.shape
        return out, m.attention.attention_weights.detach().reshape(B_h // m.num_heads, m.num_heads, Q, K)

    for name, lens, bias in [("1d_lens", torch.tensor([3, 5]), False),
                             ("2d_lens", torch.tensor([[1, 2, 6, 4], [6, 3, 2, 1]]), False),
                             ("bias_no_lens", None, True)]:
        m = MultiHeadAttention(num_hiddens=12, num_heads=3, dropout=0.0, bias=bias)
        q, k, v = w.randn(2, 4, 12), w.randn(2, 6, 12), w.randn(2, 6, 12)
        w.module_case(f"mha/{name}", m, lambda m, q, k, v, lens=lens: per_head(m, m(q, k, v, lens)),
                      [q, k, v], ints={**({} if lens is None else {"valid_lens": lens}),
                                       "num_heads": torch.tensor(m.num_heads)})

    # d2l's MultiHeadAttention with its own sizes (the edition with explicit
    # sizes): W_q 7 -> 12, W_k 5 -> 12, W_v 3 -> 12, W_o 12 -> 12.
    m = d2l.MultiHeadAttention(key_size=5, query_size=7, value_size=3, num_hiddens=12, num_heads=3, dropout=0.0,
                               bias=True)
    q, k, v = w.randn(2, 4, 7), w.randn(2, 6, 5), w.randn(2, 6, 3)
    lens = torch.tensor([[1, 2, 6, 4], [6, 3, 2, 5]])
    w.module_case("mha/sizes", m, lambda m, q, k, v, lens=lens: per_head(m, m(q, k, v, lens)), [q, k, v],
                  ints={"valid_lens": lens, "num_heads": torch.tensor(m.num_heads)})
