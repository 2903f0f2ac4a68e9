"""Fixtures for qkv's safetensors reader (tests/io/test_safetensors.cpp).

build(w) writes two files next to the reference data, as Python's
safetensors.torch.save_file lays them out, and a case `tiny` (in io.txt) with
the values qkv must read back:

    tests/reference/tiny.safetensors      four F32 tensors (one a 0-d scalar) and metadata
    tests/reference/tiny_f16.safetensors  one F16 tensor, which qkv must refuse by name

and the weights of d2l's own Transformer (tools/reference/d2l.py, d2l's
classes with d2l's names, blks.block0.…), saved as a d2l user would save
them, with torch's outputs for fixed inputs in the case `d2l_transformer`
(tests/nn/test_module.cpp loads them through io::load_safetensors,
nn::from_d2l_names and load_state_dict):

    tests/reference/d2l_transformer.safetensors   encoder.… and decoder.… (the
                                             keys of d2l's EncoderDecoder)

Debian has no python3-safetensors, so the bytes are written here by hand,
following the format (and the reference writer's choices) exactly: an 8-byte
little-endian header length; a compact JSON header with "__metadata__" first,
then the tensors sorted by dtype alignment (largest first) and then name, each
{"dtype", "shape", "data_offsets"}; spaces to pad the header to a multiple of
8; then the tensors' little-endian bytes back to back in that order.

Run as a script, it reads a safetensors file the same way, by hand, and
prints it (to check a file qkv wrote):

    /usr/bin/python3 tools/reference/io.py model.safetensors
"""
import json
import pathlib
import struct
import sys

import torch

DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "tests" / "reference"
DTYPES = {torch.float32: ("F32", 4, "f"), torch.float16: ("F16", 2, "e"), torch.float64: ("F64", 8, "d")}


def save_file(tensors, path, metadata=None):
    """safetensors.torch.save_file, written out by hand."""
    order = sorted(tensors.items(), key=lambda kv: (-DTYPES[kv[1].dtype][1], kv[0]))
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    blobs = []
    for name, t in order:
        dtype, size, code = DTYPES[t.dtype]
        values = t.flatten().tolist()
        blobs.append(struct.pack(f"<{len(values)}{code}", *values))
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(blobs[-1])]}
        offset += len(blobs[-1])
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load_file(path):
    """safetensors.torch.load_file, read by hand: (tensors, metadata)."""
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n:]
    names = {v: k for k, (v, _, _) in DTYPES.items()}
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = names[info["dtype"]]
        out[name] = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype).reshape(info["shape"])
    return out, metadata


def build(w):
    tensors = {
        "fc.weight": w.randn(3, 2),
        "fc.bias": w.randn(3),
        "emb.weight": w.randn(2, 2, 2),
        "scale": torch.tensor(2.5, dtype=torch.float64),
    }
    save_file({k: v.float() for k, v in tensors.items()}, DATA / "tiny.safetensors",
              metadata={"format": "pt", "written_by": "tools/reference/io.py"})
    w.values("tiny", tensors=tensors)

    save_file({"half": torch.tensor([1.0, -2.0], dtype=torch.float16)}, DATA / "tiny_f16.safetensors")

    # The files read back the same way (a check of this script itself).
    back, meta = load_file(DATA / "tiny.safetensors")
    assert meta["format"] == "pt"
    for k, v in tensors.items():
        assert torch.equal(back[k].double(), v), k

    # --- d2l's Transformer, its state dict as d2l's classes name it -------------
    # d2l 11.7's shapes made small: vocabularies 20 and 18, num_hiddens 16,
    # ffn 24, 4 heads, 2 blocks. Dropout 0.1 (the modules are evaluated in
    # eval mode for the encoder and training mode, whose mask the decoder
    # needs, with dropout off for the decoder). LayerNorm weights are
    # randomised so that loading them matters.
    from reference import d2l  # here, so the file also runs as a script (below)

    torch.manual_seed(7)
    H = 16
    enc = d2l.TransformerEncoder(20, H, H, H, H, [H], H, 24, 4, 2, 0.1)
    dec = d2l.TransformerDecoder(18, H, H, H, H, [H], H, 24, 4, 2, 0.1)
    model = torch.nn.ModuleDict({"encoder": enc, "decoder": dec})
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(1 + 0.3 * w.randn(H))
                m.bias.copy_(0.3 * w.randn(H))
        for p in model.parameters():
            p.copy_(p.float().double())  # the float32 numbers the file holds
    save_file({k: v.float() for k, v in model.state_dict().items()}, DATA / "d2l_transformer.safetensors",
              metadata={"format": "pt", "written_by": "tools/reference/io.py"})

    src, src_lens = w.randint(0, 20, 2, 6), torch.tensor([4, 6])
    tgt = w.randint(0, 18, 2, 5)
    with torch.no_grad():
        enc.eval()
        enc_out = enc(src, src_lens)
        for m in dec.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
        dec.train()  # d2l's causal mask is on in training only
        logits, _ = dec(tgt, dec.init_state(enc_out, src_lens))
    w.values("d2l_transformer", tensors={"enc_out": enc_out, "logits": logits},
             ints={"src": src, "src_valid_lens": src_lens, "tgt": tgt})
    back, _ = load_file(DATA / "d2l_transformer.safetensors")
    assert "encoder.blks.block1.attention.W_q.weight" in back, sorted(back)


if __name__ == "__main__":
    tensors, metadata = load_file(sys.argv[1])
    print("metadata:", metadata)
    for name, t in sorted(tensors.items()):
        print(name, tuple(t.shape), t.dtype)
        print(t)
