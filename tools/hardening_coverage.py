#!/usr/bin/env python3
"""Which public entry points have no row in the bad-input table?

Every function declared under include/qkv/ must have a row in tests/hardening/.
This script lists those functions (with Universal Ctags, which
reads the headers without compiling them) and looks for each one in the
description strings of the table's rows, the first string of each
`{"description", [] { call; }, "fragment"}`:

  - a free function `f` (or an overload set) is named when a description holds
    the word `f`: "zeros: sizes whose product overflows int64";
  - a method `C::m` when a description holds `C::m`, or the words `C` and `m`:
    "Tensor::at: index past the end", "Tensor(): shape";
  - a constructor, `forward` or `operator()` of a class `C` when a
    description starts with `C` and a colon: "Linear: in_features 0".

A function that takes no argument and cannot be handed a bad state (a
trivial getter, a deleted or defaulted member, a type's name) is exempt, with
the reason, in EXEMPT below. Private members are not entry points.

Run from the repository root:  /usr/bin/python3 tools/hardening_coverage.py
It prints the functions no row names and exits 1 if there are any.
"""
import json
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# name (or Class::name) -> why it has no bad-input row
EXEMPT = {
    # no arguments and no state a caller can make bad
    "Module::is_training": "a bool getter",
    "Module::eval": "train(false)",
    "set_need_weights": "a bool set on every attention layer of a module tree: no input it could refuse",
    "Module::type_name": "a constant string",
    "Module::extra_repr": "reads the layer's own fields",
    "Generator::state": "a uint64 getter",
    "Generator::next_u64": "any state is valid",
    "Generator::manual_seed": "any seed is valid",
    "Generator::skip": "any count is valid (the state wraps modulo 2^64 by design)",
    "manual_seed": "any seed is valid",
    "default_generator": "no arguments",
    "Generator::Generator": "any seed is valid",
    "Optimizer::name": "a constant string",
    "NoGradGuard::NoGradGuard": "no arguments",
    "NoGradGuard::~NoGradGuard": "no arguments",
    "EnableGradGuard::EnableGradGuard": "no arguments",
    "EnableGradGuard::~EnableGradGuard": "no arguments",
    "GradcheckResult::operator bool": "a bool getter",
    "Module::Module": "no arguments",
    "Module::~Module": "no arguments",
    "ModuleList::size": "a count",
    "Tensor::defined": "a bool getter, the check itself",
    "IntTensor::defined": "a bool getter, the check itself",
    "Shape::Shape": "a list of sizes; its checks are where it is used (numel, empty, reshape)",
    "Shape::ndim": "a count",
    "Shape::begin": "an iterator over a vector",
    "Shape::end": "an iterator over a vector",
    "Shape::dims": "the vector itself",
    "Shape::operator==": "compares two vectors",
    "Shape::operator!=": "compares two vectors",
    "Tensor::Tensor": "the default constructor makes the undefined tensor the table feeds in; "
    "Tensor(values, shape) is the `tensor` factory's row",
    "IntTensor::IntTensor": "as Tensor::Tensor",
    "Tensor::same": "compares two handles",
    "Tensor::is_leaf": "a bool getter",
    "Tensor::requires_grad": "a bool getter",
    "is_grad_enabled": "a bool getter",
    "num_threads": "a count",
    "get_num_threads": "a count",
    "type_name": "every layer's and optimizer's constant name",
    "extra_repr": "reads the layer's own fields; repr() is tested per layer in tests/nn",
    "Tensor::impl": "the handle's pointer, null for an undefined tensor by design (defined() says which)",
    "IntTensor::storage": "as Tensor::impl: the storage's pointer, null for an undefined IntTensor by design",
    "Version::get": "a count",
    "Version::bump": "no arguments; any count is valid (it only has to change)",
    "SavedTensor::SavedTensor": "takes any tensor, an undefined one too (it keeps its place): nothing to refuse",
    "SavedTensor::version": "the storage's counter, null for an undefined tensor by design",
    "SavedTensors::size": "a count",
    "MemoryBlock::data": "the block's pointer",
    "Generator::take": "any count is valid: the state moves on modulo 2^64, as that many draws would move it",
    "Generator::operator=": "a copy of another generator's state; any state is valid",
    "MemoryBlock::operator=": "a move, of a block any constructor made",
    "Tensor::numel": "shape().numel(), whose undefined row is Tensor(): shape",
    "IntTensor::numel": "as Tensor::numel",
    "formatter::format": "fmt's hook, the same text as to_string",
    "operatorbool": "a bool getter",
    "IncompatibleKeys::empty": "a bool getter",
    "Rgb::operator==": "compares three bytes",
    "memory_stats": "no arguments",
    "reset_peak_memory_stats": "no arguments",
    "sole_owner": "a bool getter, false for an undefined tensor (tests/core/test_gradient_memory.cpp)",
    "empty_cache": "no arguments",
    "size_class": "any size is rounded; its overflow is allocate_block's row",
    "Edge::requires_grad": "autograd internals (attnmem's files)",
    "Edge::shape": "autograd internals (attnmem's files)",
    "fail": "the function that makes the errors",
    # an optimizer's hooks, for a subclass to override: a user reaches them through step() and
    # load_state_dict(), whose rows cover them
    "Adam::update": "a hook under step()",
    "SGD::update": "a hook under step()",
    "Adam::buffer_names": "a constant list",
    "SGD::buffer_names": "a constant list",
    "Adam::hyperparameters": "a hook under state_dict()",
    "SGD::hyperparameters": "a hook under state_dict()",
    "Adam::set_hyperparameters": "a hook under load_state_dict()",
    "SGD::set_hyperparameters": "a hook under load_state_dict()",
    "Adam::check_hyperparameters": "a hook under the constructor and step()",
    "SGD::check_hyperparameters": "a hook under the constructor and step()",
    "Optimizer::update": "pure virtual hook",
    "Optimizer::buffer_names": "pure virtual hook",
    "Optimizer::hyperparameters": "pure virtual hook",
    "Optimizer::set_hyperparameters": "pure virtual hook",
    "Optimizer::check_hyperparameters": "pure virtual hook",
    "DataLoader::begin": "an iterator at the first batch",
    "DataLoader::end": "an iterator past the last batch",
    "iterator::operator*": "the batch the iterator made",
    "iterator::operator->": "the batch the iterator made",
    "iterator::operator==": "compares two positions",
    "iterator::operator++": "the next batch; past the end is end()",
    "DataLoader::dataset": "a getter",
    "DataLoader::options": "a getter",
    "DataLoader::size": "a count",
    "TensorDataset::size": "a count",
    "TensorDataset::tensors": "a getter",
    "NMTData::dataset": "a getter",
    "Vocab::contains": "any string is a question with an answer",
    "Vocab::idx_to_token": "a getter",
    "Vocab::token_freqs": "a getter",
    "Vocab::operator[]": "any string: an unknown token is <unk>, as d2l's",
    "preprocess_nmt": "any text (invalid UTF-8 is the readers' row)",
    "xml_escape": "any bytes: what is not UTF-8 becomes U+FFFD (tests/viz)",
    "viridis": "every float is a colour: clamped to [0, 1], NaN as 0 (color.hpp)",
    "to_hex": "every Rgb is a colour",
    "use_color": "every Color is an answer",
    "to_string": "every tensor prints; an undefined one as tensor(undefined), as Python prints None "
    "(a check in test_entry_points_bad_input.cpp)",
    "scalar_tensor": "every float, NaN and inf too, is a value",
    "Shape::str": "no arguments",
    "Module::named_children": "no arguments; returns handles (tests/hardening checks they outlive the module)",
    "TraceArg::TraceArg": "keeps the address of a Tensor or IntTensor; an undefined one is skipped",
    "TraceScope::TraceScope": "records nothing unless nn::trace runs; undefined inputs are skipped (nn::trace has rows)",
    "TraceScope::output": "hands its tensor back; an undefined one is skipped",
    "TraceScope::outputs": "as output, for several tensors",
    "Module::train": "any bool",
    "Module::children": "the subclasses' view of named_children()",
    "RNNBase::run": "the body of RNN, GRU and LSTM forward, whose rows cover it",
    "Optimizer::params": "a getter",
    "Optimizer::state_dict": "no arguments",
    "Optimizer::state_spec": "no arguments",
    "Optimizer::zero_grad": "no arguments",
}

ROW = re.compile(r'\{\s*"((?:[^"\\]|\\.)*)"\s*,', re.S)


def tags():
    if shutil.which("ctags") is None:
        sys.exit("hardening_coverage.py needs Universal Ctags (apt-get install universal-ctags)")
    out = subprocess.run(
        ["ctags", "--output-format=json", "--fields=+sKzaSti", "--c++-kinds=+p", "-R", "-o", "-", "include/qkv"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def subclasses():
    """class -> itself and every class derived from it, by name."""
    parents = {}
    for tag in tags():
        if tag.get("kind") in ("class", "struct") and tag.get("inherits"):
            parents[tag["name"]] = [p.split("::")[-1].strip() for p in tag["inherits"].split(",")]

    def ancestors(c):
        for p in parents.get(c, []):
            yield p
            yield from ancestors(p)
    family = {}
    for c in parents:
        for a in ancestors(c):
            family.setdefault(a, {a}).add(c)
    return family


def declarations():
    """(class or '', name, path) of every public function under include/qkv."""
    found = set()
    for tag in tags():
        if tag.get("kind") not in ("prototype", "function"):
            continue
        if tag.get("access") == "private":
            continue
        pattern = tag.get("pattern", "")
        if "= delete" in pattern:
            continue
        scope = tag.get("scope", "")
        cls = scope.rsplit("::", 1)[-1] if tag.get("scopeKind") in ("class", "struct") else ""
        name = tag["name"].replace("operator ", "operator")
        if name.startswith("__anon"):
            continue  # a lambda ctags took for a function
        if name.startswith("~"):
            continue  # destructors take nothing
        found.add((cls, name, tag["path"]))
    return sorted(found)


def descriptions():
    rows = []
    for path in sorted((ROOT / "tests" / "hardening").glob("*.cpp")):
        rows += [m.group(1) for m in ROW.finditer(path.read_text())]
    return rows


def word(name, text):
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", text) is not None


def named(cls, name, rows, family):
    """A base class's method is named by a row about any class derived from it."""
    if not cls:
        return any(word(name, r) for r in rows)
    for c in sorted(family.get(cls, {cls})):
        if name == cls or name in ("forward", "operator()"):
            if any(re.match(re.escape(c) + r"[^A-Za-z0-9_]*:", r) or r.startswith(c + "(") for r in rows):
                return True
        if any(f"{c}::{name}" in r or (word(c, r) and word(name, r)) for r in rows):
            return True
    return False


def main():
    rows = descriptions()
    family = subclasses()
    missing = []
    for cls, name, path in declarations():
        key = f"{cls}::{name}" if cls else name
        if key in EXEMPT or name in EXEMPT:
            continue
        if not named(cls, name, rows, family):
            missing.append(f"{path}: {key}")
    for m in sorted(set(missing)):
        print(m)
    print(f"{len(rows)} rows; {len(set(missing))} public functions without one", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
