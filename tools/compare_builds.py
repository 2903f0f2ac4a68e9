#!/usr/bin/env python3
"""Two builds of qkv, one lesson, one seed: do they compute the same numbers?

Each argument is a lesson's output folder (holding its results.json), the
same lesson at the same --seed run by two builds. docs/building.md ("Numbers
on another machine") says what holds between which builds:

  - exact (the default): two builds that compute the same numbers (every
    QKV_SAME_NUMBERS build: native, portable x86-64, ARM64, WebAssembly)
    write the same results.json, byte for byte, but for the wall times and
    resident memory (keys holding _seconds or _rss_mb): every number, string
    and flag equal, every float the same bits (-0.0 is not 0.0). A lesson
    that trains must also reach its targets (below) in the first build.
  - --close: a default native build (fused multiply-adds) against another:
    a lesson that trains nothing within RELATIVE (a few float roundings:
    every number within RELATIVE of the other build's, relative to the
    larger, or absolute below 1; every shape, integer, string and flag
    equal); a translation lesson may train a different model, and its targets
    hold in each: lesson 08's mean BLEU of at least 0.8 over the held-out
    pairs, d2l's three sentences translated exactly, attention skipping the
    padding, and the crossing alignment of "the black dog"; lesson 11's mean
    BLEU of at least 0.8 over the 100 held-out pairs, d2l's four sentences
    translated exactly, and its loss below a quarter of the first epoch's.

It prints what it compared and where the builds differ, and exits 1 if the
promise fails. CI (.ci/run) runs it on lessons 04, 08, 11, 12 and 14.

  /usr/bin/python3 tools/compare_builds.py out/native/04_scoring_functions out/portable/04_scoring_functions
  /usr/bin/python3 tools/compare_builds.py --close out/fast/04_scoring_functions out/portable/04_scoring_functions
"""
import json
import pathlib
import sys

RELATIVE = 1e-5
# Lessons that train, and what each must reach in every build.
# Keys that differ by nature: times (and what is fitted to them, such as
# lesson 14's plain_seconds_growth), and the process's resident memory. A
# key holding one of these is left out.
TIMES = ("_seconds", "_rss_mb")


def load(folder):
    with open(pathlib.Path(folder) / "results.json") as f:
        return json.load(f)


def numbers(value, path=""):
    """Every leaf of a results value, as (path, leaf) pairs."""
    if isinstance(value, dict):
        for key, v in value.items():
            yield from numbers(v, f"{path}.{key}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from numbers(v, f"{path}[{i}]")
    else:
        yield path, value


def without_times(value):
    """The results with every wall time (a key holding one of TIMES) left out."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if not any(t in k for t in TIMES)}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def compare_exact(a, b):
    """The same-numbers promise: the same document, wall times aside, to the bit.

    json.dumps writes a float as repr does, the shortest text that reads back
    as the same double, so two floats print alike exactly when their bits
    agree (and -0.0 apart from 0.0); the lessons write floats as they were
    computed, so equal text is equal bits."""
    ta = json.dumps(without_times(a), indent=1, ensure_ascii=False).splitlines()
    tb = json.dumps(without_times(b), indent=1, ensure_ascii=False).splitlines()
    la, lb = dict(numbers(without_times(a))), dict(numbers(without_times(b)))
    failures = []
    if la.keys() != lb.keys():
        failures.append(f"different results: {sorted(la.keys() ^ lb.keys())[:5]}")
    differ = [p for p in sorted(la.keys() & lb.keys()) if repr(la[p]) != repr(lb[p])]
    for p in differ[:10]:
        failures.append(f"{p}: {la[p]!r} and {lb[p]!r}")
    if len(differ) > 10:
        failures.append(f"… {len(differ)} values differ in all")
    if not failures and ta != tb:
        failures.append("the same values, written differently")
    print(f"  {len(la)} values compared, wall times aside; {len(differ)} differ")
    return failures


def compare_forward(a, b):
    """The forward-only promise: the same leaves, floats within RELATIVE."""
    failures, worst = [], (0.0, "")
    la, lb = dict(numbers(a)), dict(numbers(b))
    if la.keys() != lb.keys():
        failures.append(f"different results: {sorted(la.keys() ^ lb.keys())[:5]}")
    for path in sorted(la.keys() & lb.keys()):
        if any(t in path for t in TIMES):
            continue
        x, y = la[path], lb[path]
        if isinstance(x, float) or isinstance(y, float):
            if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
                failures.append(f"{path}: {x!r} and {y!r}")
                continue
            diff = abs(x - y) / max(1.0, abs(x), abs(y))
            if diff > worst[0]:
                worst = (diff, f"{path}: {x!r} and {y!r}")
            if diff > RELATIVE:
                failures.append(f"{path}: {x!r} and {y!r} differ by {diff:.2g} (relative), more than {RELATIVE}")
        elif x != y:
            failures.append(f"{path}: {x!r} and {y!r}")
    print(f"  {len(la)} values; the largest difference {worst[0]:.2g} (relative){', at ' + worst[1] if worst[1] else ''}")
    return failures


def targets_08(r):
    """Lesson 08's targets, as its test (tests/lessons/test_lesson08.cpp) states them."""
    failures = []
    if r["mean_bleu"] < 0.8:
        failures.append(f"mean BLEU {r['mean_bleu']:.3f} < 0.8")
    for i, want in ((0, "va !"), (1, "j'ai perdu ."), (3, "je suis chez moi .")):
        if r[f"d2l_{i}_translation"] != want or r[f"d2l_{i}_bleu"] != 1.0:
            failures.append(f"d2l sentence {i}: {r[f'd2l_{i}_translation']!r}, not {want!r}")
    if r["max_weight_on_padding"] != 0.0:
        failures.append(f"attention on padding: {r['max_weight_on_padding']}")
    losses = r["losses"]
    if not losses[-1] < losses[0] / 10:
        failures.append(f"the loss fell from {losses[0]} to {losses[-1]} only")
    if not r["crossing"]:
        failures.append("the alignment of 'the black dog' does not cross")
    return failures


def targets_11(r):
    """Lesson 11's targets, as its test (tests/lessons/test_lesson11.cpp) states them."""
    failures = []
    if len(r["test_bleus"]) != 100:
        failures.append(f"{len(r['test_bleus'])} held-out pairs scored, not 100")
    if r["d2l_wrong"] != 0:
        failures.append(f"{r['d2l_wrong']} of d2l's four sentences translated wrongly")
    if r["mean_bleu"] < 0.8:
        failures.append(f"mean BLEU {r['mean_bleu']:.3f} < 0.8")
    losses = r["losses"]
    if not losses[-1] < losses[0] / 4:
        failures.append(f"the loss fell from {losses[0]} to {losses[-1]} only")
    return failures


# Lessons that train a translation model, and what each must reach in every build.
TRAINING = {"08_seq2seq_attention": targets_08, "11_transformer": targets_11}


def main(argv):
    close = "--close" in argv[1:]
    args = [a for a in argv[1:] if a != "--close"]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    a, b = load(args[0]), load(args[1])
    name = pathlib.Path(args[0]).name
    print(f"{name}: {args[0]} and {args[1]}{' (close)' if close else ' (exact)'}")
    failures = []
    if name in TRAINING:
        builds = (("first", a["results"]), ("second", b["results"])) if close else (("first", a["results"]),)
        for label, r in builds:
            failures += [f"{label} build: {f}" for f in TRAINING[name](r)]
        ra, rb = a["results"], b["results"]
        print(f"  mean BLEU {ra['mean_bleu']:.3f} and {rb['mean_bleu']:.3f}; exact translations "
              f"{ra['exact_translations']} and {rb['exact_translations']} of 100; final loss "
              f"{ra['losses'][-1]:.4g} and {rb['losses'][-1]:.4g}")
    if not close:
        failures += compare_exact(a, b)
    elif name not in TRAINING:
        failures += compare_forward(a["results"], b["results"])
    for f in failures:
        print(f"  FAILED {f}")
    print(f"  {'the promise holds' if not failures else 'the promise fails'} ({name})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
