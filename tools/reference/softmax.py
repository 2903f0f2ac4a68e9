"""Reference values for src/ops/softmax.cpp: softmax, log_softmax, masked_softmax.

softmax/log_softmax cases carry their dim as an int `dim` (0-d). Shapes mix
odd sizes, size-1 dims, rows long enough for the SIMD path with a tail (37),
inner > 1 (a dim that is not the last), large logits, and logits of ±1e4.

masked_softmax is d2l's function (d2l.ai, "Attention Scoring Functions"),
copied below; its cases carry `valid_lens`.
"""
import torch

from reference.d2l import masked_softmax

# (case name, shape, dim, scale of the logits)
ALONG = [
    ("rows", (3, 5), -1, 1.0),
    ("cols", (3, 5), 0, 1.0),
    ("middle", (2, 3, 5), 1, 1.0),
    ("first_neg", (2, 3, 5), -3, 1.0),
    ("vector", (7,), 0, 1.0),
    ("single", (4, 1), 1, 1.0),
    ("size1_dim", (3, 1, 5), -1, 1.0),
    ("simd_tail", (4, 37), -1, 3.0),
    ("simd_inner", (3, 19, 11), 1, 3.0),
    ("large", (2, 9), -1, 30.0),
]


def build(w):
    for tag, shape, dim, scale in ALONG:
        ints = {"dim": torch.tensor(dim)}
        w.case(f"softmax/{tag}", lambda x: torch.softmax(x, dim), inputs=[w.randn(*shape, scale=scale)], ints=ints)
        w.case(f"log_softmax/{tag}", lambda x: torch.log_softmax(x, dim), inputs=[w.randn(*shape, scale=scale)],
               ints=ints)

    # Logits of ±1e4: exp overflows unless the max is subtracted first.
    huge = torch.tensor([[1e4, -1e4, 0.0], [-1e4, -1e4, 1e4], [5e3, 5e3, -1e4]])
    for op in ["softmax", "log_softmax"]:
        w.case(f"{op}/huge", lambda x, op=op: getattr(torch, op)(x, -1), inputs=[huge], ints={"dim": torch.tensor(-1)})

    # masked_softmax: valid_lens (B) and (B, Q); lengths 0 (uniform 1/K, as
    # d2l's -1e6 gives), 1, K, and above K (every key kept).
    lens_1d = torch.tensor([2, 3])
    w.case("masked_softmax/d2l", lambda x: masked_softmax(x, lens_1d), inputs=[w.rand(2, 2, 4)],
           ints={"valid_lens": lens_1d})
    lens_1d = torch.tensor([1, 5, 7])
    w.case("masked_softmax/lens_1d", lambda x: masked_softmax(x, lens_1d), inputs=[w.randn(3, 4, 5)],
           ints={"valid_lens": lens_1d})
    lens_2d = torch.tensor([[1, 3, 5], [2, 0, 4]])
    w.case("masked_softmax/lens_2d", lambda x: masked_softmax(x, lens_2d), inputs=[w.randn(2, 3, 5)],
           ints={"valid_lens": lens_2d})
    lens_2d = torch.tensor([[3, 37, 20, 1]])
    w.case("masked_softmax/simd_tail", lambda x: masked_softmax(x, lens_2d), inputs=[w.randn(1, 4, 37)],
           ints={"valid_lens": lens_2d})
    w.case("masked_softmax/none", lambda x: masked_softmax(x, None), inputs=[w.randn(2, 3, 5)])
