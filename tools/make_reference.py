#!/usr/bin/python3
"""Write the PyTorch reference values qkv's tests compare against.

    /usr/bin/python3 tools/make_reference.py            # every group
    /usr/bin/python3 tools/make_reference.py softmax    # one group

Each group is a module tools/reference/<group>.py with a function
build(w: Writer); its cases go to tests/reference/<group>.txt. Run with Debian's
python3-torch; the data files are committed, so building and testing qkv
needs no torch.
"""
import importlib
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from reference.common import Writer  # noqa: E402

# A group is a module of reference/ with a build(w); the others (common.py,
# d2l.py's classes) are imported by the groups.
GROUPS = sorted(p.stem for p in (HERE / "reference").glob("*.py") if "\ndef build(" in p.read_text())


def main(argv):
    groups = argv[1:] or GROUPS
    out_dir = HERE.parent / "tests" / "reference"
    out_dir.mkdir(parents=True, exist_ok=True)
    for group in groups:
        if group not in GROUPS:
            sys.exit(f"make_reference: no group {group!r}; groups are {', '.join(GROUPS)}")
        w = Writer()
        importlib.import_module(f"reference.{group}").build(w)
        path = out_dir / f"{group}.txt"
        path.write_text(w.text())
        print(f"{path.relative_to(HERE.parent)}: {w.count} cases")


if __name__ == "__main__":
    main(sys.argv)
