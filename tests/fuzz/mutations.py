"""Structure-aware mutations of a spec directory, drawn with hypothesis.

A draw picks one spec file and one of: a change to its data at a random path (delete, duplicate, retype, rename,
or swap in a name used elsewhere in the spec, which makes collisions and dangling references likely), a YAML
construct injected at a random value position (the ones issue 11 found: deep nesting, alias bombs and loops,
dates, non-finite and huge numbers, tags, merge keys), or a change to the file itself (truncated, emptied, not
UTF-8, deleted, or replaced by a directory, a FIFO or a broken symlink).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

PLACEHOLDER = "FUZZ-PLACEHOLDER-7f3a"
_BOMB = (
    "["
    + ", ".join([f"&b0 [{', '.join(['lol'] * 9)}]"] + [f"&b{i} [{', '.join([f'*b{i - 1}'] * 9)}]" for i in range(1, 9)])
    + "]"
)
CONSTRUCTS = {
    "deep nesting": "[" * 300 + "]" * 300,
    "alias bomb": _BOMB,
    "self alias": "&loop [*loop]",
    "undefined alias": "*nowhere",
    "date": "2024-01-01",
    "impossible date": "2001-13-45",
    "timestamp": "2001-12-14t21:59:43.10-05:00",
    "infinity": ".inf",
    "negative infinity": "-.inf",
    "not a number": ".nan",
    "huge integer": "9" * 5000,
    "64-bit overflow": str(2**64),
    "binary": "!!binary aGVsbG8=",
    "set": "!!set {a: null}",
    "ordered map": "!!omap [{a: 1}]",
    "merge key": "{<<: {a: 1}, b: 2}",
    "python tag": "!!python/name:os.system",
    "complex key": "{[a]: 1}",
    "boolean": "true",
    "null": "null",
}
FILE_FAULTS = ("truncate", "empty", "not utf-8", "delete", "directory", "fifo", "dangling symlink", "symlink loop")

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def spec_files(spec: Path) -> list[str]:
    """The YAML files of a spec directory, relative to it."""
    return sorted(p.relative_to(spec).as_posix() for p in spec.rglob("*.yaml"))


def string_pool(spec: Path) -> list[str]:
    """Short strings used in the spec (names of classes, methods, types...), to make swaps meaningful."""
    pool: set[str] = set()
    for rel in spec_files(spec):
        _strings(yaml.load((spec / rel).read_text(encoding="utf-8"), Loader=yaml.CSafeLoader), pool)
    return sorted(s for s in pool if len(s) <= 40)


def _strings(value: Any, out: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            out.add(str(key))
            _strings(item, out)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)
    elif isinstance(value, str):
        out.add(value)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*path, i))
    return out


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


def mutate(data: st.DataObject, spec: Path, pool: list[str]) -> str:
    """Apply one drawn mutation to the spec directory `spec`; return a short description of it."""
    rel = data.draw(st.sampled_from(spec_files(spec)), label="file")
    path = spec / rel
    family = data.draw(st.sampled_from(["data", "data", "data", "construct", "file"]), label="family")
    if family == "file":
        fault = data.draw(st.sampled_from(FILE_FAULTS), label="fault")
        _file_fault(data, path, fault)
        return f"{fault} {rel}"
    document = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    paths = _paths(document)
    where = data.draw(st.sampled_from(paths), label="path")
    if family == "construct":
        name = data.draw(st.sampled_from(sorted(CONSTRUCTS)), label="construct")
        if where == ():
            path.write_text(CONSTRUCTS[name] + "\n", encoding="utf-8")
        else:
            _parent(document, where)[where[-1]] = PLACEHOLDER
            text = _dump(document).replace(PLACEHOLDER, CONSTRUCTS[name], 1)
            path.write_text(text, encoding="utf-8")
        return f"{name} at {rel}:{_show(where)}"
    operation = data.draw(st.sampled_from(["delete", "duplicate", "retype", "rename", "swap"]), label="operation")
    if where == ():
        document = data.draw(json_values, label="document") if operation == "retype" else document
    else:
        _edit(data, document, where, operation, pool)
    path.write_text(_dump(document), encoding="utf-8")
    return f"{operation} {rel}:{_show(where)}"


def _edit(data: st.DataObject, document: Any, where: tuple[Any, ...], operation: str, pool: list[str]) -> None:
    parent, key = _parent(document, where), where[-1]
    if operation == "delete":
        del parent[key]
    elif operation == "duplicate":
        if isinstance(parent, list):
            parent.insert(key, parent[key])
        else:
            parent[data.draw(st.sampled_from(pool) | st.text(max_size=8), label="new key")] = parent[key]
    elif operation == "retype":
        parent[key] = data.draw(json_values, label="value")
    elif operation == "rename" and isinstance(parent, dict):
        new = data.draw(st.sampled_from(pool) | st.text(max_size=8), label="new name")
        items = [(new if k == key else k, v) for k, v in parent.items()]
        parent.clear()
        parent.update(items)
    else:  # swap in a string used elsewhere, or rename an index: replace with a pooled string
        parent[key] = data.draw(st.sampled_from(pool), label="pooled")


def _file_fault(data: st.DataObject, path: Path, fault: str) -> None:
    if fault == "truncate":
        raw = path.read_bytes()
        path.write_bytes(raw[: data.draw(st.integers(0, len(raw)), label="cut")])
    elif fault == "empty":
        path.write_bytes(b"")
    elif fault == "not utf-8":
        path.write_bytes(path.read_bytes() + b"\nx: \xff\xfe\n")
    else:
        path.unlink()
        if fault == "directory":
            path.mkdir()
        elif fault == "fifo":
            os.mkfifo(path)
        elif fault == "dangling symlink":
            path.symlink_to(path.with_name("nowhere.yaml"))
        elif fault == "symlink loop":
            path.symlink_to(path)


def _dump(document: Any) -> str:
    return yaml.dump(document, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True, width=1_000_000)


def _show(path: tuple[Any, ...]) -> str:
    return ".".join(map(str, path)) or "(root)"


def fresh_copy(source: Path, dest: Path) -> Path:
    """A copy of the spec directory `source` at `dest` (replacing what is there)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source, dest, symlinks=True)
    return dest
