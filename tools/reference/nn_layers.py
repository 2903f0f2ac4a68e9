"""Reference values for nn::Embedding, nn::Dropout and nn::LayerNorm (tests/nn/test_layers.cpp).

An Embedding's sizes are its p.weight's shape; a LayerNorm case also holds
its constructor arguments (ints normalized_shape, elementwise_affine; float
eps), which the test builds it from.
"""
import torch
from torch import nn


def layer_norm_case(w, name, module, inputs):
    """module_case of a LayerNorm, with its constructor arguments written into the case."""
    config = {"normalized_shape": torch.tensor(list(module.normalized_shape)),
              "elementwise_affine": torch.tensor(int(module.elementwise_affine))}
    w.module_case(name, module, lambda m, x: m(x), inputs, ints=config)
    # module_case writes ints only: the float goes in before the case's "end".
    end = w.lines.pop()
    w._float("eps", torch.tensor(float(module.eps)))
    w.lines.append(end)


def build(w):
    torch.manual_seed(0)

    # Embedding: ids of shape (2, 3) with id 3 used three times and id 0 twice,
    # so the gradient of those rows adds several contributions.
    ids = torch.tensor([[3, 0, 3], [5, 3, 0]])
    w.module_case("embedding/repeated_ids", nn.Embedding(7, 4), lambda m: m(ids), [], ints={"ids": ids})
    ids1 = torch.tensor([2, 2, 1, 4, 0])
    w.module_case("embedding/1d", nn.Embedding(5, 3), lambda m: m(ids1), [], ints={"ids": ids1})

    # LayerNorm over the last dim, and over the last two; affine parameters
    # drawn at random so their gradients mean something.
    def randomised(m):
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(torch.randn(p.shape, generator=w.gen))
        return m

    layer_norm_case(w, "layer_norm/last_dim", randomised(nn.LayerNorm(5)), [w.randn(2, 3, 5)])
    layer_norm_case(w, "layer_norm/last_two_dims", randomised(nn.LayerNorm([3, 4])), [w.randn(2, 3, 4, scale=3.0)])
    layer_norm_case(w, "layer_norm/no_affine", nn.LayerNorm(6, eps=1e-3, elementwise_affine=False), [w.randn(4, 6)])
    # Dropout in eval mode is the identity (its gradient too).
    w.module_case("dropout/eval", nn.Dropout(0.5).eval(), lambda m, x: m(x), [w.randn(3, 4)])
