"""Reference values for src/ops/functional.cpp: layer_norm, cross_entropy,
mse_loss, cosine_similarity, normalize, fused_gru_cell (dropout draws from
qkv's own generator, so it is tested from mathematics instead).

Each case's inputs are x0, x1, … ; integer targets go in `ints`. Each case
also holds the op's other arguments, which the test passes on as they are:
    layer_norm         normalized_shape (ints), eps
    cross_entropy      reduction, ignore_index (ints), label_smoothing,
                       and weight when there is one
    mse_loss           reduction
    cosine_similarity  dim (int), eps
    normalize          p, dim (int)
reduction is 0 none, 1 mean, 2 sum (qkv's Reduction, and PyTorch's own
numbering of its reduction strings).
"""
import torch
import torch.nn.functional as F

REDUCTION = {"none": 0, "mean": 1, "sum": 2}


def ints(**kw):
    """Integer arguments as int tensors (a list becomes a 1-D tensor)."""
    return {k: torch.tensor(v, dtype=torch.int64) for k, v in kw.items()}


def floats(**kw):
    """Float arguments as 0-d tensors (written rounded to float32's 9 digits)."""
    return {k: torch.tensor(float(v)) for k, v in kw.items()}


def layer_norm(w, name, normalized_shape, inputs, eps=1e-5):
    """x0 the input, x1 weight and x2 bias when given."""
    w.case(name, lambda x, *affine: F.layer_norm(x, normalized_shape, *affine, eps=eps), inputs=inputs,
           ints=ints(normalized_shape=list(normalized_shape)), extra=floats(eps=eps))


def cross_entropy(w, name, x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """x0 the logits; target, and weight (C) when given, not differentiated."""
    extra = {} if weight is None else {"weight": weight}
    extra.update(floats(label_smoothing=label_smoothing))
    w.case(name,
           lambda x: F.cross_entropy(x, target, weight, ignore_index=ignore_index, reduction=reduction,
                                     label_smoothing=label_smoothing),
           inputs=[x], ints={"target": target, **ints(reduction=REDUCTION[reduction], ignore_index=ignore_index)},
           extra=extra)


def mse_loss(w, name, inputs, reduction="mean"):
    """x0 input, x1 target (it gets a gradient too)."""
    w.case(name, lambda x, y: F.mse_loss(x, y, reduction=reduction), inputs=inputs,
           ints=ints(reduction=REDUCTION[reduction]))


def cosine_similarity(w, name, inputs, dim=1, eps=1e-8):
    w.case(name, lambda a, b: F.cosine_similarity(a, b, dim=dim, eps=eps), inputs=inputs,
           ints=ints(dim=dim), extra=floats(eps=eps))


def normalize(w, name, inputs, p=2.0, dim=1):
    w.case(name, lambda x: F.normalize(x, p=p, dim=dim), inputs=inputs, ints=ints(dim=dim), extra=floats(p=p))


def gru_step(xw, hw, h):
    """One GRU step from its gate pre-activations xw = W_ih x + b_ih, hw = W_hh h + b_hh."""
    x_r, x_z, x_n = xw.chunk(3, 1)
    h_r, h_z, h_n = hw.chunk(3, 1)
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


def fused_gru_cell(w, name, B, H):
    """x0 xw (B, 3H), x1 hw (B, 3H), x2 h (B, H). gru_step is first checked
    against torch.nn.GRUCell, so the values are PyTorch's GRU's."""
    cell = torch.nn.GRUCell(4, H).double()
    x, h = torch.randn(B, 4, generator=w.gen).double(), torch.randn(B, H, generator=w.gen).double()
    with torch.no_grad():
        want = cell(x, h)
        got = gru_step(x @ cell.weight_ih.T + cell.bias_ih, h @ cell.weight_hh.T + cell.bias_hh, h)
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12), "gru_step is not nn.GRUCell's step"
    w.case(name, gru_step, inputs=[w.randn(B, 3 * H), w.randn(B, 3 * H), w.randn(B, H)])


def build(w):
    # --- layer_norm ------------------------------------------------------------
    layer_norm(w, "layer_norm/last_dim_affine", (5,), [w.randn(2, 3, 5), w.randn(5), w.randn(5)])
    layer_norm(w, "layer_norm/two_dims_affine", (4, 5), [w.randn(3, 4, 5), w.randn(4, 5), w.randn(4, 5)])
    layer_norm(w, "layer_norm/one_row_no_affine", (7,), [w.randn(7)])
    layer_norm(w, "layer_norm/whole_tensor_eps", (3, 1, 5), [w.randn(3, 1, 5)], eps=1e-3)
    # ±1e4 inputs: finite, and still normalised to O(1)
    layer_norm(w, "layer_norm/large_inputs", (6,), [w.randn(4, 6, scale=1e4), w.randn(6), w.randn(6)])

    # --- cross_entropy -----------------------------------------------------------
    t = w.randint(0, 7, 5)
    for red in ("mean", "sum", "none"):
        cross_entropy(w, f"cross_entropy/2d_{red}", w.randn(5, 7), t, reduction=red)
    t = w.randint(0, 4, 3, 5)
    cross_entropy(w, "cross_entropy/kdim_mean", w.randn(3, 4, 5), t)  # logits (N, C, d1) = (3, 4, 5), target (3, 5)
    t = w.randint(0, 3, 2, 4, 5)
    cross_entropy(w, "cross_entropy/kdim2_none", w.randn(2, 3, 4, 5), t,  # logits (2, 3, 4, 5), target (2, 4, 5)
                  reduction="none")
    t = torch.tensor([1, -100, 4, 0, -100, 2])  # padding at rows 1 and 4
    for red in ("mean", "sum", "none"):
        cross_entropy(w, f"cross_entropy/ignore_{red}", w.randn(6, 5), t, reduction=red)
    t = torch.tensor([[2, 0, 2], [1, 2, 3]])  # ignore_index is a real class here
    cross_entropy(w, "cross_entropy/ignore_class_kdim", w.randn(2, 4, 3), t,  # logits (2, 4, 3), target (2, 3)
                  ignore_index=2)
    t = torch.tensor(3)
    cross_entropy(w, "cross_entropy/unbatched_none", w.randn(5), t, reduction="none")  # logits (C) with target ()
    t = w.randint(0, 6, 4)
    for red in ("mean", "sum"):
        cross_entropy(w, f"cross_entropy/large_logits_{red}", w.randn(4, 6, scale=1e4), t,  # logits of ±1e4
                      reduction=red)

    # --- mse_loss ----------------------------------------------------------------
    for red in ("mean", "sum", "none"):
        mse_loss(w, f"mse_loss/{red}", [w.randn(3, 5), w.randn(3, 5)], reduction=red)
    mse_loss(w, "mse_loss/3d_mean", [w.randn(2, 3, 7), w.randn(2, 3, 7)])

    # --- cosine_similarity -----------------------------------------------------
    cosine_similarity(w, "cosine_similarity/dim1", [w.randn(4, 6), w.randn(4, 6)])
    cosine_similarity(w, "cosine_similarity/broadcast_batch",  # (2, 5, 3) with (1, 5, 3), dim 1
                      [w.randn(2, 5, 3), w.randn(1, 5, 3)], dim=1)
    cosine_similarity(w, "cosine_similarity/broadcast_both_neg_dim",  # (3, 1, 4) with (5, 4) -> (3, 5, 4), dim -1
                      [w.randn(3, 1, 4), w.randn(5, 4)], dim=-1)
    cosine_similarity(w, "cosine_similarity/broadcast_along_dim",  # x1 (4, 1) repeats along dim 1 of (4, 5)
                      [w.randn(4, 1), w.randn(4, 5)], dim=1)
    cosine_similarity(w, "cosine_similarity/eps", [w.randn(3, 2), w.randn(3, 2)], dim=0, eps=1e-3)
    # A norm below eps is clamped on its own (values only, no grad_out: PyTorch
    # lets the gradient through that clamp, qkv does not).
    a = torch.tensor([[1e-9, 2e-9, 0.0], [0.0, 0.0, 0.0], [1.0, -2.0, 0.5]]).float().double()
    b = w.randn(3, 3)
    w.values("cosine_similarity/tiny_norm",
             tensors={"x0": a, "x1": b, "out": F.cosine_similarity(a, b), **floats(eps=1e-8)},
             ints=ints(dim=1))

    # --- normalize -------------------------------------------------------------
    normalize(w, "normalize/p2_dim1", [w.randn(4, 6)])
    normalize(w, "normalize/p2_neg_dim", [w.randn(3, 5, 2)], dim=-1)
    normalize(w, "normalize/p1_dim0", [w.randn(3, 4)], p=1, dim=0)
    normalize(w, "normalize/p3", [w.randn(2, 7)], p=3, dim=1)
    normalize(w, "normalize/p_inf", [w.randn(3, 5)], p=float("inf"), dim=1)
    x = w.randn(3, 4)
    x[1] = 0  # a zero row: divided by eps, so 0 out, and dout / eps as its gradient
    normalize(w, "normalize/zero_row", [x], dim=1)

    # --- cross_entropy with weight and label_smoothing (after the cases above, so
    # their random inputs stay as they were) -----------------------------------
    # weight (C), written as "weight" (torch does not differentiate it), with
    # ignore_index and label_smoothing.
    t = torch.tensor([1, 3, 0, 3, 2, 1])
    wt = w.rand(4, low=0.2, high=2.0)
    for red in ("mean", "sum", "none"):
        cross_entropy(w, f"cross_entropy/weight_{red}", w.randn(6, 4), t, wt, reduction=red)
    t = torch.tensor([1, -100, 3, 0, -100, 2])
    for red in ("mean", "sum", "none"):
        # Mean divides by the weights of the targets that count: torch's value says so.
        cross_entropy(w, f"cross_entropy/ignore_weight_{red}", w.randn(6, 4), t, wt, ignore_index=-100, reduction=red)
    for red in ("mean", "sum", "none"):
        # label_smoothing 0.1, padding at rows 1 and 4
        cross_entropy(w, f"cross_entropy/smooth_{red}", w.randn(6, 4), t, reduction=red, label_smoothing=0.1)
        cross_entropy(w, f"cross_entropy/smooth_weight_{red}", w.randn(6, 4), t, wt, reduction=red,
                      label_smoothing=0.1)
    t = torch.tensor([[2, 0, 1, 3, 2], [3, 3, 0, 1, 2], [1, 0, 2, 2, 0]])  # ignore_index 2 is a real class here
    for red in ("mean", "sum", "none"):
        # logits (N, C, d1) = (3, 4, 5), target (3, 5)
        cross_entropy(w, f"cross_entropy/kdim_weight_{red}", w.randn(3, 4, 5), t, wt, ignore_index=2, reduction=red)
        cross_entropy(w, f"cross_entropy/kdim_smooth_weight_{red}", w.randn(3, 4, 5), t, wt, ignore_index=2,
                      reduction=red, label_smoothing=0.1)
    t = torch.tensor(1)
    # logits (C) with target (), every option
    cross_entropy(w, "cross_entropy/unbatched_smooth_weight_mean", w.randn(4), t, wt, label_smoothing=0.3)
    t = torch.tensor([0, 2, 1])
    cross_entropy(w, "cross_entropy/smooth_one_mean", w.randn(3, 5), t,  # ε = 1: only the uniform target is left
                  label_smoothing=1.0)

    # --- fused_gru_cell (after the cases above, so their inputs stay as they were)
    fused_gru_cell(w, "fused_gru_cell/small", 2, 3)
    fused_gru_cell(w, "fused_gru_cell/wide", 3, 37)  # two registers of 16 and a tail
