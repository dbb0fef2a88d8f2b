"""Regenerate the expected reports of the diff fixture pairs: `python -m tests.diff.regen` (part of `make golden`).

Review the diff before committing: an expected report is a reviewed statement of what each rule reports.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.diff.support import CASES, case_names, run_case


def main() -> int:
    for case in case_names():
        for fmt, name in (("text", "expected.txt"), ("json", "expected.json")):
            with tempfile.TemporaryDirectory() as tmp:
                status, out, err = run_case(case, Path(tmp), fmt)
            if status == 2:
                raise SystemExit(f"diff case {case} does not load:\n{err}")
            (CASES / case / name).write_text(out)
        (CASES / case / "expected.status").write_text(f"{status}\n")
        print(f"diff case: {case} (exit {status})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
