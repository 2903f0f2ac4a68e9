#!/usr/bin/python3
"""The cases of qkv's benchmark (bench/bench.cpp) in PyTorch, printed as the
same table, or the same JSON lines with --json, so tools/bench_compare.py can
divide one by the other.

    /usr/bin/python3 tools/bench_torch.py [--json] [--filter S ...] [--threads N]

Run it with Debian's python3-torch (1.13). The cases and the timing rules are
bench.cpp's, line for line: warm-up runs, then timed runs until both a minimum
count and a time budget are reached (or a maximum count); the median and the
min-max spread; each case in a process of its own (the script runs itself with
--case NAME), whose peak memory is its peak RSS minus its RSS before the case.
The training cases use d2l's PyTorch classes from tools/reference/
(nn_seq2seq.py, nn_transformer.py).

Which BLAS: torch's matmul goes to whatever libblas.so.3 Debian's alternatives
point at; the script reads /proc/self/maps after a matmul and prints it, and
for OpenBLAS its core (openblas_get_corename(): what OPENBLAS_VERBOSE=2 prints
as "Core: ..."). OpenBLAS 0.3.21 does not know recent CPUs and would fall back
to a generic kernel, so unless OPENBLAS_CORETYPE is set already the script sets
it from /proc/cpuinfo before importing torch: SkylakeX on an AVX-512 machine,
Haswell on an AVX2 one. --threads (default 1, as qkv's bench) sets torch's
threads and OpenBLAS's; give qkv's bench the same --threads.

The peak/fma row is a register-only FMA loop, which Python cannot write: it is
taken from qkv's bench (--qkv-bench, default build/release/bench) when that is
built, so the GEMM rows here give their share of the same peak.
"""
import argparse
import ctypes
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import time

TOOLS = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))

torch = None  # imported in main(), after the OpenBLAS environment is set


# --- timing (bench.cpp's rules) -------------------------------------------------------
WARMUP_SECONDS = 0.25  # the warm-up also lasts at least this long (bench.cpp's kWarmupSeconds)
SHORT = (3, 10, 500, 0.5)  # warm-up, min reps, max reps, time budget (s): GEMM, per-op overhead
LONG = (1, 5, 50, 2.0)     # attention
LONGER = (1, 3, 3, 0.0)    # attention at T >= 4096: seconds a run


def steps(reps):
    return (3, reps, reps, 0.0)


def seconds(f):
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def repeat(once, timing):
    """once() does one repetition and returns the seconds it timed itself.
    Returns the timed repetitions, sorted."""
    warmup, min_reps, max_reps, budget = timing
    runs, warm = 0, 0.0
    while runs < warmup or warm < WARMUP_SECONDS:
        warm += once()
        runs += 1
    times, total = [], 0.0
    while len(times) < min_reps or (total < budget and len(times) < max_reps):
        times.append(once())
        total += times[-1]
    return sorted(times)


def to_json(name, times, threads, flops=0, tokens=0, ops=0):
    median = statistics.median(times)
    row = {"case": name, "threads": threads, "reps": len(times), "median_ms": median * 1e3,
           "min_ms": times[0] * 1e3, "max_ms": times[-1] * 1e3}
    if flops:
        row["gflops"] = flops / median / 1e9
    if tokens:
        row["tokens_per_s"] = tokens / median
    if ops:
        row["us_per_op"] = median / ops * 1e6
    return row


# --- the machine ----------------------------------------------------------------------
def cpuinfo(key):
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    return ""


def cpu_simd():
    flags = cpuinfo("flags").split()
    return " ".join(f for f in ["avx512f", "avx512_fp16", "avx2", "fma", "avx", "sse4_2", "neon", "asimd"]
                    if f in flags)


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def status_mb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024  # kB
    return 0.0


def reset_peak_rss():
    """Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def openblas_environment(threads):
    """Before torch is imported: OpenBLAS's core and thread count."""
    set_here = "OPENBLAS_CORETYPE" not in os.environ
    if set_here:
        flags = cpuinfo("flags").split()
        if "avx512f" in flags:
            os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
        elif "avx2" in flags:
            os.environ["OPENBLAS_CORETYPE"] = "Haswell"
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    return os.environ.get("OPENBLAS_CORETYPE", "") + (" (set by this script)" if set_here else " (set by the user)")


def blas_info():
    """The BLAS torch actually loaded (after a matmul), and OpenBLAS's core and threads."""
    torch.randn(8, 8) @ torch.randn(8, 8)
    with open("/proc/self/maps") as f:
        paths = sorted({line.split()[-1] for line in f if "blas" in line.rsplit("/", 1)[-1].lower()})
    info = {"blas": " ".join(paths) or "none found in /proc/self/maps"}
    for path in paths:
        lib = ctypes.CDLL(path)
        if hasattr(lib, "openblas_get_corename"):
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            info["openblas_core"] = lib.openblas_get_corename().decode()
            info["openblas_config"] = lib.openblas_get_config().decode()
            info["openblas_threads"] = lib.openblas_get_num_threads()
            break
    return info


def set_threads(threads):
    torch.set_num_threads(threads)
    for path in blas_info()["blas"].split():
        lib = ctypes.CDLL(path)
        if hasattr(lib, "openblas_set_num_threads"):
            lib.openblas_set_num_threads(threads)


def torch_cpu_capability():
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            return line.split(":", 1)[1].strip()
    return "unknown"


# --- GEMM: matmul and bmm ---------------------------------------------------------------
def gemm(M, K, N):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(M, K, generator=g), torch.randn(K, N, generator=g)
    with torch.no_grad():
        times = repeat(lambda: seconds(lambda: torch.matmul(a, b)), SHORT)
    return times, dict(flops=2.0 * M * K * N)


def batched_gemm(B, M, K, N):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(B, M, K, generator=g), torch.randn(B, K, N, generator=g)
    with torch.no_grad():
        times = repeat(lambda: seconds(lambda: torch.bmm(a, b)), SHORT)
    return times, dict(flops=2.0 * B * M * K * N)


# --- per-op overhead: a chain of one-element adds ---------------------------------------
CHAIN_OPS = 1000


def add_chain(with_backward):
    a, b = torch.ones(1, requires_grad=True), torch.ones(1, requires_grad=True)

    def chain():
        y = a
        for _ in range(CHAIN_OPS):
            y = torch.add(y, b)
        if with_backward:
            y.backward()

    def once():
        t = seconds(chain)
        a.grad = b.grad = None
        return t

    return repeat(once, SHORT), dict(ops=CHAIN_OPS)


# --- scaled dot-product attention, forward and backward ---------------------------------
def attention(T):
    """Also the twin of bench.cpp's sdpa_fused/ rows: PyTorch 1.13 has no fused attention
    (torch.nn.functional.scaled_dot_product_attention came with 2.0), so what it runs for
    softmax(Q·Kᵀ/√d)·V is this, the (B, H, T, T) weights held."""
    B, H, d = 8, 4, 64
    g = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(B, H, T, d, generator=g).requires_grad_() for _ in range(3))
    dO = torch.randn(B, H, T, d, generator=g)

    def step():
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d)  # (B, H, T, T)
        O = torch.matmul(torch.softmax(scores, -1), V)                 # (B, H, T, d)
        O.backward(dO)

    def once():
        t = seconds(step)
        Q.grad = K.grad = V.grad = None
        return t

    return repeat(once, LONGER if T >= 4096 else LONG), dict(flops=12.0 * B * H * T * T * d)


# --- training steps of the course's translation models ----------------------------------
def make_model(transformer, src_vocab, tgt_vocab, hiddens, ffn_hiddens, heads, layers):
    from torch import nn

    class EncoderDecoder(nn.Module):  # d2l 9.6, returning the logits
        def __init__(self, encoder, decoder):
            super().__init__()
            self.encoder, self.decoder = encoder, decoder

        def forward(self, enc_X, dec_X, enc_valid_lens):
            enc_outputs = self.encoder(enc_X, enc_valid_lens)
            dec_state = self.decoder.init_state(enc_outputs, enc_valid_lens)
            return self.decoder(dec_X, dec_state)[0]

    dropout = 0.1
    if transformer:
        from reference.nn_transformer import TransformerDecoder, TransformerEncoder
        return EncoderDecoder(TransformerEncoder(src_vocab, hiddens, ffn_hiddens, heads, layers, dropout),
                              TransformerDecoder(tgt_vocab, hiddens, ffn_hiddens, heads, layers, dropout))
    from reference.nn_seq2seq import Seq2SeqAttentionDecoder, Seq2SeqEncoder
    return EncoderDecoder(Seq2SeqEncoder(src_vocab, hiddens, hiddens, layers, dropout),
                          Seq2SeqAttentionDecoder(tgt_vocab, hiddens, hiddens, layers, dropout))


def train(transformer, src_vocab, tgt_vocab, hiddens, ffn_hiddens, heads, layers, B, T, reps):
    """bench.cpp's train(): random source ids (B, T) with lengths in [3, T],
    target ids Y (B, T), the decoder reading Y shifted right behind bos;
    cross-entropy over all B*T tokens, clip_grad_norm_(1.0), Adam(lr 0.005)."""
    torch.manual_seed(0)
    model = make_model(transformer, src_vocab, tgt_vocab, hiddens, ffn_hiddens, heads, layers)
    model.train()
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=0.005)
    g = torch.Generator().manual_seed(0)
    bos = 1

    def once():
        X = torch.randint(0, src_vocab, (B, T), generator=g)
        Y = torch.randint(0, tgt_vocab, (B, T), generator=g)
        X_len = torch.randint(3, T + 1, (B,), generator=g)
        dec_X = torch.cat([torch.full((B, 1), bos), Y[:, :-1]], dim=1)

        def step():
            opt.zero_grad(set_to_none=True)  # qkv's zero_grad forgets the gradients too
            logits = model(X, dec_X, X_len)                                          # (B, T, V)
            loss = torch.nn.functional.cross_entropy(logits.reshape(B * T, -1), Y.reshape(B * T))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()

        return seconds(step)

    return repeat(once, steps(reps)), dict(tokens=B * T)


# --- the cases (bench.cpp's all_cases) ---------------------------------------------------
def gemm_sweep_cases():
    """--gemm-sweep: bench.cpp's gemm_sweep_cases, square GEMMs at every n from 64 to 128, every 8
    to 256, every 32 to 1024."""
    sizes = list(range(64, 129)) + list(range(136, 257, 8)) + list(range(288, 1025, 32))
    return {f"gemm/{n}x{n}x{n}": (lambda n=n: gemm(n, n, n)) for n in sizes}


def all_cases():
    cases = {}
    for n in [64, 128, 256, 512, 1024]:
        cases[f"gemm/{n}x{n}x{n}"] = lambda n=n: gemm(n, n, n)
    for M, K, N in [(640, 32, 96), (640, 32, 201), (1024, 256, 1024), (2560, 256, 1024)]:
        cases[f"gemm/{M}x{K}x{N}"] = lambda M=M, K=K, N=N: gemm(M, K, N)
    for B, T, d in [(256, 10, 8), (32, 128, 64), (32, 512, 64)]:
        cases[f"bmm/{B}x{T}x{d}x{T}"] = lambda B=B, T=T, d=d: batched_gemm(B, T, d, T)
    cases["overhead/add_chain_forward"] = lambda: add_chain(False)
    cases["overhead/add_chain_forward_backward"] = lambda: add_chain(True)
    for T in [128, 512, 1024, 4096]:
        cases[f"sdpa/T{T}"] = lambda T=T: attention(T)
    for T in [512, 1024, 4096]:
        cases[f"sdpa_fused/T{T}"] = lambda T=T: attention(T)
    # No twin for bench.cpp's sdpa_fused/B1_T16384: PyTorch 1.13 would hold three (1, 4, T, T)
    # buffers of 4.3 GB each (scores, weights, their gradient), 13 GB and more.
    cases["train/bahdanau_gru"] = lambda: train(False, 184, 201, 32, 0, 0, 2, 64, 10, 20)
    cases["train/transformer_d32"] = lambda: train(True, 184, 201, 32, 64, 4, 2, 64, 10, 20)
    cases["train/transformer_d256"] = lambda: train(True, 1000, 1000, 256, 1024, 4, 2, 32, 32, 10)
    return cases


CASE_NAMES = ["peak/fma"] + list(all_cases())


# --- printing (bench.cpp's table) --------------------------------------------------------
def is_gemm(name):
    return name.startswith("gemm/") or name.startswith("bmm/")


def ms(x):
    """Milliseconds to 4 significant digits (0.006123, 33.76, 3476.7), as bench.cpp prints them."""
    decimals = min(max(3 - math.floor(math.log10(x)), 1), 6) if x > 0 else 1
    return f"{x:.{decimals}f}"


def table_header():
    print(f"{'case':<36} {'thr':>3} {'median ms':>11} {'min–max ms':>21}  {'rate':<30} {'peak MB':>8}")


def table_row(row):
    rate = ""
    if "gflops" in row:
        rate = f"{row['gflops']:.1f} GFLOP/s"
        if "peak_share" in row:
            rate += f" ({100 * row['peak_share']:.0f}% of peak)"
    elif "tokens_per_s" in row:
        rate = f"{row['tokens_per_s']:.0f} tokens/s"
    elif "us_per_op" in row:
        rate = f"{row['us_per_op']:.2f} µs/op"
    spread = f"{ms(row['min_ms'])}–{ms(row['max_ms'])}"
    memory = f"{row['peak_rss_mb']:.1f}" if "peak_rss_mb" in row else ""
    print(f"{row['case']:<36} {row['threads']:>3} {ms(row['median_ms']):>11} {spread:>21}  {rate:<30} {memory:>8}",
          flush=True)


def run_in_own_process(name, threads, qkv_bench):
    if name == "peak/fma":  # qkv's register-only FMA loop: the same machine's peak
        command = [qkv_bench, "--case", "peak/fma"]
    else:
        command = [sys.executable, __file__, "--case", name, "--threads", str(threads)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"bench_torch: case {name} failed (exit status {done.returncode})")
    row = json.loads(done.stdout)
    return row


def main():
    global torch
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON lines instead of a table")
    parser.add_argument("--filter", action="append", default=[],
                        help="run only the cases whose name contains this (may repeat: any of them)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch's and OpenBLAS's threads (default 1, as qkv's bench)")
    parser.add_argument("--gemm-sweep", action="store_true",
                        help="instead of the cases: square GEMMs at every n from 64 to 128, every 8 to 256, "
                             "every 32 to 1024")
    parser.add_argument("--list", action="store_true", help="print the case names and exit")
    parser.add_argument("--case", help="run this one case here and print its JSON row (each case runs so)")
    parser.add_argument("--qkv-bench", default=str(TOOLS.parent / "build/release/bench"),
                        help="qkv's bench, for the peak/fma row (default: %(default)s)")
    args = parser.parse_args()
    if args.threads < 1:
        parser.error("--threads must be at least 1")

    names = list(gemm_sweep_cases()) if args.gemm_sweep else CASE_NAMES
    if args.list:
        print("\n".join(names))
        return 0
    coretype = openblas_environment(args.threads)
    import torch as torch_module
    torch = torch_module
    set_threads(args.threads)

    if args.case:  # a case in its own process: its one row, with its own peak memory
        cases = {**gemm_sweep_cases(), **all_cases()}
        if args.case not in cases:
            print(f"bench_torch: no case named '{args.case}' (--list names them)", file=sys.stderr)
            return 2
        import reference.nn_seq2seq, reference.nn_transformer  # noqa: F401  (their import is not the case's memory)
        reset_peak_rss()
        before = status_mb("VmRSS:")
        times, work = cases[args.case]()
        row = to_json(args.case, times, torch.get_num_threads(), **work)
        row["peak_rss_mb"] = status_mb("VmHWM:") - before
        print(json.dumps(row))
        return 0

    selected = [n for n in names if not args.filter or any(f in n for f in args.filter)]
    if not selected:
        print("bench_torch: no case matches the filter (--list names them)", file=sys.stderr)
        return 2
    have_peak = os.access(args.qkv_bench, os.X_OK)
    if "peak/fma" in selected and not have_peak:
        selected.remove("peak/fma")
    elif have_peak and "peak/fma" not in selected and any(is_gemm(n) for n in selected):
        selected.insert(0, "peak/fma")

    blas = blas_info()
    meta = {"impl": "torch", "torch": torch.__version__, "cpu": cpuinfo("model name"), "cpu_simd": cpu_simd(),
            "torch_cpu_capability": torch_cpu_capability(), "threads": torch.get_num_threads(), **blas,
            "openblas_coretype": coretype, "load_average": load_average()}
    if args.json:
        print(json.dumps({"meta": meta}))
    else:
        print(f"torch {torch.__version__} bench on {meta['cpu']} (CPU has: {meta['cpu_simd']}), "
              f"torch's own kernels {meta['torch_cpu_capability']}, {meta['threads']} thread(s)")
        print(f"BLAS: {meta['blas']}")
        if "openblas_core" in blas:
            print(f"OpenBLAS core {blas['openblas_core']} (OPENBLAS_CORETYPE {coretype}), "
                  f"{blas['openblas_threads']} thread(s)")
        if not have_peak:
            print(f"no peak/fma row: {args.qkv_bench} is not built")
        print(f"load average {meta['load_average']} (1, 5, 15 min; well above 0, other work shares the CPU "
              "and the times are noisy)\n")
        table_header()

    peak_gflops, failures = 0.0, 0
    for name in selected:
        try:
            row = run_in_own_process(name, args.threads, args.qkv_bench)
        except (RuntimeError, json.JSONDecodeError) as e:
            print(e, file=sys.stderr)
            failures += 1
            continue
        if name == "peak/fma":
            peak_gflops = row["gflops"]
        if is_gemm(name) and peak_gflops > 0:
            row["peak_share"] = row["gflops"] / peak_gflops
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            table_row(row)
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
