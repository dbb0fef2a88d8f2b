"""`generate` timed as a user waits for it: fresh processes on a copy of the real spec.

1. A no-op run against a full one on the same copy (goal: <= 0.25).
2. Incremental runs, each against a full run from an empty tree on its own copy of the spec: one method's
   `summary` edited, then `generate` (goal: <= 0.15); one type's property description edited, then `generate`
   (goal: <= 0.6). The edits differ each round, so every run has real work; runs alternate.
3. A full run from an empty output tree (every artifact: schemas, models, SDK tables, vectors, docs pages) against
   the `datamodel-codegen` command line run with the same options on the schema our run writes (only the models,
   one module, no formatting by ruff): the anchor issue 14 names (goal: <= 1.5). Runs alternate; the exact command
   is printed.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import Ratio

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 5
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
