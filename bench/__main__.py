"""Run every benchmark module and print one line per ratio; exit 1 if a goal is missed (informational lines,
which have no goal, never count)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import bench


def main() -> int:
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(Path(bench.__file__).parent)]) if m.name.startswith("bench_")
    )
    only = set(sys.argv[1:])
    missed = 0
    for name in names:
        if only and name.removeprefix("bench_") not in only:
            continue
        module = importlib.import_module(f"bench.{name}")
        print(f"== {name}", flush=True)
        for result in module.run():
            print(result.line(), flush=True)
            missed += result.goal is not None and not result.met
    print(f"bench: {missed} goal(s) missed" if missed else "bench: every goal met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
