"""The format of tests/reference/*.txt and the helper that fills it.

A file is a list of cases; a case is named tensors:

    case add/broadcast
    float x0 2 2 3          <- kind, key, ndim, sizes...
    0.123456791 -1.5 ...    <- the values, row-major, on one line
    int target 1 4
    3 0 1 2
    end

Keys by convention: x0, x1, … the float inputs (the ones gradients flow to);
out the forward output; grad_out the gradient fed to backward; grad_x0, … the
gradients of the inputs; anything else (targets, indices, lengths) by name.
Float values are written with 9 significant digits, which round-trips float32.
"""
import torch

torch.set_default_dtype(torch.float64)


class Writer:
    def __init__(self, seed=0):
        self.lines = []
        self.count = 0
        self.gen = torch.Generator().manual_seed(seed)

    # --- making inputs -----------------------------------------------------
    def randn(self, *shape, scale=1.0):
        """Normal values, rounded to float32 (what qkv will hold), kept as float64."""
        return (torch.randn(tuple(shape), generator=self.gen) * scale).float().double()

    def rand(self, *shape, low=0.0, high=1.0):
        return (low + (high - low) * torch.rand(tuple(shape), generator=self.gen)).float().double()

    def randint(self, low, high, *shape):
        return torch.randint(low, high, shape, generator=self.gen)

    # --- writing a case ----------------------------------------------------
    def case(self, name, fn, inputs, ints=None, extra=None):
        """Run fn(*inputs) in float64, feed a random grad_out to backward, and
        write inputs, out, grad_out and the inputs' gradients.

        inputs: float tensors (gradients are taken for each);
        ints: dict of integer tensors the case also needs (written, not differentiated);
        extra: dict of further float tensors to write as they are.
        """
        xs = [x.detach().clone().double().requires_grad_(True) for x in inputs]
        out = fn(*xs)
        grad_out = self.randn(*out.shape)
        if out.requires_grad:
            out.backward(grad_out)
        self.lines.append(f"case {name}")
        for i, x in enumerate(xs):
            self._float(f"x{i}", x.detach())
        for key, v in (ints or {}).items():
            self._int(key, v)
        for key, v in (extra or {}).items():
            self._float(key, v)
        self._float("out", out.detach())
        self._float("grad_out", grad_out)
        for i, x in enumerate(xs):
            if x.grad is not None:
                self._float(f"grad_x{i}", x.grad)
        self.lines.append("end")
        self.count += 1

    def module_case(self, name, module, fn, inputs, ints=None):
        """A layer against PyTorch: run fn(module, *inputs) in float64, feed a
        random grad_out to each output, and write the module's parameters
        (p.<dotted name>), the inputs, the outputs, and the gradients of both
        (grad_p.<name>, grad_x0, …).

        fn may return one tensor (written as out / grad_out) or a tuple
        (out0, out1, … / grad_out0, …); a None in the tuple is skipped.
        The module's parameters are rounded to float32 first, so qkv loads
        exactly the numbers torch used.
        """
        module = module.double()
        with torch.no_grad():
            for p in module.parameters():
                p.copy_(p.float().double())
        xs = [x.detach().clone().double().requires_grad_(x.is_floating_point()) for x in inputs]
        outs = fn(module, *xs)
        single = not isinstance(outs, (tuple, list))
        outs = [outs] if single else list(outs)
        keys = ["out"] if single else [f"out{i}" for i in range(len(outs))]
        grads = [None if o is None else self.randn(*o.shape) for o in outs]
        total = sum((o * g).sum() for o, g in zip(outs, grads) if o is not None and o.requires_grad)
        if torch.is_tensor(total):
            total.backward()
        self.lines.append(f"case {name}")
        for pname, p in module.named_parameters():
            self._float(f"p.{pname}", p.detach())
        for i, x in enumerate(xs):
            self._float(f"x{i}", x.detach())
        for key, v in (ints or {}).items():
            self._int(key, v)
        for key, o, g in zip(keys, outs, grads):
            if o is not None:
                self._float(key, o.detach())
                self._float(key.replace("out", "grad_out"), g)
        for pname, p in module.named_parameters():
            if p.grad is not None:
                self._float(f"grad_p.{pname}", p.grad)
        for i, x in enumerate(xs):
            if x.grad is not None:
                self._float(f"grad_x{i}", x.grad)
        self.lines.append("end")
        self.count += 1

    def values(self, name, tensors=None, ints=None):
        """A case of plain named values (no backward): for forward-only checks."""
        self.lines.append(f"case {name}")
        for key, v in (tensors or {}).items():
            self._float(key, v)
        for key, v in (ints or {}).items():
            self._int(key, v)
        self.lines.append("end")
        self.count += 1

    def _float(self, key, t):
        t = t.detach().double().reshape(tuple(t.shape))
        self.lines.append(f"float {key} {t.dim()} " + " ".join(str(s) for s in t.shape))
        self.lines.append(" ".join(f"{v:.9g}" for v in t.flatten().tolist()))

    def _int(self, key, t):
        self.lines.append(f"int {key} {t.dim()} " + " ".join(str(s) for s in t.shape))
        self.lines.append(" ".join(str(int(v)) for v in t.flatten().tolist()))

    def text(self):
        return "\n".join(self.lines) + "\n"
