#!/usr/bin/env python3
"""qkv against PyTorch, case by case, from the JSON lines of the two benchmarks:

    build/release/bench --json > qkv.jsonl
    /usr/bin/python3 tools/bench_torch.py --json > torch.jsonl
    tools/bench_compare.py qkv.jsonl torch.jsonl

For each case both ran, the ratio PyTorch time / qkv time of the medians:
above 1, qkv is faster (2.00 = qkv takes half the time). The same ratio holds
for GFLOP/s and tokens/s, the other way up. Peak memory is compared the same
way (PyTorch MB / qkv MB: above 1, qkv uses less). The peak/fma row is the same
loop measured twice (both files take it from qkv's bench), so its ratio (of
the fastest repetitions, as a peak is a best case) shows how much the machine's
speed moved between the two runs. Plain Python, no torch.
"""
import argparse
import json
import math
import sys


def read(path):
    meta, rows = {}, {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            record = json.loads(line)
            if "meta" in record:
                meta = record["meta"]
            elif "case" in record:
                rows[record["case"]] = record
    return meta, rows


def describe(meta):
    parts = []
    if meta.get("impl") == "torch":
        parts.append(f"torch {meta.get('torch', '')}, BLAS {meta.get('blas', '?').split()[-1]}")
        if "openblas_core" in meta:
            parts.append(f"OpenBLAS core {meta['openblas_core']}")
    else:
        parts.append(f"compiled for {meta.get('compiled_simd', '?')}")
    parts.append(f"{meta.get('threads', '?')} thread(s), load average {meta.get('load_average', '?')}")
    return ", ".join(parts)


def rate(row):
    if "tokens_per_s" in row:  # a training step (qkv's may count its GFLOP/s too)
        return f"{row['tokens_per_s']:.0f} tok/s"
    if "gflops" in row:
        return f"{row['gflops']:.1f} GFLOP/s"
    if "us_per_op" in row:
        return f"{row['us_per_op']:.2f} µs/op"
    return ""


def ms(x):
    """Milliseconds to 4 significant digits, as the benchmarks print them."""
    decimals = min(max(3 - math.floor(math.log10(x)), 1), 6) if x > 0 else 1
    return f"{x:.{decimals}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("qkv", help="JSON lines of build/release/bench --json")
    parser.add_argument("torch", help="JSON lines of tools/bench_torch.py --json")
    args = parser.parse_args()
    qkv_meta, qkv = read(args.qkv)
    torch_meta, torch = read(args.torch)

    print(f"qkv:   {describe(qkv_meta)}")
    print(f"torch: {describe(torch_meta)}")
    if qkv_meta.get("cpu") != torch_meta.get("cpu"):
        print(f"NOTE: different CPUs: {qkv_meta.get('cpu')} and {torch_meta.get('cpu')}")
    if qkv_meta.get("threads") != torch_meta.get("threads"):
        print(f"NOTE: different thread counts: qkv {qkv_meta.get('threads')}, torch {torch_meta.get('threads')}")
    print()
    print(f"{'case':<36} {'qkv ms':>10} {'torch ms':>10} {'torch/qkv':>9}   {'qkv':>16} {'torch':>16}"
          f" {'qkv MB':>8} {'torch MB':>8} {'MB ratio':>8}")
    ratios = []
    for name, q in qkv.items():
        if name not in torch:
            continue
        t = torch[name]
        if name == "peak/fma":  # a peak is its best repetition (bench.cpp's fma_peak)
            ratio = t["min_ms"] / q["min_ms"]
        else:
            ratio = t["median_ms"] / q["median_ms"]
            ratios.append(ratio)
        memory = ""
        if "peak_rss_mb" in q and "peak_rss_mb" in t:
            memory = f" {q['peak_rss_mb']:>8.1f} {t['peak_rss_mb']:>8.1f}"
            if q["peak_rss_mb"] >= 1 and t["peak_rss_mb"] >= 1:  # below 1 MB the page counts are noise
                memory += f" {t['peak_rss_mb'] / q['peak_rss_mb']:>8.2f}"
        print(f"{name:<36} {ms(q['median_ms']):>10} {ms(t['median_ms']):>10} {ratio:>9.2f}   {rate(q):>16} "
              f"{rate(t):>16}{memory}")
    missing = sorted(set(qkv) ^ set(torch))
    if missing:
        print(f"\nin one file only: {', '.join(missing)}")
    if ratios:
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        faster = sum(r > 1 for r in ratios)
        print(f"\nqkv faster in {faster} of {len(ratios)} cases; geometric mean of torch/qkv {geomean:.2f}"
              " (peak/fma left out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
