"""`generate` timed as a user waits for it: fresh processes on a copy of the real spec.

1. A no-op run against a full one on the same copy (goal: <= 0.25).
2. Incremental runs, each against a full run from an empty tree on its own copy of the spec: one method's
   `summary` edited, then `generate` (goal: <= 0.15); one type's property description edited, then `generate`
   (goal: <= 0.6). The edits differ each round, so every run has real work; runs alternate.
3. A full run from an empty output tree (every artifact: schemas, models, SDK tables, vectors, docs pages) against
   the `datamodel-codegen` command line run with the same options on the schema our run writes (only the models,
   one module, no formatting by ruff): the anchor issue 14 names (goal: <= 1.5). Runs alternate; the exact command
   is printed.
3. Scale: a full run on a synthetic spec with 4x the methods and types (the real spec plus three renamed copies of
   every method and type file) against a full run on the real spec, in time (goal: <= 4) and in the peak resident
   memory of the generator process (goal: <= 3). Runs alternate.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import Ratio
from generator import semantics
from generator.semantics import REF_PREFIX

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 5
SCALE_ROUNDS = 3  # a synthetic run takes a few seconds; three pairs keep `make bench` within its budget
SCALE = 4  # the synthetic spec holds the real one and SCALE - 1 renamed copies of it
# Types the meaning checks look up by name (a key parameter must be an IdempotencyKey, and so on).
FIXED_NAMES = frozenset({semantics.IDEMPOTENCY_KEY_TYPE, semantics.RETRY_CLASS_TYPE, semantics.ERROR_CODE_TYPE})
# The options python_pkg.models_source passes to the library, spelled for the command line.
CODEGEN_OPTIONS = (
    "--input-file-type", "jsonschema", "--output-model-type", "pydantic_v2.BaseModel",
    "--target-python-version", "3.10", "--snake-case-field", "--allow-population-by-field-name",
    "--use-annotated", "--field-constraints", "--use-type-alias", "--use-union-operator",
    "--use-standard-collections", "--use-schema-description", "--use-field-description",
    "--enum-field-as-literal", "one", "--disable-timestamp", "--use-double-quotes", "--formatters", "builtin",
    "--type-mappings", "string+uri=string", "string+date-time=string",
)  # fmt: skip


def _generate(root: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "generator", "generate", "--root", str(root)], cwd=ROOT, check=True, capture_output=True
    )
    return time.perf_counter() - start


def run() -> list[Ratio]:
    full, noop = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(ROUNDS):
            root = Path(tmp) / f"round{i}"
            shutil.copytree(ROOT / "spec", root / "spec")
            full.append(_generate(root))  # empty output tree and no cache: everything is rendered and written
            noop.append(_generate(root))  # same inputs, outputs untouched: the shortcut applies
    ratios = [
        Ratio(
            "generate: no-op vs full (seconds per run)",
            statistics.median(noop),
            statistics.median(full),
            "s",
            goal=0.25,
            higher_is_better=False,
        ),
        *_incremental(),
        _against_codegen(),
        *_at_scale(),
    ]
    return ratios


def _timed(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def _against_codegen() -> Ratio:
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        schema_file = ROOT / "generated" / "schema" / "schema.unstable.json"
        out = Path(tmp) / "models.py"
        codegen = [str(Path(sys.executable).with_name("datamodel-codegen")), "--input", str(schema_file)]
        codegen += [*CODEGEN_OPTIONS, "--output", str(out)]
        shown = ["datamodel-codegen", "--input", "generated/schema/schema.unstable.json", *CODEGEN_OPTIONS]
        print("  anchor command: " + " ".join([*shown, "--output", "models.py"]), flush=True)
        for i in range(ROUNDS):
            root = Path(tmp) / f"full{i}"
            shutil.copytree(ROOT / "spec", root / "spec")
            ours.append(_timed([sys.executable, "-m", "generator", "generate", "--root", str(root)], ROOT))
            theirs.append(_timed(codegen, Path(tmp)))
    return Ratio(
        "generate: full run from an empty tree vs the datamodel-codegen CLI on the same schema (seconds per run)",
        statistics.median(ours),
        statistics.median(theirs),
        "s",
        goal=1.5,
        higher_is_better=False,
    )


# What the incremental lines edit: one method's one-line summary, and the description of the first property of
# the first type in one type file (a property description sits at 8 spaces: types > name > properties > name).
SUMMARY_FILE, SUMMARY_LINE = "methods/session-new.yaml", re.compile(r"^summary: (?![>|]).*$", re.M)
TYPE_FILE, PROPERTY_LINE = "types/session.yaml", re.compile(r"^ {8}description: (?![>|]).*$", re.M)


def _append(path: Path, line: re.Pattern[str], text: str) -> None:
    """Append `text` to the first line `line` matches (the bench fails loudly when the spec no longer has one)."""
    source = path.read_text(encoding="utf-8")
    found = line.search(source)
    if found is None:
        raise RuntimeError(f"{path.name}: no line matches {line.pattern}; update the bench")
    path.write_text(source[: found.end()] + text + source[found.end() :], encoding="utf-8")


def _incremental() -> list[Ratio]:
    full, summary, typed = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(ROUNDS):
            root = Path(tmp) / f"incremental{i}"
            shutil.copytree(ROOT / "spec", root / "spec")
            full.append(_generate(root))  # empty output tree and no cache: everything is rendered and written
            _append(root / "spec" / SUMMARY_FILE, SUMMARY_LINE, f" Edited in round {i}.")
            summary.append(_generate(root))
            _append(root / "spec" / TYPE_FILE, PROPERTY_LINE, f" Edited in round {i}.")
            typed.append(_generate(root))
    return [
        Ratio(
            f"generate: edit one method's summary ({SUMMARY_FILE}), then generate vs a full run from an empty tree"
            " (fresh processes, seconds per run)",
            statistics.median(summary),
            statistics.median(full),
            "s",
            goal=0.15,
            higher_is_better=False,
        ),
        Ratio(
            f"generate: edit one type's property description ({TYPE_FILE}), then generate vs a full run from an"
            " empty tree (fresh processes, seconds per run)",
            statistics.median(typed),
            statistics.median(full),
            "s",
            goal=0.6,
            higher_is_better=False,
        ),
    ]


def _at_scale() -> list[Ratio]:
    times: dict[str, list[float]] = {"real": [], "synthetic": []}
    peaks: dict[str, list[float]] = {"real": [], "synthetic": []}
    with tempfile.TemporaryDirectory() as tmp:
        synthetic = Path(tmp) / "synthetic-spec"
        counts = scaled_spec(ROOT / "spec", synthetic, SCALE)
        print(f"  synthetic spec: {counts[0]} method files and {counts[1]} types (real: x{SCALE})", flush=True)
        for i in range(SCALE_ROUNDS):
            for label, spec in (("real", ROOT / "spec"), ("synthetic", synthetic)):
                root = Path(tmp) / f"{label}{i}"
                shutil.copytree(spec, root / "spec")
                seconds, peak = _measured([sys.executable, "-m", "generator", "generate", "--root", str(root)])
                times[label].append(seconds)
                peaks[label].append(peak)
    what = f"full run from an empty tree on a synthetic spec with {SCALE}x the methods and types vs on the real spec"
    return [
        Ratio(
            f"generate at scale: {what} (seconds per run)",
            statistics.median(times["synthetic"]),
            statistics.median(times["real"]),
            "s",
            goal=4.0,
            higher_is_better=False,
        ),
        Ratio(
            f"generate at scale: {what} (peak resident memory of the generator process)",
            statistics.median(peaks["synthetic"]),
            statistics.median(peaks["real"]),
            "MiB",
            goal=3.0,
            higher_is_better=False,
        ),
    ]


def _measured(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MiB) of one fresh process; its own rusage, not the bench's."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {process.returncode}")
    return seconds, usage.ru_maxrss / 1024  # Linux reports kibibytes


def scaled_spec(source: Path, target: Path, scale: int) -> tuple[int, int]:
    """Copy the spec at `source` to `target` with `scale - 1` renamed copies of every method and type file.

    Copy k renames each type T to `T` + `Copy<k>` (and every `$ref` to it) in `types/<family>copy<k>.yaml`, and each
    method M to `M_copy<k>` whose params and result name the renamed types. Returns the number of method files and
    of types, so the caller can show what was built.
    """
    shutil.copytree(source, target)
    families = {path: _read(path) for path in sorted((source / "types").glob("*.yaml"))}
    methods = {path: _read(path) for path in sorted((source / "methods").glob("*.yaml"))}
    names = {name for data in families.values() for name in data["types"]}
    for k in range(1, scale):

        def renamed(name: str, k: int = k) -> str:
            return f"{name}Copy{k}" if name in names else name

        def referred(name: str, k: int = k) -> str:  # the checks want these types by name: refs keep the originals
            return name if name in FIXED_NAMES else renamed(name, k)

        for path, data in families.items():
            copy = {**data, "types": {renamed(n): _renamed_refs(t, referred) for n, t in data["types"].items()}}
            _write(target / "types" / f"{path.stem}copy{k}.yaml", copy)
        for path, data in methods.items():
            copy = {**data, "method": f"{data['method']}_copy{k}"}
            for field in ("params", "result"):
                if field in copy:
                    copy[field] = renamed(copy[field])
            _write(target / "methods" / f"{path.stem}-copy{k}.yaml", copy)
    return len(methods) * scale, len(names) * scale


def _renamed_refs(value: Any, renamed: Any) -> Any:
    if isinstance(value, dict):
        return {key: _renamed_refs(item, renamed) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed_refs(item, renamed) for item in value]
    if isinstance(value, str) and value.startswith(REF_PREFIX):
        return REF_PREFIX + renamed(value.removeprefix(REF_PREFIX))
    return value


def _read(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _write(path: Path, data: Any) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
