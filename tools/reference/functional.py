"""Reference values for src/ops/functional.cpp: layer_norm, cross_entropy,
mse_loss, cosine_similarity, normalize (dropout draws from qkv's own
generator, so it is tested from mathematics instead).

Each case's inputs are x0, x1, … ; integer targets go in `ints`.
"""
import torch
import torch.nn.functional as F



def build(w):
    # --- layer_norm: x0 the input, x1 weight, x2 bias ------------------------
    w.case("layer_norm/last_dim_affine",
           lambda x, g, b: F.layer_norm(x, (5,), g, b),
           inputs=[w.randn(2, 3, 5), w.randn(5), w.randn(5)])
    w.case("layer_norm/two_dims_affine",
           lambda x, g, b: F.layer_norm(x, (4, 5), g, b),
           inputs=[w.randn(3, 4, 5), w.randn(4, 5), w.randn(4, 5)])
    w.case("layer_norm/one_row_no_affine",
           lambda x: F.layer_norm(x, (7,)),
           inputs=[w.randn(7)])
    w.case("layer_norm/whole_tensor_eps",
           lambda x: F.layer_norm(x, (3, 1, 5), eps=1e-3),
           inputs=[w.randn(3, 1, 5)])
    # ±1e4 inputs: finite, and still normalised to O(1)
    w.case("layer_norm/large_inputs",
           lambda x, g, b: F.layer_norm(x, (6,), g, b),
           inputs=[w.randn(4, 6, scale=1e4), w.randn(6), w.randn(6)])

    # --- cross_entropy: x0 the logits, ints "target" -------------------------
    t = w.randint(0, 7, 5)
    for red in ("mean", "sum", "none"):
        w.case(f"cross_entropy/2d_{red}",
               lambda x, red=red, t=t: F.cross_entropy(x, t, reduction=red),
               inputs=[w.randn(5, 7)], ints={"target": t})
    t = w.randint(0, 4, 3, 5)
    w.case("cross_entropy/kdim_mean",  # logits (N, C, d1) = (3, 4, 5), target (3, 5)
           lambda x: F.cross_entropy(x, t),
           inputs=[w.randn(3, 4, 5)], ints={"target": t})
    t = w.randint(0, 3, 2, 4, 5)
    w.case("cross_entropy/kdim2_none",  # logits (2, 3, 4, 5), target (2, 4, 5)
           lambda x: F.cross_entropy(x, t, reduction="none"),
           inputs=[w.randn(2, 3, 4, 5)], ints={"target": t})
    t = torch.tensor([1, -100, 4, 0, -100, 2])  # padding at rows 1 and 4
    for red in ("mean", "sum", "none"):
        w.case(f"cross_entropy/ignore_{red}",
               lambda x, red=red: F.cross_entropy(x, t, reduction=red),
               inputs=[w.randn(6, 5)], ints={"target": t})
    t = torch.tensor([[2, 0, 2], [1, 2, 3]])  # ignore_index is a real class here
    w.case("cross_entropy/ignore_class_kdim",  # logits (2, 4, 3), target (2, 3)
           lambda x: F.cross_entropy(x, t, ignore_index=2),
           inputs=[w.randn(2, 4, 3)], ints={"target": t})
    t = torch.tensor(3)
    w.case("cross_entropy/unbatched_none",  # logits (C) with target ()
           lambda x: F.cross_entropy(x, t, reduction="none"),
           inputs=[w.randn(5)], ints={"target": t})
    t = w.randint(0, 6, 4)
    for red in ("mean", "sum"):
        w.case(f"cross_entropy/large_logits_{red}",  # logits of ±1e4
               lambda x, red=red: F.cross_entropy(x, t, reduction=red),
               inputs=[w.randn(4, 6, scale=1e4)], ints={"target": t})

    # --- mse_loss: x0 input, x1 target (it gets a gradient too) --------------
    for red in ("mean", "sum", "none"):
        w.case(f"mse_loss/{red}",
               lambda x, y, red=red: F.mse_loss(x, y, reduction=red),
               inputs=[w.randn(3, 5), w.randn(3, 5)])
    w.case("mse_loss/3d_mean",
           lambda x, y: F.mse_loss(x, y),
           inputs=[w.randn(2, 3, 7), w.randn(2, 3, 7)])

    # --- cosine_similarity -----------------------------------------------------
    w.case("cosine_similarity/dim1",
           lambda a, b: F.cosine_similarity(a, b),
           inputs=[w.randn(4, 6), w.randn(4, 6)])
    w.case("cosine_similarity/broadcast_batch",  # (2, 5, 3) with (1, 5, 3), dim 1
           lambda a, b: F.cosine_similarity(a, b, dim=1),
           inputs=[w.randn(2, 5, 3), w.randn(1, 5, 3)])
    w.case("cosine_similarity/broadcast_both_neg_dim",  # (3, 1, 4) with (5, 4) -> (3, 5, 4), dim -1
           lambda a, b: F.cosine_similarity(a, b, dim=-1),
           inputs=[w.randn(3, 1, 4), w.randn(5, 4)])
    w.case("cosine_similarity/broadcast_along_dim",  # x1 (4, 1) repeats along dim 1 of (4, 5)
           lambda a, b: F.cosine_similarity(a, b, dim=1),
           inputs=[w.randn(4, 1), w.randn(4, 5)])
    w.case("cosine_similarity/eps",
           lambda a, b: F.cosine_similarity(a, b, dim=0, eps=1e-3),
           inputs=[w.randn(3, 2), w.randn(3, 2)])
    # A norm below eps is clamped on its own (values only: PyTorch lets the
    # gradient through that clamp, qkv does not).
    a = torch.tensor([[1e-9, 2e-9, 0.0], [0.0, 0.0, 0.0], [1.0, -2.0, 0.5]]).float().double()
    b = w.randn(3, 3)
    w.values("cosine_similarity/tiny_norm",
             tensors={"x0": a, "x1": b, "out": F.cosine_similarity(a, b)})

    # --- normalize -------------------------------------------------------------
    w.case("normalize/p2_dim1",
           lambda x: F.normalize(x),
           inputs=[w.randn(4, 6)])
    w.case("normalize/p2_neg_dim",
           lambda x: F.normalize(x, dim=-1),
           inputs=[w.randn(3, 5, 2)])
    w.case("normalize/p1_dim0",
           lambda x: F.normalize(x, p=1, dim=0),
           inputs=[w.randn(3, 4)])
    w.case("normalize/p3",
           lambda x: F.normalize(x, p=3, dim=1),
           inputs=[w.randn(2, 7)])
    w.case("normalize/p_inf",
           lambda x: F.normalize(x, p=float("inf"), dim=1),
           inputs=[w.randn(3, 5)])
    x = w.randn(3, 4)
    x[1] = 0  # a zero row: divided by eps, so 0 out, and dout / eps as its gradient
    w.case("normalize/zero_row",
           lambda x: F.normalize(x, dim=1),
           inputs=[x])

    # --- cross_entropy with weight and label_smoothing (after the cases above, so
    # their random inputs stay as they were) -----------------------------------
    # weight (C), written as "weight" (torch does not differentiate it), with
    # ignore_index and label_smoothing, in PyTorch's positional order.
    t = torch.tensor([1, 3, 0, 3, 2, 1])
    wt = w.rand(4, low=0.2, high=2.0)
    for red in ("mean", "sum", "none"):
        w.case(f"cross_entropy/weight_{red}",
               lambda x, red=red, t=t, wt=wt: F.cross_entropy(x, t, wt, reduction=red),
               inputs=[w.randn(6, 4)], ints={"target": t}, extra={"weight": wt})
    t = torch.tensor([1, -100, 3, 0, -100, 2])
    for red in ("mean", "sum", "none"):
        w.case(f"cross_entropy/ignore_weight_{red}",
               lambda x, red=red, t=t, wt=wt: F.cross_entropy(x, t, wt, ignore_index=-100, reduction=red),
               inputs=[w.randn(6, 4)], ints={"target": t}, extra={"weight": wt})
    for red in ("mean", "sum", "none"):
        w.case(f"cross_entropy/smooth_{red}",  # label_smoothing 0.1, padding at rows 1 and 4
               lambda x, red=red, t=t: F.cross_entropy(x, t, reduction=red, label_smoothing=0.1),
               inputs=[w.randn(6, 4)], ints={"target": t})
        w.case(f"cross_entropy/smooth_weight_{red}",
               lambda x, red=red, t=t, wt=wt: F.cross_entropy(x, t, wt, reduction=red, label_smoothing=0.1),
               inputs=[w.randn(6, 4)], ints={"target": t}, extra={"weight": wt})
    t = torch.tensor([[2, 0, 1, 3, 2], [3, 3, 0, 1, 2], [1, 0, 2, 2, 0]])  # ignore_index 2 is a real class here
    for red in ("mean", "sum", "none"):
        w.case(f"cross_entropy/kdim_weight_{red}",  # logits (N, C, d1) = (3, 4, 5), target (3, 5)
               lambda x, red=red, t=t, wt=wt: F.cross_entropy(x, t, wt, ignore_index=2, reduction=red),
               inputs=[w.randn(3, 4, 5)], ints={"target": t}, extra={"weight": wt})
        w.case(f"cross_entropy/kdim_smooth_weight_{red}",
               lambda x, red=red, t=t, wt=wt: F.cross_entropy(x, t, wt, ignore_index=2, reduction=red,
                                                               label_smoothing=0.1),
               inputs=[w.randn(3, 4, 5)], ints={"target": t}, extra={"weight": wt})
    t = torch.tensor(1)
    w.case("cross_entropy/unbatched_smooth_weight_mean",  # logits (C) with target (), all options
           lambda x, t=t, wt=wt: F.cross_entropy(x, t, wt, label_smoothing=0.3),
           inputs=[w.randn(4)], ints={"target": t}, extra={"weight": wt})
    t = torch.tensor([0, 2, 1])
    w.case("cross_entropy/smooth_one_mean",  # ε = 1: only the uniform target is left
           lambda x, t=t: F.cross_entropy(x, t, label_smoothing=1.0),
           inputs=[w.randn(3, 5)], ints={"target": t})
