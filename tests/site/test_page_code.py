"""The Python examples on the hand-written pages for SDK authors run as written against the installed packages."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support import ROOT

PAGES = ("sdk-authors.md",)
EXAMPLES = [
    (page, number, code)
    for page in PAGES
    for number, code in enumerate(re.findall(r"```python\n(.*?)```", (ROOT / "site" / page).read_text("utf-8"), re.S))
]


@pytest.mark.parametrize(("page", "number", "code"), EXAMPLES, ids=[f"{p}-{n}" for p, n, _ in EXAMPLES])
def test_page_example_runs(page: str, number: int, code: str, tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False
    )
    assert done.returncode == 0, f"{page} example {number}:\n{done.stderr}"
