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
