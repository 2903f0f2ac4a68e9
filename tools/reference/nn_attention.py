"""Reference values for the attention layers (tests/nn/test_attention.cpp).

The layers are d2l's own classes from d2l.py (d2l.ai, "Attention Mechanisms
and Transformers", PyTorch edition, the edition with explicit sizes), with
d2l's attribute names, so the parameter names written here (p.W_q.weight, …)
load into qkv's layers. Dropout is 0 (the C++ side runs in eval mode). The
test builds each layer from its case: sizes from the shapes of its p.*
parameters, and a multi-head case's num_heads, written into it as an int.
"""
import torch

from reference import d2l
from reference.d2l import AdditiveAttention, DotProductAttention, transpose_output, transpose_qkv


def MultiHeadAttention(num_hiddens, num_heads, dropout, bias=False):
    """d2l's multi-head attention as d2l 11.5 builds it, every projection
    num_hiddens -> num_hiddens (its LazyLinear layers meet inputs of that
    size): d2l.py's class with key, query and value sizes all num_hiddens."""
    return d2l.MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, dropout, bias)


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
