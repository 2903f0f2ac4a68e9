"""Reference values for the elementwise ops (tests/ops/test_elementwise.cpp).

Every binary op gets a same-shape case and broadcasting cases of odd sizes,
including the row patterns qkv's broadcast walker special-cases: (M, N) + (N),
(B, T, S) * (B, T, 1), (M, 1) + (1, N), a 0-d operand, and a mixed pattern
that needs several outer dims. Inputs of log, sqrt, div's divisor and pow's
base are kept positive and away from 0; relu and abs see values away from 0.
"""
import torch
import torch.nn.functional as F


def away_from_zero(x, margin=0.1):
    """Values with |x| >= margin (kinks of relu and abs stay out of reach)."""
    return torch.where(x.abs() < margin, torch.full_like(x, 0.5), x)


def build(w):
    # --- add, sub, mul, div: tensor with tensor ---------------------------
    shapes = {
        "same": ((3, 5), (3, 5)),
        "row": ((3, 7), (7,)),                 # (M, N) + (N)
        "column": ((2, 3, 5), (2, 3, 1)),      # (B, T, S) * (B, T, 1)
        "outer": ((5, 1), (1, 3)),             # (M, 1) + (1, N)
        "left": ((5,), (3, 5)),                # the smaller operand first
        "scalar": ((3, 5), ()),                # a 0-d tensor
        "mixed": ((2, 1, 3, 1, 5), (4, 1, 3, 1)),  # -> (2, 4, 3, 3, 5)
    }
    ops = {
        "add": lambda a, b: a + b,
        "sub": lambda a, b: a - b,
        "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b,
    }
    for op, fn in ops.items():
        for case, (sa, sb) in shapes.items():
            a = w.randn(*sa)
            b = w.rand(*sb, low=0.5, high=2.0) if op == "div" else w.randn(*sb)
            w.case(f"{op}/{case}", fn, inputs=[a, b])

    # --- with a float scalar ----------------------------------------------
    w.case("add/float", lambda x: x + 1.5, inputs=[w.randn(3, 5)])
    w.case("sub/float", lambda x: x - 1.5, inputs=[w.randn(3, 5)])
    w.case("sub/float_first", lambda x: 2.5 - x, inputs=[w.randn(3, 5)])
    w.case("mul/float", lambda x: x * -0.75, inputs=[w.randn(3, 5)])
    w.case("div/float", lambda x: x / 3.0, inputs=[w.randn(3, 5)])
    w.case("div/float_first", lambda x: 2.0 / x, inputs=[w.rand(3, 5, low=0.5, high=2.0)])

    # --- pow ----------------------------------------------------------------
    w.case("pow/square", lambda x: x.pow(2), inputs=[w.randn(3, 5)])
    w.case("pow/cube", lambda x: x.pow(3), inputs=[w.randn(3, 5)])
    w.case("pow/half", lambda x: x.pow(0.5), inputs=[w.rand(3, 5, low=0.5, high=2.0)])
    w.case("pow/negative", lambda x: x.pow(-1.5), inputs=[w.rand(3, 5, low=0.5, high=2.0)])
    w.case("pow/zero", lambda x: x.pow(0), inputs=[w.randn(3, 5)])
    w.case("pow/tensor", lambda a, b: a.pow(b), inputs=[w.rand(3, 5, low=0.5, high=2.0), w.randn(3, 5)])
    w.case("pow/tensor_row", lambda a, b: a.pow(b), inputs=[w.rand(3, 7, low=0.5, high=2.0), w.randn(7)])
    w.case("pow/tensor_column", lambda a, b: a.pow(b), inputs=[w.rand(2, 3, 1, low=0.5, high=2.0), w.randn(2, 3, 5)])

    # --- unary maps ---------------------------------------------------------
    w.case("neg/basic", lambda x: -x, inputs=[w.randn(3, 5)])
    w.case("exp/basic", torch.exp, inputs=[w.randn(3, 5)])
    w.case("log/basic", torch.log, inputs=[w.rand(3, 5, low=0.1, high=3.0)])
    w.case("sqrt/basic", torch.sqrt, inputs=[w.rand(3, 5, low=0.1, high=3.0)])
    w.case("abs/basic", torch.abs, inputs=[away_from_zero(w.randn(3, 5))])
    w.case("tanh/basic", torch.tanh, inputs=[w.randn(3, 5, scale=2.0)])
    w.case("sigmoid/basic", torch.sigmoid, inputs=[w.randn(3, 5, scale=3.0)])
    w.case("relu/basic", torch.relu, inputs=[away_from_zero(w.randn(3, 5))])
    w.case("gelu/basic", F.gelu, inputs=[w.randn(3, 5, scale=2.0)])
    # Odd length past a SIMD width, so the kernels' vector body and tail both run.
    for op, fn in [("exp", torch.exp), ("tanh", torch.tanh), ("sigmoid", torch.sigmoid), ("gelu", F.gelu)]:
        w.case(f"{op}/long", fn, inputs=[w.randn(37, scale=2.0)])
    w.case("log/long", torch.log, inputs=[w.rand(37, low=0.1, high=3.0)])

    # --- masked_fill: an integer mask that broadcasts to x's shape ----------
    masks = {
        "same": ((3, 5), (3, 5)),
        "row": ((2, 3, 5), (5,)),
        "column": ((2, 3, 5), (3, 1)),
    }
    for case, (sx, sm) in masks.items():
        mask = w.randint(0, 2, *sm)
        w.case(f"masked_fill/{case}", lambda x, m=mask: x.masked_fill(m.bool(), -1e9),
               inputs=[w.randn(*sx)], ints={"mask": mask})
