"""Reference values for src/ops/conv.cpp and src/nn/conv.cpp: conv1d and nn.Conv1d.

conv1d cases carry their settings as ints `stride`, `padding`, `dilation`
(0-d); x0 is the input (N, C_in, L), x1 the weight (C_out, C_in, K), x2 the
bias when the case has one. The settings cover overlapping windows
(stride < K), gaps (stride > K), padding wider than the kernel, dilation
with padding, a kernel as long as the input (L_out = 1), K = 1, and a
stride that does not divide the length (the last positions unread).

nn.Conv1d cases are module cases: torch's own layer and its parameters.
"""
import torch
from torch import nn

# (case name, N, C_in, C_out, L, K, stride, padding, dilation, bias)
CONV1D = [
    ("plain", 2, 3, 4, 7, 3, 1, 0, 1, True),
    ("stride2", 2, 3, 4, 9, 3, 2, 0, 1, True),
    ("stride_gt_kernel", 1, 2, 3, 11, 2, 3, 0, 1, True),
    ("padding", 2, 2, 3, 5, 3, 1, 1, 1, True),
    ("padding_wide", 1, 2, 2, 4, 3, 1, 3, 1, True),
    ("dilation", 2, 3, 2, 10, 3, 1, 0, 2, True),
    ("all", 2, 3, 5, 13, 4, 2, 2, 3, True),
    ("no_bias", 2, 3, 4, 8, 3, 1, 1, 1, False),
    ("kernel_is_input", 3, 2, 4, 5, 5, 1, 0, 1, True),
    ("kernel1", 2, 5, 3, 6, 1, 1, 0, 1, True),
    ("uneven_stride", 1, 2, 3, 10, 3, 4, 1, 1, True),
    ("wide", 2, 16, 8, 33, 5, 1, 2, 1, True),
]

# (case name, in, out, kernel_size, stride, padding, dilation, bias, N, L)
MODULE = [
    ("default", 3, 4, 3, 1, 0, 1, True, 2, 8),
    ("strided_padded_dilated", 4, 6, 3, 2, 2, 2, True, 2, 11),
    ("no_bias", 2, 3, 5, 1, 2, 1, False, 3, 6),
]


def build(w):
    for tag, N, C, O, L, K, s, p, d, has_bias in CONV1D:
        ints = {"stride": torch.tensor(s), "padding": torch.tensor(p), "dilation": torch.tensor(d)}
        inputs = [w.randn(N, C, L), w.randn(O, C, K)] + ([w.randn(O)] if has_bias else [])
        w.case(f"conv1d/{tag}",
               lambda x, wt, b=None, s=s, p=p, d=d: torch.nn.functional.conv1d(x, wt, b, stride=s, padding=p,
                                                                               dilation=d),
               inputs=inputs, ints=ints)

    for tag, cin, cout, k, s, p, d, has_bias, N, L in MODULE:
        torch.manual_seed(len(tag))
        layer = nn.Conv1d(cin, cout, k, stride=s, padding=p, dilation=d, bias=has_bias)
        w.module_case(f"Conv1d/{tag}", layer, lambda m, x: m(x), [w.randn(N, cin, L)],
                      ints={"in_channels": torch.tensor(cin), "out_channels": torch.tensor(cout),
                            "kernel_size": torch.tensor(k), "stride": torch.tensor(s),
                            "padding": torch.tensor(p), "dilation": torch.tensor(d),
                            "bias": torch.tensor(int(has_bias))})
