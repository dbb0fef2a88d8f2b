"""Make the repository root importable (for `generator` and `tests.support`).

The generated package and the runtime are installed editable into .venv by the Makefile, so the tests import them
as a user would.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.dont_write_bytecode = True  # keep generated/ free of caches so `make check` sees only what we wrote


def pytest_report_header(config):
    """Say up front which prerequisites are missing, so skips are expected rather than discovered."""
    from tests.skips import header_lines

    return header_lines()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """End the run with every skip grouped by its reason."""
    from tests.skips import summary_lines

    lines = summary_lines(report.longrepr for report in terminalreporter.stats.get("skipped", []))
    if lines:
        terminalreporter.section("skipped, and why")
        for line in lines:
            terminalreporter.line(line)
