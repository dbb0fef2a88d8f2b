"""Run every benchmark module and print one line per ratio; exit 1 if a goal is missed (informational lines,
which have no goal, never count).

With more than one module to run, each runs in a fresh interpreter of its own: what a module leaves behind in the
process (a large heap, models built long before, imports) must not tilt the figures of the modules after it.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import bench

_ONE = "--module"  # run one module here and end with its count of missed goals (how the parent runs each module)
_MISSED = "== missed: "


def _run_here(name: str) -> int:
    """Run module `name` in this process, print its lines; the number of goals it missed."""
    module = importlib.import_module(f"bench.{name}")
    print(f"== {name}", flush=True)
    missed = 0
    for result in module.run():
        print(result.line(), flush=True)
        missed += result.goal is not None and not result.met
    return missed


def _run_apart(name: str) -> int:
    """Run module `name` in a fresh interpreter, passing its lines on; the number of goals it missed."""
    child = subprocess.Popen([sys.executable, "-m", "bench", _ONE, name], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    missed = None
    for line in child.stdout:
        if line.startswith(_MISSED):
            missed = int(line.removeprefix(_MISSED))
        else:
            print(line, end="", flush=True)
    if child.wait() != 0 or missed is None:
        raise SystemExit(f"bench: {name} failed (exit status {child.returncode})")
    return missed


def main() -> int:
    if sys.argv[1:2] == [_ONE]:
        print(f"{_MISSED}{_run_here(sys.argv[2])}", flush=True)
        return 0
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(Path(bench.__file__).parent)]) if m.name.startswith("bench_")
    )
    known = [name.removeprefix("bench_") for name in names]
    only = set(sys.argv[1:])
    if only - set(known):
        # A misspelt name would otherwise run nothing and report every goal met.
        print(f"bench: no benchmark named {', '.join(sorted(only - set(known)))}", file=sys.stderr)
        print(f"usage: python -m bench [NAME ...]   (names: {' '.join(known)}; none: all)", file=sys.stderr)
        return 2
    chosen = [name for name in names if not only or name.removeprefix("bench_") in only]
    missed = _run_here(chosen[0]) if len(chosen) == 1 else sum(_run_apart(name) for name in chosen)
    print(f"bench: {missed} goal(s) missed" if missed else "bench: every goal met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
