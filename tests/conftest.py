"""Make the repository root importable (for `generator` and `tests.support`) and the generated package too."""

import sys
from pathlib import Path

from generator import paths

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / paths.PYTHON_DIST):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
sys.dont_write_bytecode = True  # keep generated/ free of caches so `make check` sees only what we wrote
