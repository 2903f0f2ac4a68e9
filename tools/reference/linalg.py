"""Reference values for matmul and bmm (tests/ops/test_linalg.cpp).

matmul's and linear's cases walk PyTorch's rules one by one: 1-D·1-D (a dot product of
shape ()), a 1-D operand on either side (with and without batch dims on the
other), 2-D·2-D, an N-D left side with a 2-D right side (the Linear layer's
product), a 2-D left side with batches on the right, and batch dims that
broadcast in both directions. Sizes are odd, and a few products are large
enough to cross the GEMM kernel's register and cache blocks.

matmul_t/ and bmm_t/ are the products with MatmulOptions' transposes:
`matmul_t/<flags>_<name>`, flags `a`, `b` or `ab` saying which operands are
given stored transposed (x0 / x1 as qkv receives them); torch computes the
product of their .transpose(-2, -1), so the gradients are those of the
stored arrays.
"""
import torch
import torch.nn.functional as F


def build(w):
    for name, a, b in [
        ("dot", (5,), (5,)),
        ("vec_mat", (3,), (3, 5)),
        ("mat_vec", (4, 3), (3,)),
        ("vec_batch", (5,), (2, 5, 3)),
        ("batch_vec", (2, 3, 5), (5,)),
        ("mat_mat", (3, 5), (5, 7)),
        ("linear", (2, 3, 5), (5, 4)),             # (B, T, D)·(D, F): one folded GEMM
        ("linear_4d", (2, 1, 3, 5), (5, 7)),
        ("mat_batch", (3, 5), (2, 5, 4)),          # 2-D left, batched right: broadcast over the left
        ("batch_batch", (3, 4, 5), (3, 5, 2)),
        ("broadcast", (2, 1, 3, 5), (4, 5, 7)),    # (B, 1, N, K)·(H, K, M) -> (B, H, N, M)
        ("broadcast_both", (1, 3, 4, 5), (2, 1, 5, 2)),
        ("broadcast_size1", (2, 1, 3, 4), (1, 4, 3)),
        ("inner_one", (3, 1), (1, 5)),             # K = 1: an outer product
        ("blocks", (2, 17, 40), (40, 19)),         # crosses the kernel's MR x NR blocks, with tails
        ("blocks_batched", (3, 13, 33), (3, 33, 9)),
    ]:
        w.case(f"matmul/{name}", torch.matmul, [w.randn(*a), w.randn(*b)])

    for name, a, b in [("small", (3, 4, 5), (3, 5, 2)), ("one_batch", (1, 7, 3), (1, 3, 5)), ("vectors", (2, 1, 5), (2, 5, 1))]:
        w.case(f"bmm/{name}", torch.bmm, [w.randn(*a), w.randn(*b)])

    # F.linear: x (…, K), weight (N, K), bias (N).
    w.case("linear/2d_bias", lambda x, W, b: F.linear(x, W, b), [w.randn(5, 3), w.randn(4, 3), w.randn(4)])
    w.case("linear/3d_bias", lambda x, W, b: F.linear(x, W, b), [w.randn(2, 7, 17), w.randn(9, 17), w.randn(9)])
    w.case("linear/1d_no_bias", lambda x, W: F.linear(x, W), [w.randn(5), w.randn(3, 5)])

    def transposed(ta, tb, fn):
        return lambda a, b: fn(a.transpose(-2, -1) if ta else a, b.transpose(-2, -1) if tb else b)

    # Shapes as stored: an operand read transposed is given as (…, K, M) / (…, N, K).
    for flags, name, a, b in [
        ("a", "mat_mat", (5, 3), (5, 7)),
        ("b", "mat_mat", (3, 5), (7, 5)),
        ("ab", "mat_mat", (5, 3), (7, 5)),
        ("b", "linear", (2, 3, 5), (4, 5)),                 # folded (B, T, K)·(N, K)ᵀ
        ("a", "batch_mat", (2, 5, 3), (5, 4)),              # a transposed cannot fold its rows
        ("b", "vec_mat", (3,), (5, 3)),
        ("a", "mat_vec", (3, 4), (3,)),
        ("b", "batch_batch", (3, 4, 5), (3, 2, 5)),         # attention's scores q·kᵀ
        ("ab", "batch_batch", (3, 5, 4), (3, 2, 5)),
        ("a", "broadcast", (2, 1, 5, 3), (4, 5, 7)),        # gradients summed over broadcast dims
        ("b", "broadcast", (2, 1, 3, 5), (4, 7, 5)),
        ("ab", "broadcast_both", (1, 3, 5, 4), (2, 1, 2, 5)),
        ("a", "mat_batch", (5, 3), (2, 5, 4)),
        ("b", "blocks", (2, 17, 40), (19, 40)),
        ("ab", "blocks_batched", (3, 33, 13), (3, 9, 33)),
    ]:
        w.case(f"matmul_t/{flags}_{name}", transposed("a" in flags, "b" in flags, torch.matmul),
               [w.randn(*a), w.randn(*b)])

    for flags, name, a, b in [("a", "small", (3, 5, 4), (3, 5, 2)), ("b", "small", (3, 4, 5), (3, 2, 5)),
                              ("ab", "small", (3, 5, 4), (3, 2, 5))]:
        w.case(f"bmm_t/{flags}_{name}", transposed("a" in flags, "b" in flags, torch.bmm), [w.randn(*a), w.randn(*b)])
