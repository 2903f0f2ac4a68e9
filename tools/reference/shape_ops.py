"""Reference values for the shape ops (tests/ops/test_shape_ops.cpp).

Each case keeps the op's arguments as int tensors (shape, dims, dim, sizes,
index, …) so the C++ test reads them from the case instead of repeating them.
Ops that return several tensors (split, chunk) are checked through
cat(reversed(pieces)): every piece then reaches the output, at a different
place than it came from, so the gradient shows whether each piece's went back
to the right spot.
"""
import torch
import torch.nn.functional as F



def ints(*values):
    return torch.tensor(values, dtype=torch.int64)


def scalar_int(v):
    return torch.tensor(v, dtype=torch.int64)


def build(w):
    # --- views ---------------------------------------------------------------
    for name, shape, target in [
        ("infer", (2, 3, 4), (4, -1)),
        ("split_dim", (6, 5), (2, 3, 5)),
        ("to_vector", (3, 1, 5), (-1,)),
        ("to_scalar", (1, 1), ()),
    ]:
        w.case(f"reshape/{name}", lambda x, t=target: x.reshape(t), [w.randn(*shape)], ints={"shape": ints(*target)})
        w.case(f"view/{name}", lambda x, t=target: x.view(t), [w.randn(*shape)], ints={"shape": ints(*target)})

    for name, shape, start, end in [
        ("all", (2, 3, 5), 0, -1),
        ("middle", (2, 3, 5, 7), 1, 2),
        ("neg", (2, 3, 5), -2, -1),
        ("one_dim", (2, 3, 5), 1, 1),
        ("scalar", (), 0, -1),
    ]:
        x = w.randn(*shape)
        w.case(f"flatten/{name}", lambda x, s=start, e=end: x.flatten(s, e), [x],
               ints={"start": scalar_int(start), "end": scalar_int(end)})

    w.case("squeeze/all", lambda x: x.squeeze(), [w.randn(1, 3, 1, 5)])
    for name, shape, dim in [("size1", (3, 1, 5), 1), ("neg", (3, 5, 1), -1), ("not_size1", (3, 5), 0)]:
        w.case(f"squeeze/{name}", lambda x, d=dim: x.squeeze(d), [w.randn(*shape)], ints={"dim": scalar_int(dim)})
    for name, shape, dim in [("front", (3, 5), 0), ("middle", (3, 5), 1), ("end_neg", (3, 5), -1), ("neg3", (3, 5), -3)]:
        w.case(f"unsqueeze/{name}", lambda x, d=dim: x.unsqueeze(d), [w.randn(*shape)], ints={"dim": scalar_int(dim)})

    # --- permute and transpose ----------------------------------------------
    for name, shape, d0, d1 in [
        ("matrix", (3, 5), 0, 1),
        ("last_two", (2, 3, 5, 7), -2, -1),
        ("outer", (2, 3, 5), 0, -1),
        ("same", (3, 5), 1, 1),
        ("heads", (2, 7, 3, 5), 1, 2),  # (B, T, H, Dh) -> (B, H, T, Dh)
    ]:
        w.case(f"transpose/{name}", lambda x, a=d0, b=d1: x.transpose(a, b), [w.randn(*shape)],
               ints={"dim0": scalar_int(d0), "dim1": scalar_int(d1)})
    for name, shape, dims in [
        ("reverse", (2, 3, 5), (2, 1, 0)),
        ("rotate", (2, 3, 5, 7), (3, 0, 2, 1)),
        ("negative", (2, 3, 5), (-1, 0, -2)),
        ("identity", (3, 5), (0, 1)),
        ("size1", (3, 1, 5), (1, 2, 0)),
    ]:
        w.case(f"permute/{name}", lambda x, d=dims: x.permute(d), [w.randn(*shape)], ints={"dims": ints(*dims)})

    # --- expand and repeat ---------------------------------------------------
    for name, shape, target in [
        ("column", (3, 1), (3, 5)),
        ("new_dims", (3, 1), (2, 3, 5)),
        ("keep", (1, 5), (3, -1)),
        ("middle", (2, 1, 5), (2, 7, 5)),
        ("vector", (5,), (3, 1, 5)),
        ("scalar", (), (2, 3)),
    ]:
        x = w.randn(*shape)
        w.case(f"expand/{name}", lambda x, t=target: x.expand(*t), [x], ints={"shape": ints(*target)})
    for name, shape, reps in [
        ("rows", (2, 3), (3, 1)),
        ("both", (2, 3), (2, 5)),
        ("new_dim", (2, 3), (2, 1, 3)),
        ("ones", (3, 5), (1, 1)),
        ("vector", (3,), (2, 3)),
    ]:
        w.case(f"repeat/{name}", lambda x, r=reps: x.repeat(*r), [w.randn(*shape)], ints={"repeats": ints(*reps)})

    # --- cat and stack ---------------------------------------------------------
    w.case("cat/rows", lambda a, b: torch.cat([a, b], 0), [w.randn(2, 5), w.randn(3, 5)], ints={"dim": scalar_int(0)})
    w.case("cat/last", lambda a, b, c: torch.cat([a, b, c], -1), [w.randn(2, 3, 1), w.randn(2, 3, 3), w.randn(2, 3, 5)],
           ints={"dim": scalar_int(-1)})
    w.case("cat/middle", lambda a, b: torch.cat([a, b], 1), [w.randn(2, 3, 5), w.randn(2, 1, 5)], ints={"dim": scalar_int(1)})
    w.case("cat/one", lambda a: torch.cat([a], 0), [w.randn(3, 5)], ints={"dim": scalar_int(0)})
    w.case("cat/same_twice", lambda a: torch.cat([a, a], 1), [w.randn(3, 5)], ints={"dim": scalar_int(1)})
    w.case("stack/front", lambda a, b, c: torch.stack([a, b, c], 0), [w.randn(3, 5) for _ in range(3)],
           ints={"dim": scalar_int(0)})
    w.case("stack/middle", lambda a, b: torch.stack([a, b], 1), [w.randn(3, 5), w.randn(3, 5)], ints={"dim": scalar_int(1)})
    w.case("stack/end_neg", lambda a, b: torch.stack([a, b], -1), [w.randn(3, 5), w.randn(3, 5)],
           ints={"dim": scalar_int(-1)})
    w.case("stack/vectors", lambda a, b, c: torch.stack([a, b, c], 1), [w.randn(7) for _ in range(3)],
           ints={"dim": scalar_int(1)})

    # --- split, chunk, narrow, slice --------------------------------------------
    def rejoined(pieces, dim):
        return torch.cat(list(reversed(pieces)), dim)

    for name, shape, size, dim in [("even", (6, 5), 2, 0), ("ragged", (3, 7), 3, -1), ("one_piece", (2, 3, 5), 5, 2)]:
        w.case(f"split/{name}", lambda x, s=size, d=dim: rejoined(torch.split(x, s, d), d), [w.randn(*shape)],
               ints={"split_size": scalar_int(size), "dim": scalar_int(dim)})
    for name, shape, sizes, dim in [("sizes", (2, 7, 3), (1, 4, 2), 1), ("with_empty", (5, 3), (2, 0, 3), 0)]:
        w.case(f"split/{name}", lambda x, s=sizes, d=dim: rejoined(torch.split(x, list(s), d), d), [w.randn(*shape)],
               ints={"sizes": ints(*sizes), "dim": scalar_int(dim)})
    for name, shape, chunks, dim in [("even", (6, 3), 3, 0), ("ragged", (3, 5), 4, -1), ("more_than_size", (2, 3), 5, 1)]:
        w.case(f"chunk/{name}", lambda x, c=chunks, d=dim: rejoined(torch.chunk(x, c, d), d), [w.randn(*shape)],
               ints={"chunks": scalar_int(chunks), "dim": scalar_int(dim)})

    for name, shape, dim, start, length in [("rows", (5, 3), 0, 1, 3), ("neg_start", (3, 7), -1, -4, 2), ("empty", (3, 5), 1, 5, 0)]:
        w.case(f"narrow/{name}", lambda x, d=dim, s=start, n=length: x.narrow(d, s, n), [w.randn(*shape)],
               ints={"dim": scalar_int(dim), "start": scalar_int(start), "length": scalar_int(length)})

    # Python slicing: x[start:end:step] along dim, with clamping of out-of-range bounds.
    def sliced(x, dim, start, end, step):
        index = [slice(None)] * x.dim()
        index[dim] = slice(start, end, step)
        return x[tuple(index)]

    for name, shape, dim, start, end, step in [
        ("range", (7, 3), 0, 1, 5, 1),
        ("step", (3, 8), 1, 1, 8, 3),
        ("negative", (2, 9, 3), 1, -6, -1, 2),
        ("clamped", (3, 5), -1, -100, 100, 2),
        ("empty", (3, 5), 1, 4, 2, 1),
    ]:
        w.case(f"slice/{name}", lambda x, d=dim, a=start, b=end, s=step: sliced(x, d, a, b, s), [w.randn(*shape)],
               ints={"dim": scalar_int(dim), "start": scalar_int(start), "end": scalar_int(end), "step": scalar_int(step)})

    # --- index_select and embedding ------------------------------------------------
    for name, shape, dim, index in [
        ("rows", (5, 3), 0, (4, 0, 2)),
        ("repeated", (3, 7), 1, (6, 1, 6, 6, 0)),  # index 6 thrice: its gradient is the sum of three
        ("middle_neg", (2, 5, 3), -2, (3, 3, 1)),
    ]:
        w.case(f"index_select/{name}", lambda x, d=dim, i=index: x.index_select(d, ints(*i)), [w.randn(*shape)],
               ints={"dim": scalar_int(dim), "index": ints(*index)})

    ids = torch.tensor([[1, 4, 4, 0], [6, 1, 2, 4]], dtype=torch.int64)  # (B, T) = (2, 4), ids of a V=7 table
    w.case("embedding/batch", lambda wt: F.embedding(ids, wt), [w.randn(7, 5)], ints={"ids": ids})
    w.case("embedding/vector", lambda wt: F.embedding(ints(2, 0, 2), wt), [w.randn(3, 4)], ints={"ids": ints(2, 0, 2)})
    w.case("embedding/scalar_id", lambda wt: F.embedding(scalar_int(3), wt), [w.randn(5, 3)], ints={"ids": scalar_int(3)})

    # --- repeat_interleave (appended last: the cases above keep their random inputs) ---
    for name, shape, repeats, dim in [
        ("rows", (2, 3), 2, 0),
        ("middle", (2, 3, 5), 3, 1),
        ("last_neg", (3, 5), 2, -1),
        ("heads", (2, 7), 4, 0),  # valid lengths (B, Q) repeated for h = 4 heads, as attention does
        ("zero", (3, 2), 0, 1),
        ("once", (2, 3), 1, 1),
    ]:
        w.case(f"repeat_interleave/{name}", lambda x, r=repeats, d=dim: torch.repeat_interleave(x, r, dim=d),
               [w.randn(*shape)], ints={"repeats": scalar_int(repeats), "dim": scalar_int(dim)})
    for name, shape, repeats in [("flat", (2, 3), 2), ("scalar", (), 3)]:  # no dim: flattened first
        w.case(f"repeat_interleave/{name}", lambda x, r=repeats: torch.repeat_interleave(x, r), [w.randn(*shape)],
               ints={"repeats": scalar_int(repeats)})
