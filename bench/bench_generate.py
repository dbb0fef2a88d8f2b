"""`generate` timed as a user waits for it: fresh processes on copies of the real spec.

Every line compares with the same reference, a full run from an empty output tree and no cache on a fresh copy of
the real spec (every artifact: schemas, models, SDK tables, vectors, docs pages). Each round makes one such run and,
right after it, one run of every other kind, so that the runs of each line alternate with its reference and machine
noise hits both alike; each line is the median of its rounds against the median of the full runs.

1. A no-op run on the copy the full run just wrote (goal: <= 0.25).
2. Incremental runs on that copy: one method's `summary` edited, then `generate` (goal: <= 0.15); then one type's
   property description edited, then `generate` (goal: <= 0.6). The edits differ each round, so every run has real
   work.
3. The `datamodel-codegen` command line run with the same options on the schema our run writes (only the models,
   one module, no formatting by ruff): the anchor issue 14 names (goal: full run <= 1.5 times it). The exact command
   is printed.
4. Scale: a full run on a synthetic spec with 4x the methods and types (the real spec plus three renamed copies of
   every method and type file), in time (goal: <= 4) and in peak resident memory (goal: <= 3); in the first
   SCALE_ROUNDS rounds only (each takes several full runs' time). The code generator runs in a worker process of
   the generator's (generator/render/python/codegen.py), so the memory figure of a run is the generator process's peak
   plus its worker's: an upper bound on what they hold at once (the short ruff runs, as before, are not counted).
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

from bench.common import Ratio, compile_generator
from generator.check import semantics
from generator.model import naming
from generator.model.spec import REF_PREFIX
from generator.render.python.codegen import command_line, options

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 7  # medians of seven: the first round's colder caches weigh no more than any other
SCALE_ROUNDS = 3  # a synthetic run takes a few full runs' time; three keep `make bench` within its budget
SCALE = 4  # the synthetic spec holds the real one and SCALE - 1 renamed copies of it
# Types the meaning checks look up by name (a key parameter must be an IdempotencyKey, and so on).
FIXED_NAMES = frozenset({semantics.IDEMPOTENCY_KEY_TYPE, semantics.RETRY_CLASS_TYPE, semantics.ERROR_CODE_TYPE})
# What the incremental lines edit: one method's one-line summary, and the description of the first property of
# the first type in one type file (a property description sits at 8 spaces: types > name > properties > name).
SUMMARY_FILE, SUMMARY_LINE = "methods/session-new.yaml", re.compile(r"^summary: (?![>|]).*$", re.M)
TYPE_FILE, PROPERTY_LINE = "types/session.yaml", re.compile(r"^ {8}description: (?![>|]).*$", re.M)
FULL = "a full run from an empty tree"
# `python -m generator ARGS` as `python -c LAUNCHER REPORT ARGS`: the same run, which then writes to the file REPORT
# the peak resident memory (KiB) of its own process and of each code generator worker it ran. An exit handler writes
# it: the generator's entry point ends its process right after running them (generator/__main__.py).
LAUNCHER = """
import atexit, resource, runpy, sys
report = sys.argv.pop(1)

def write_report():
    codegen = sys.modules.get("generator.render.python.codegen")
    peaks = [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, *getattr(codegen, "worker_peaks", ())]
    with open(report, "w") as out:
        out.write(" ".join(map(str, peaks)))

atexit.register(write_report)
runpy.run_module("generator", run_name="__main__", alter_sys=True)
"""


def run() -> list[Ratio]:
    compile_generator()  # the library runs from the bytecode pip wrote; so does the generator (bench/common.py)
    times: dict[str, list[float]] = {}
    peaks: dict[str, list[float]] = {"full": [], "synthetic": []}

    def timed(label: str, argv: list[str], cwd: Path = ROOT) -> None:
        seconds, peak = _measured(argv, cwd, report if argv[1:3] == ["-c", LAUNCHER] else None)
        times.setdefault(label, []).append(seconds)
        if label in peaks:
            peaks[label].append(peak)

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "peaks.txt"
        synthetic = Path(tmp) / "synthetic-spec"
        counts = scaled_spec(ROOT / "spec", synthetic, SCALE)
        print(f"  synthetic spec: {counts[0]} method files and {counts[1]} types (real: x{SCALE})", flush=True)
        codegen_options = command_line(options())  # the generator's own options, spelled for the command line
        codegen = [str(Path(sys.executable).with_name("datamodel-codegen")), "--input"]
        codegen += [str(ROOT / "generated" / "schema" / "schema.unstable.json"), *codegen_options, "--output"]
        shown = ["datamodel-codegen", "--input", "generated/schema/schema.unstable.json", *codegen_options]
        print("  anchor command: " + " ".join([*shown, "--output", "models.py"]), flush=True)
        for i in range(ROUNDS):
            root = Path(tmp) / f"round{i}"
            shutil.copytree(ROOT / "spec", root / "spec")
            timed("full", _generate(root, report))  # empty output tree and no cache: everything is rendered and written
            timed("no-op", _generate(root, report))  # same inputs, outputs untouched: the shortcut applies
            _append(root / "spec" / SUMMARY_FILE, SUMMARY_LINE, f" Edited in round {i}.")
            timed("summary", _generate(root, report))
            _append(root / "spec" / TYPE_FILE, PROPERTY_LINE, f" Edited in round {i}.")
            timed("type", _generate(root, report))
            timed("codegen", [*codegen, str(Path(tmp) / f"models{i}.py")], Path(tmp))
            if i < SCALE_ROUNDS:
                big = Path(tmp) / f"synthetic{i}"
                shutil.copytree(synthetic, big / "spec")
                timed("synthetic", _generate(big, report))
    full = statistics.median(times["full"])

    def ratio(name: str, label: str, goal: float, reference: float = full, unit: str = "s") -> Ratio:
        ours = statistics.median(times[label] if unit == "s" else peaks[label])
        return Ratio(name, ours, reference, unit, goal=goal, higher_is_better=False)

    per_run = "(fresh processes, seconds per run)"
    summary_edit = f"edit one method's summary ({SUMMARY_FILE}), then generate"
    type_edit = f"edit one type's property description ({TYPE_FILE}), then generate"
    scaled = f"full run from an empty tree on a synthetic spec with {SCALE}x the methods and types vs on the real spec"
    real, real_peak = (statistics.median(values[:SCALE_ROUNDS]) for values in (times["full"], peaks["full"]))
    return [
        ratio(f"generate: no-op vs {FULL} {per_run}", "no-op", 0.25),
        ratio(f"generate: {summary_edit} vs {FULL} {per_run}", "summary", 0.15),
        ratio(f"generate: {type_edit} vs {FULL} {per_run}", "type", 0.6),
        Ratio(
            f"generate: {FULL} vs the datamodel-codegen CLI on the same schema {per_run}",
            full,
            statistics.median(times["codegen"]),
            "s",
            goal=1.5,
            higher_is_better=False,
        ),
        ratio(f"generate at scale: {scaled} (seconds per run)", "synthetic", 4.0, real),
        ratio(
            f"generate at scale: {scaled} (peak resident memory of the generator process plus its worker's)",
            "synthetic",
            3.0,
            real_peak,
            "MiB",
        ),
    ]


def _generate(root: Path, report: Path) -> list[str]:
    """`python -m generator generate --root ROOT`, through LAUNCHER (which writes `report`)."""
    return [sys.executable, "-c", LAUNCHER, str(report), "generate", "--root", str(root)]


def _append(path: Path, line: re.Pattern[str], text: str) -> None:
    """Append `text` to the first line `line` matches (the bench fails loudly when the spec no longer has one)."""
    source = path.read_text(encoding="utf-8")
    found = line.search(source)
    if found is None:
        raise RuntimeError(f"{path.name}: no line matches {line.pattern}; update the bench")
    path.write_text(source[: found.end()] + text + source[found.end() :], encoding="utf-8")


def _measured(argv: list[str], cwd: Path, report: Path | None = None) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MiB) of one fresh process: its own rusage, not the bench's, or, for a
    generator run that writes `report` (LAUNCHER), the sum of the peaks it reports."""
    if report is not None:
        report.unlink(missing_ok=True)
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {process.returncode}")
    peaks = [int(peak) for peak in report.read_text().split()] if report is not None else [usage.ru_maxrss]
    return seconds, sum(peaks) / 1024  # Linux reports kibibytes


def scaled_spec(source: Path, target: Path, scale: int) -> tuple[int, int]:
    """Copy the spec at `source` to `target` with `scale - 1` renamed copies of every method and type file.

    Copy k renames each type T to `T` + `Copy<k>` (and every `$ref` to it) in `types/<family>copy<k>.yaml`, and each
    method M to `M_copy<k>` whose params and result name the renamed types, with M's worked example copied under the
    copy's slug and its messages of M sent as `M_copy<k>` (every entry needs an example once the spec has some).
    Returns the number of method files and of types, so the caller can show what was built.
    """
    shutil.copytree(source, target)
    families = {path: _read(path) for path in sorted((source / "types").glob("*.yaml"))}
    methods = {path: _read(path) for path in sorted((source / "methods").glob("*.yaml"))}
    names = {name for data in families.values() for name in data["types"]}
    twins = naming.twins([data["method"] for data in methods.values()])

    def slug(method: str, kind: str, original: str) -> str:
        return naming.method_slug(method, kind, has_twin=original in twins)

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
            example = source / "examples" / f"{slug(data['method'], data['kind'], data['method'])}.yaml"
            if example.is_file():
                _write(
                    target / "examples" / f"{slug(copy['method'], data['kind'], data['method'])}.yaml",
                    _renamed_method(_read(example), data["method"], copy["method"]),
                )
    return len(methods) * scale, len(names) * scale


def _renamed_method(example: Any, method: str, renamed: str) -> Any:
    """The worked example with its messages of `method` (requests and notifications) sent as `renamed`."""
    for step in example["steps"]:
        if step["message"].get("method") == method:
            step["message"] = {**step["message"], "method": renamed}
    return example


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
