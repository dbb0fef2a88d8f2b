"""The helpers page's examples run as written, against the installed packages."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from agent_client import ROOT, environment

PAGE = ROOT / "site" / "keyed-prompts-helpers.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


@pytest.mark.parametrize("number", range(len(EXAMPLES)))
def test_page_example_runs(number, tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", EXAMPLES[number]],
        capture_output=True,
        text=True,
        env=environment(),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
