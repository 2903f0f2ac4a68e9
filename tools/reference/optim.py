"""Reference values for optim::SGD, Adam and AdamW (tests/optim/test_optim.cpp).

Each case runs torch.optim on two parameters (shapes (3, 4) and (5)) for
several steps, feeding the same fixed gradients each step, and writes:

    hp.<name>        the hyperparameters (lr, momentum, …, rounded to float32:
                     the numbers qkv holds)
    p0, p1           the starting parameters
    grad.<k>.<i>     parameter i's gradient at step k; absent: no gradient that
                     step (the optimizer must skip it, state and all)
    lr.<k>           when present, the learning rate set before step k (a schedule)
    param.<k>.<i>    parameter i after step k

Everything runs in float64, so the values are the formula's, not float32's
rounding.
"""
import torch

STEPS = 5


def f32(x):
    """x as the nearest float32, as a Python float (what qkv's float holds)."""
    return float(torch.tensor(x, dtype=torch.float32))


def run(w, name, make, hp, skip=(), lr_at=None, grad_scale=1.0):
    """make(params, **hp) -> a torch optimizer; skip: (step, param) pairs with no grad."""
    hp = {k: f32(v) if isinstance(v, float) else v for k, v in hp.items()}
    params = [w.randn(3, 4).requires_grad_(True), w.randn(5).requires_grad_(True)]
    tensors = {f"hp.{k}": torch.tensor([float(v)]) for k, v in hp.items()}
    tensors["p0"] = params[0].detach().clone()
    tensors["p1"] = params[1].detach().clone()
    opt = make(params, **hp)
    for k in range(STEPS):
        if lr_at and k in lr_at:
            lr = f32(lr_at[k])
            for group in opt.param_groups:
                group["lr"] = lr
            tensors[f"lr.{k}"] = torch.tensor([lr])
        for i, p in enumerate(params):
            if (k, i) in skip:
                p.grad = None
            else:
                p.grad = w.randn(*p.shape, scale=grad_scale)
                tensors[f"grad.{k}.{i}"] = p.grad.clone()
        opt.step()
        for i, p in enumerate(params):
            tensors[f"param.{k}.{i}"] = p.detach().clone()
    w.values(name, tensors=tensors)


def sgd(params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    return torch.optim.SGD(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                           nesterov=bool(nesterov))


def adam(params, lr, beta1, beta2, eps, weight_decay):
    return torch.optim.Adam(params, lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay)


def adamw(params, lr, beta1, beta2, eps, weight_decay):
    return torch.optim.AdamW(params, lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay)


def build(w):
    # SGD: plain, momentum, momentum with dampening and weight decay, nesterov.
    run(w, "sgd/plain", sgd, dict(lr=0.1))
    run(w, "sgd/momentum", sgd, dict(lr=0.1, momentum=0.9))
    run(w, "sgd/dampening_weight_decay", sgd, dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01))
    run(w, "sgd/nesterov", sgd, dict(lr=0.1, momentum=0.9, weight_decay=0.1, nesterov=1))
    # p1 has no gradient at steps 0 and 2: its buffer starts (as a copy of the
    # gradient) at step 1, and step 2 leaves it alone.
    run(w, "sgd/skip", sgd, dict(lr=0.1, momentum=0.9, dampening=0.5), skip={(0, 1), (2, 1)})

    # Adam: PyTorch's defaults; betas, eps and L2 weight decay; gradients as
    # small as eps (so where eps enters matters); a skipped step (p1's own
    # step count lags p0's) and a learning rate changed between steps.
    adam_defaults = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0)
    run(w, "adam/defaults", adam, adam_defaults)
    run(w, "adam/weight_decay", adam, dict(lr=0.01, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.1))
    run(w, "adam/small_grads", adam, dict(adam_defaults, lr=0.01, eps=1e-6), grad_scale=1e-6)
    run(w, "adam/skip_lr", adam, dict(adam_defaults, lr=0.01), skip={(1, 1), (2, 1)}, lr_at={3: 0.05})

    # AdamW: PyTorch's defaults (weight decay 1e-2), a strong decay, the skip.
    run(w, "adamw/defaults", adamw, dict(adam_defaults, weight_decay=1e-2))
    run(w, "adamw/weight_decay", adamw, dict(lr=0.01, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.5))
    run(w, "adamw/skip_lr", adamw, dict(adam_defaults, lr=0.01, weight_decay=0.1), skip={(0, 0), (3, 1)},
        lr_at={2: 0.002})
