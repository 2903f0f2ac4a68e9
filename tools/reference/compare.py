"""Reference values for src/ops/compare.cpp: lt le gt ge eq ne, where, sequence_mask.

Comparison cases (no gradient) hold the operands x0 and x1 (float) or a0 and
a1 (int) and the 0/1 mask `out` as ints; a scalar operand is a 0-d tensor.
Their inputs are small whole numbers, so that equal elements (where lt and le,
gt and ge, eq and ne part ways) come up often.

NaN: the data files have no spelling for NaN, so a case with NaN inputs
holds them as 0 and says where they go in an int mask x0_nan (x1_nan); the
test puts NaN back with masked_fill before comparing.

where cases are ordinary differentiable cases (inputs x0 = a, x1 = b, the int
`mask`); sequence_mask cases use d2l's function (reference/d2l.py).
"""
import torch

from reference.d2l import sequence_mask

OPS = ["lt", "le", "gt", "ge", "eq", "ne"]


def whole(w, *shape):
    """Whole numbers in [-2, 2] as floats, so that ties are common."""
    return w.randint(-2, 3, *shape).double()


def with_nans(x, nan):
    """x with NaN where nan is 1 (the file holds x and the int mask nan)."""
    return x.masked_fill(nan.bool(), float("nan"))


def build(w):
    for op in OPS:
        f = getattr(torch, op)
        # Same shape, then broadcasting both ways: (2, 1, 4) with (3, 1) -> (2, 3, 4).
        for tag, sa, sb in [("same", (3, 4), (3, 4)), ("broadcast", (2, 1, 4), (3, 1)), ("row", (4,), (3, 4))]:
            a, b = whole(w, *sa), whole(w, *sb)
            w.values(f"{op}/{tag}", tensors={"x0": a, "x1": b}, ints={"out": f(a, b).long()})
            ia, ib = w.randint(-2, 3, *sa), w.randint(-2, 3, *sb)
            w.values(f"{op}/int_{tag}", ints={"a0": ia, "a1": ib, "out": f(ia, ib).long()})
        # A scalar operand (a 0-d x1 / a1).
        a = whole(w, 3, 4)
        w.values(f"{op}/scalar", tensors={"x0": a, "x1": torch.tensor(0.5)}, ints={"out": f(a, 0.5).long()})
        a = whole(w, 3, 4)
        w.values(f"{op}/scalar_tie", tensors={"x0": a, "x1": torch.tensor(1.0)}, ints={"out": f(a, 1.0).long()})
        ia = w.randint(-2, 3, 3, 4)
        w.values(f"{op}/int_scalar", ints={"a0": ia, "a1": torch.tensor(1), "out": f(ia, 1).long()})
        # NaN on either side, in both, and against a scalar.
        a = torch.tensor([[1.0, 0.0, 0.0, 2.0], [0.0, -1.0, 1.0, 2.0]])
        b = torch.tensor([[1.0, 0.0, 3.0, 2.0], [0.0, 0.0, -5.0, 3.0]])
        a_nan = torch.tensor([[0, 1, 0, 0], [1, 0, 1, 0]])
        b_nan = torch.tensor([[1, 0, 1, 0], [1, 0, 0, 0]])
        an, bn = with_nans(a, a_nan), with_nans(b, b_nan)
        w.values(f"{op}/nan", tensors={"x0": a, "x1": b}, ints={"x0_nan": a_nan, "x1_nan": b_nan,
                                                                 "out": f(an, bn).long()})
        w.values(f"{op}/nan_scalar", tensors={"x0": a, "x1": torch.tensor(0.0)},
                 ints={"x0_nan": a_nan, "out": f(an, 0.0).long()})

    # where(mask, a, b), with gradients to a and b.
    for tag, sm, sa, sb in [("same", (3, 4), (3, 4), (3, 4)),
                            ("broadcast", (2, 1, 4), (3, 1), (4,)),         # -> (2, 3, 4)
                            ("broadcast_mask", (3, 1), (2, 3, 4), (1,)),   # the mask broadcasts too
                            ("scalar_b", (2, 3), (2, 3), ()),
                            ("scalar_a", (2, 3), (), (2, 3))]:
        mask = w.randint(0, 2, *sm)
        # A mask of ints other than 0/1: every non-zero value selects a.
        if tag == "same":
            mask = mask * w.randint(1, 4, *sm) * (1 - 2 * w.randint(0, 2, *sm))
        w.case(f"where/{tag}", lambda a, b, mask=mask: torch.where(mask != 0, a, b),
               inputs=[w.randn(*sa), w.randn(*sb)], ints={"mask": mask})

    # d2l's sequence_mask on X of 2, 3 and 4 dims; lengths 0, inside, S and above S.
    for tag, shape, lens, value in [("2d", (3, 4), [0, 2, 4], 0.0),
                                    ("3d_value", (4, 3, 2), [1, 3, 5, 0], -1.0),
                                    ("4d", (2, 5, 2, 3), [4, 2], -1e6)]:
        valid_len = torch.tensor(lens)
        w.case(f"sequence_mask/{tag}", lambda x, v=valid_len, value=value: sequence_mask(x, v, value),
               inputs=[w.randn(*shape)], ints={"valid_len": valid_len}, extra={"value": torch.tensor(value)})
