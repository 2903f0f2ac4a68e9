"""PyTorch's values for the exercises' grader (lessons/exercises/grader/).

Each exercise's cases are named NN/<step>/<case>: the grader runs the
learner's function on the inputs x0, x1, … (and the ints, as named), and
compares its output with `out` and, backpropagating grad_out, its gradients
with grad_x0, grad_x1, …. The mathematics is written here from the notes
and d2l (reference/d2l.py holds d2l's own functions and classes), in
float64, so each exercise is checked against PyTorch as well as against
qkv's own op or layer. Three groups are values without gradients: BLEU
(08, d2l's plain Python; the strings stored as their UTF-8 bytes), the
positional encoding table (10, d2l's P) and the online softmax (13, whose
learner returns plain numbers).
"""
import math

import torch

from reference import d2l
from reference.data_d2l import bleu, utf8
from reference.nn_transformer import TransformerEncoderBlock, randomise_layer_norms


def nadaraya_watson(q, k, v):
    """Exercise 01: weights softmax(-(x - xᵢ)²/2) over the keys (Q, K), prediction weights · values (Q)."""
    weights = torch.softmax(-((q[:, None] - k[None, :]) ** 2) / 2, dim=1)
    return weights, weights @ v


def dot_product_attention(q, k, v, valid_lens):
    """Exercise 04: d2l's DotProductAttention, written out: weights and output."""
    weights = d2l.masked_softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1]), valid_lens)
    return weights, torch.bmm(weights, v)


def additive_score(q, k, W_q, W_k, w_v):
    """Exercise 03: w_vᵀ tanh(W_q q + W_k k) for every query and key, (B, Q, K)."""
    features = torch.tanh((q @ W_q.T).unsqueeze(2) + (k @ W_k.T).unsqueeze(1))  # (B, Q, K, H)
    return (features @ w_v.T).squeeze(-1)


def attn_forward(Q, K, V, attn_w, attn_b, comb_w, comb_b):
    """Exercise 05: document 000's Attn, §3.3's three steps: weights (1, V1), applied (1, 1, Dv), output."""
    weights = torch.softmax(torch.nn.functional.linear(torch.cat((Q[0], K[0]), 1), attn_w, attn_b), dim=1)
    applied = torch.bmm(weights.unsqueeze(0), V)
    output = torch.nn.functional.linear(torch.cat((Q[0], applied[0]), 1), comb_w, comb_b).unsqueeze(0)
    return weights, applied, output


def self_attention(X, qw, qb, kw, kb, vw, vb):
    """Exercise 06: document 002's SelfAttention: probs softmax(Q Kᵀ) (B, T, T), output probs V (B, T, D)."""
    lin = torch.nn.functional.linear
    Q, K, V = lin(X, qw, qb), lin(X, kw, kb), lin(X, vw, vb)
    probs = torch.softmax(Q @ K.transpose(1, 2), dim=-1)
    return probs, probs @ V


def bahdanau_step(hidden, enc_outputs, x, W_q, W_k, w_v, valid_lens):
    """Exercise 07: d2l's decoder step: query hidden[-1], context by additive attention, GRU input [context ; x]."""
    query = hidden[-1].unsqueeze(1)  # (B, 1, H)
    weights = d2l.masked_softmax(additive_score(query, enc_outputs, W_q, W_k, w_v), valid_lens)  # (B, 1, T)
    context = torch.bmm(weights, enc_outputs)  # (B, 1, H)
    return torch.cat((context, x.unsqueeze(1)), dim=-1)


def online_softmax_steps(x, block):
    """Exercise 13: softmax(x), and after each block x[s:e] the maximum m and the sum l = Σ exp(xⱼ - m) of
    the values read so far, x[:e], computed on that prefix (not by a running state)."""
    ends = list(range(block, len(x), block)) + [len(x)]  # the last block may be shorter, or the only one
    m = torch.stack([x[:e].max() for e in ends])
    l = torch.stack([torch.exp(x[:e] - x[:e].max()).sum() for e in ends])
    return torch.softmax(x, dim=0), m, l


def ex01(w):
    x = torch.sort(w.rand(20, low=0, high=5)).values
    y = 2 * torch.sin(x) + x ** 0.8 + w.randn(20, scale=0.5)
    cases = {
        "lesson_shapes": [torch.arange(0, 50).double() * 0.1, x, y],
        "one_key": [w.randn(3), w.randn(1), w.randn(1)],
        "far_query": [torch.tensor([0.25, 30.0]), w.rand(6, low=0, high=5), w.randn(6)],
    }
    for name, inputs in cases.items():
        w.case(f"01/weights/{name}", lambda q, k, v: nadaraya_watson(q, k, v)[0], inputs)
        w.case(f"01/prediction/{name}", lambda q, k, v: nadaraya_watson(q, k, v)[1], inputs)


def ex02(w):
    cases = {
        "1d_lens": (w.randn(2, 2, 4), torch.tensor([2, 3])),
        "2d_lens": (w.randn(2, 2, 4), torch.tensor([[1, 3], [2, 4]])),
        "length_1_and_full": (w.randn(2, 3, 5), torch.tensor([1, 5])),
        "batch_of_1": (w.randn(1, 4, 3), torch.tensor([[1, 2, 3, 3]])),
    }
    for name, (x, lens) in cases.items():
        w.case(f"02/weights/{name}", lambda x, lens=lens: d2l.masked_softmax(x, lens), [x], ints={"valid_lens": lens})
    x = w.randn(2, 3, 4)
    w.case("02/weights/no_lens", lambda x: d2l.masked_softmax(x, None), [x])


def ex03(w):
    cases = {
        "d2l_shapes": [w.randn(2, 1, 20), w.randn(2, 10, 2), w.randn(8, 20, scale=0.3), w.randn(8, 2, scale=0.5),
                       w.randn(1, 8, scale=0.5)],
        "square": [w.randn(2, 3, 4), w.randn(2, 5, 4), w.randn(4, 4, scale=0.5), w.randn(4, 4, scale=0.5),
                   w.randn(1, 4)],
        "h_1": [w.randn(1, 1, 3), w.randn(1, 2, 2), w.randn(1, 3), w.randn(1, 2), w.randn(1, 1)],
    }
    for name, inputs in cases.items():
        w.case(f"03/scores/{name}", additive_score, inputs)


def ex04(w):
    # d2l's example (11.3.2): keys of ones, values arange(40), valid lens [2, 6], a random query.
    values = torch.arange(40).double().reshape(1, 10, 4).repeat(2, 1, 1)
    cases = {
        "d2l_example": ([w.randn(2, 1, 2), torch.ones(2, 10, 2), values], torch.tensor([2, 6])),
        "2d_lens": ([w.randn(2, 3, 4), w.randn(2, 5, 4), w.randn(2, 5, 3)], torch.tensor([[1, 3, 5], [2, 2, 4]])),
        "d_1": ([w.randn(1, 2, 1), w.randn(1, 3, 1), w.randn(1, 3, 2)], torch.tensor([3])),
    }
    for name, (inputs, lens) in cases.items():
        for i, step in enumerate(["weights", "output"]):
            w.case(f"04/{step}/{name}", lambda q, k, v, lens=lens, i=i: dot_product_attention(q, k, v, lens)[i],
                   inputs, ints={"valid_lens": lens})


def ex05(w):
    def inputs(dq, dk, v1, dv, out):
        return [w.randn(1, 1, dq), w.randn(1, 1, dk), w.randn(1, v1, dv), w.randn(v1, dq + dk, scale=0.3),
                w.randn(v1, scale=0.3), w.randn(out, dq + dv, scale=0.3), w.randn(out, scale=0.3)]
    cases = {"small": inputs(4, 4, 6, 3, 5), "dq_ne_dk": inputs(3, 5, 4, 2, 2)}
    for name, xs in cases.items():
        w.case(f"05/weights/{name}", lambda *x: attn_forward(*x)[0], xs)
        w.case(f"05/output/{name}", lambda *x: attn_forward(*x)[2], xs)


def ex06(w):
    def inputs(b, t, d):
        return [w.randn(b, t, d)] + [w.randn(*shape, scale=0.5) for _ in range(3) for shape in [(d, d), (d,)]]
    for name, xs in {"lesson_shapes": inputs(2, 3, 4), "one_word": inputs(1, 1, 3)}.items():
        w.case(f"06/probs/{name}", lambda *x: self_attention(*x)[0], xs)
        w.case(f"06/output/{name}", lambda *x: self_attention(*x)[1], xs)


def ex07(w):
    def inputs(L, B, T, H, E):
        return [w.randn(L, B, H), w.randn(B, T, H), w.randn(B, E)] + [w.randn(*s, scale=0.5) for s in [(H, H), (H, H), (1, H)]]
    cases = {"two_layers": (inputs(2, 3, 5, 4, 2), torch.tensor([5, 2, 3])),
             "one_layer": (inputs(1, 2, 4, 3, 3), torch.tensor([1, 4]))}
    for name, (xs, lens) in cases.items():
        w.case(f"07/rnn_input/{name}", lambda *x, lens=lens: bahdanau_step(*x, lens), xs, ints={"valid_lens": lens})


def ex08(w):
    # d2l's four test sentences with translations a model might give, and clipping's edge: the pairs are
    # stored as their UTF-8 bytes, the score as computed by d2l's bleu.
    pairs = [("va !", "va !", 2), ("j'ai perdu perdu .", "j'ai perdu .", 2), ("il est riche .", "il est calme .", 2),
             ("je suis <unk> .", "je suis chez moi .", 2), ("a a a a", "a b a", 3), ("à bientôt", "à bientôt !", 3)]
    for i, (pred, label, k) in enumerate(pairs):
        w.values(f"08/bleu/pair_{i}", tensors={"bleu": torch.tensor([bleu(pred, label, k)])},
                 ints={"pred": utf8(pred), "label": utf8(label), "k": torch.tensor([k])})


def ex09(w):
    for name, (B, T, H, h) in {"two_heads": (2, 4, 8, 2), "one_head": (1, 3, 4, 1), "h_eq_H": (2, 2, 3, 3)}.items():
        heads = torch.tensor([h])
        w.case(f"09/transpose_qkv/{name}", lambda x, h=h: d2l.transpose_qkv(x, h), [w.randn(B, T, H)],
               ints={"num_heads": heads})
        w.case(f"09/transpose_output/{name}", lambda x, h=h: d2l.transpose_output(x, h), [w.randn(B * h, T, H // h)],
               ints={"num_heads": heads})


def ex10(w):
    for max_len, H in [(60, 32), (7, 2), (9, 64)]:
        P = d2l.PositionalEncoding(H, 0, max_len).P[0]  # (max_len, H)
        w.values(f"10/P/{max_len}x{H}", tensors={"P": P})


def ex11(w):
    for name, (B, T, H, F, heads, lens) in {"lesson_sizes": (2, 4, 8, 16, 2, [3, 4]),
                                            "one_head": (2, 3, 4, 6, 1, [1, 3])}.items():
        torch.manual_seed(11)  # the Linear layers' initial weights come from torch's global generator
        blk = randomise_layer_norms(TransformerEncoderBlock(H, F, heads, 0.0), w).eval()
        lens = torch.tensor(lens)
        w.module_case(f"11/output/{name}", blk, lambda m, X, lens=lens: m(X, lens), [w.randn(B, T, H)],
                      ints={"valid_lens": lens, "num_heads": torch.tensor([heads])})


def ex12(w):
    for name, x in {"rows": w.randn(3, 5), "three_d": w.randn(2, 2, 3, scale=3.0)}.items():
        w.case(f"12/y/{name}", lambda x: torch.softmax(x, dim=-1), [x])


def ex13(w):
    rising = (w.randn(10) + 0.8 * torch.arange(10)).float().double()  # the maximum grows in most blocks
    cases = {
        "rising_blocks": (rising, 3),  # 10 = 3 + 3 + 3 + 1
        "block_1": (w.randn(6, scale=2.0), 1),
        "block_longer_than_row": (w.randn(5), 8),
        "far_above_zero": (w.rand(9, low=1000, high=1010), 4),
        "far_below_zero": (w.rand(7, low=-1010, high=-1000), 2),
    }
    for name, (x, block) in cases.items():
        y, m, l = online_softmax_steps(x, block)
        w.values(f"13/online/{name}", tensors={"x": x, "y": y, "m": m, "l": l}, ints={"block": torch.tensor([block])})


def build(w):
    # Each exercise draws from its own seed, so adding one leaves the others' cases as they were.
    makers = [ex01, ex02, ex03, ex04, ex05, ex06, ex07, ex08, ex09, ex10, ex11, ex12, ex13]
    for number, make in enumerate(makers, start=1):
        w.gen.manual_seed(number)
        make(w)
