"""Two consecutive releases of the published ACP package, fetched at test time (never committed), and the reviewed
report of `diff` between their schema/v2/schema.unstable.json.

Regenerate the snapshots with `python -m tests.diff.releases` (needs npm and the network) and review the diff.
"""

from __future__ import annotations

import sys
from pathlib import Path

from generator.read.published import fetch_upstream
from tests.support import run_generator

HERE = Path(__file__).resolve().parent / "releases"
# Consecutive releases whose v2 schemas differ (2.3.0 -> 2.4.0 ships the same schema, which is checked too).
PAIRS = (("2.2.0", "2.3.0"), ("2.3.0", "2.4.0"))


def fetch(dest: Path, version: str) -> Path:
    """The release's schema.unstable.json (with its schema.json beside it, for stability) under dest/<version>/."""
    unstable, _ = fetch_upstream(dest / version, version)
    return unstable


def diff_releases(dest: Path, old: str, new: str) -> tuple[int, str]:
    """Exit status and text report of `diff` between two fetched releases (paths relative to dest)."""
    result = run_generator("diff", str(fetch(dest, old)), str(fetch(dest, new)), "--root", str(dest))
    assert "Traceback" not in result.err, result.err
    return result.status, result.out


def snapshot(old: str, new: str) -> Path:
    return HERE / f"{old}-{new}.txt"


def main() -> int:
    import tempfile

    HERE.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for old, new in PAIRS:
            status, out = diff_releases(Path(tmp), old, new)
            snapshot(old, new).write_text(f"# exit {status}\n{out}")
            print(f"releases {old} -> {new}: exit {status}, {len(out.splitlines())} line(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
