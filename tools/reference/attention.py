"""Reference values for src/ops/attention.cpp: scaled_dot_product_attention.

PyTorch 1.13 has no public scaled_dot_product_attention (2.0 added it), so the
cases compute its definition with d2l's masked_softmax (copied in d2l.py):
    scores  = q kᵀ / √d                       (N, Q, K)
    weights = masked_softmax(scores, lens)    keys past a row's length get -1e6
    out     = weights v                       (N, Q, dv)
valid_lens are 1-D (N) or 2-D (N, Q); is_causal masks key k > query q, which
is the 2-D length min(len, q + 1) of every row. Sizes are not multiples of
the fused kernel's 64 × 64 tiles, and the lengths include 0 (uniform weights,
as d2l's -1e6 gives), 1 and more than K.
"""
import math

import torch

from reference.d2l import masked_softmax


def attention(q, k, v, lens, causal):
    N, Q, K = q.shape[0], q.shape[1], k.shape[1]
    if causal:
        rows = torch.arange(1, Q + 1).expand(N, Q)  # row q sees keys ≤ q
        if lens is None:
            lens = rows
        else:
            lens = torch.minimum(lens if lens.dim() == 2 else lens[:, None].expand(N, Q), rows)
    scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
    return torch.bmm(masked_softmax(scores, lens), v)


# (case name, N, Q, K, d, dv, valid_lens or None, is_causal)
CASES = [
    ("small", 2, 3, 4, 5, 3, None, False),
    ("tiles", 2, 70, 67, 5, 3, None, False),
    ("lens_1d", 3, 66, 70, 4, 6, torch.tensor([0, 65, 80]), False),
    ("lens_2d", 2, 5, 70, 3, 4, torch.tensor([[1, 3, 0, 66, 70], [2, 0, 69, 75, 64]]), False),
    ("causal", 2, 67, 67, 4, 3, None, True),
    ("causal_lens", 2, 6, 6, 3, 2, torch.tensor([[1, 3, 0, 6, 2, 4], [6, 5, 4, 3, 2, 1]]), True),
]


def build(w):
    for tag, N, Q, K, d, dv, lens, causal in CASES:
        ints = {"is_causal": torch.tensor(int(causal))}
        if lens is not None:
            ints["valid_lens"] = lens
        w.case(f"scaled_dot_product_attention/{tag}", lambda q, k, v: attention(q, k, v, lens, causal),
               inputs=[w.randn(N, Q, d), w.randn(N, K, d), w.randn(N, K, dv)], ints=ints)
