"""Reference values for src/ops/reduction.cpp: sum, mean, max, min, argmax, argmin.

Cases along a dim carry it as ints `dim` and `keepdim` (0-d), so the C++
test reads them instead of repeating them. Shapes mix odd sizes, sizes 1,
rows long enough for the SIMD paths with a tail (37), and inner > 1 (a dim
that is not the last one). Ties are broken by the first index in PyTorch;
random normals have none, except the explicit `ties` case.
"""
import torch

# (case name, shape, dim, keepdim)
ALONG = [
    ("row", (3, 5), 1, False),
    ("col", (3, 5), 0, False),
    ("last_keepdim", (2, 3, 5), -1, True),
    ("middle", (2, 3, 5), 1, False),
    ("first_neg", (2, 3, 5), -3, True),
    ("vector", (7,), 0, False),
    ("size1", (3, 1, 5), 1, True),
    ("simd_tail", (4, 37), -1, False),
    ("simd_inner", (3, 19, 11), 1, False),
]


def ints(dim, keepdim):
    return {"dim": torch.tensor(dim), "keepdim": torch.tensor(int(keepdim))}


def case(w, name, fn, x, ints=None):
    w.case(name, fn, inputs=[x], ints=ints)


def build(w):
    # --- over every element ------------------------------------------------
    for shape, tag in [((3, 5), "matrix"), ((1,), "one"), ((2, 3, 7), "3d"), ((1000,), "long")]:
        case(w, f"sum_all/{tag}", lambda x: x.sum(), w.randn(*shape))
        case(w, f"mean_all/{tag}", lambda x: x.mean(), w.randn(*shape))
        case(w, f"max_all/{tag}", lambda x: x.max(), w.randn(*shape))
        case(w, f"min_all/{tag}", lambda x: x.min(), w.randn(*shape))
        x = w.randn(*shape)
        w.values(f"argmax_all/{tag}", tensors={"x0": x}, ints={"out": x.argmax()})

    # max()/min() without a dim split the gradient evenly among tied positions.
    tied = torch.tensor([[1.0, 3.0, 3.0, -2.0], [-2.0, 0.5, -2.0, 0.5]])
    case(w, "max_all/ties", lambda x: x.max(), tied)
    case(w, "min_all/ties", lambda x: x.min(), tied)

    # --- along one dim -----------------------------------------------------
    for tag, shape, dim, keepdim in ALONG:
        for op in ["sum", "mean", "max", "min"]:
            # max(dim)/min(dim) return (values, indices): qkv's max/min are the values
            if op in ("max", "min"):
                fn = lambda x, op=op: getattr(x, op)(dim, keepdim).values  # noqa: E731
            else:
                fn = lambda x, op=op: getattr(x, op)(dim, keepdim)  # noqa: E731
            case(w, f"{op}/{tag}", fn, w.randn(*shape), ints=ints(dim, keepdim))
        for op in ["argmax", "argmin"]:
            x = w.randn(*shape)
            out = getattr(x, op)(dim, keepdim)
            w.values(f"{op}/{tag}", tensors={"x0": x}, ints={"out": out, **ints(dim, keepdim)})

    # max(dim)/min(dim) on ties: the values agree, the gradient goes to the first index.
    case(w, "max/ties", lambda x: x.max(1).values, tied, ints=ints(1, False))
    case(w, "min/ties", lambda x: x.min(1).values, tied, ints=ints(1, False))
    w.values("argmax/ties", tensors={"x0": tied}, ints={"out": tied.argmax(1), **ints(1, False)})
    w.values("argmin/ties", tensors={"x0": tied}, ints={"out": tied.argmin(1), **ints(1, False)})
