"""`diff` of two copies of the full spec that differ in one type, against a full `generate`, both as fresh
processes on the same copies, interleaved (goal: <= 0.2)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from bench.common import Ratio, compile_generator, interleaved

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 9  # interleaved pairs; the median of nine damps the noise of a shared machine, which slows whole
# stretches of seconds (five had let this line read anywhere from 0.13 to 0.23 from one run to the next)
CHANGED_FILE, CHANGED_TYPE = "types/session.yaml", "NewSessionRequest"  # gets a tighter constraint in the copy


def _copies(tmp: Path) -> tuple[Path, Path]:
    old, new = tmp / "old" / "spec", tmp / "new" / "spec"
    shutil.copytree(ROOT / "spec", old)
    shutil.copytree(ROOT / "spec", new)
    path = new / CHANGED_FILE
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["types"][CHANGED_TYPE]["maxProperties"] = 64  # a real change, reported as constraint-tightened
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return old, new


def run() -> list[Ratio]:
    compile_generator()  # both commands load the generator's bytecode (bench/common.py)
    with tempfile.TemporaryDirectory() as tmp:
        old, new = _copies(Path(tmp))
        out = Path(tmp) / "new"
        diff_cmd = [sys.executable, "-m", "generator", "diff", str(old), str(new), "--root", tmp]
        gen_cmd = [sys.executable, "-m", "generator", "generate", "--force", "--root", str(out)]
        done = subprocess.run(diff_cmd, cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode != 1 or "breaking[constraint-tightened]" not in done.stdout:  # the bench must diff real work
            raise RuntimeError(f"diff did not report the change:\n{done.stdout}{done.stderr}")

        def diff() -> None:
            subprocess.run(diff_cmd, cwd=ROOT, capture_output=True, check=False)

        def generate() -> None:
            subprocess.run(gen_cmd, cwd=ROOT, capture_output=True, check=True)

        ours, reference = interleaved(diff, generate, rounds=ROUNDS)
    return [
        Ratio(
            "diff: two full specs differing in one type vs a full generate (seconds per fresh process)",
            ours,
            reference,
            "s",
            goal=0.2,
            higher_is_better=False,
        )
    ]
