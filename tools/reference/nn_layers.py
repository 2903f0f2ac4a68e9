"""Reference values for nn::Embedding, nn::Dropout and nn::LayerNorm (tests/nn/test_layers.cpp)."""
import torch
from torch import nn


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

    w.module_case("layer_norm/last_dim", randomised(nn.LayerNorm(5)), lambda m, x: m(x), [w.randn(2, 3, 5)])
    w.module_case("layer_norm/last_two_dims", randomised(nn.LayerNorm([3, 4])), lambda m, x: m(x),
                  [w.randn(2, 3, 4, scale=3.0)])
    w.module_case("layer_norm/no_affine", nn.LayerNorm(6, eps=1e-3, elementwise_affine=False),
                  lambda m, x: m(x), [w.randn(4, 6)])
    # Dropout in eval mode is the identity (its gradient too).
    w.module_case("dropout/eval", nn.Dropout(0.5).eval(), lambda m, x: m(x), [w.randn(3, 4)])
