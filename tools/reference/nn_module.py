"""Reference values for nn::Module and nn::Linear (tests/nn/test_module.cpp)."""
import torch
from torch import nn


def build(w):
    torch.manual_seed(0)
    w.module_case("linear/bias", nn.Linear(5, 3), lambda m, x: m(x), [w.randn(2, 4, 5)])
    w.module_case("linear/no_bias", nn.Linear(7, 2, bias=False), lambda m, x: m(x), [w.randn(3, 7)])
