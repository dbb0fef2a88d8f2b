"""Entry point for `python -m generator`."""

import atexit
import gc
import os
import sys

# A run builds a spec model of some hundred thousand objects that live until the process ends, and every 700 new
# objects (the default) the cycle collector walks the youngest of them, finding no garbage: about a tenth of a
# diff's time here (249 ms against 273 with the default, and 261 with a first pass every 20,000; medians of 7) and
# a few percent of a generate's. A rarer first pass keeps the collector (a run still frees its cycles) and, unlike
# turning it off, leaves the peak memory of a synthetic spec four times the real one's unchanged (253 MiB; 275
# with the collector off). Only this entry point does so.
gc.set_threshold(100_000, 10, 10)

from .cli import main  # noqa: E402 (after the collector is set: the imports make objects too)

status = main()
# Every command has closed what it wrote and stopped its code generator worker when `main` returns, so what is left
# is the interpreter's teardown, which frees the objects of the loaded spec (two specs for a diff), the templates and
# the validators one by one: 20 to 50 ms of an incremental generate's 250 to 400 here (0.36 against 0.32 s, medians
# of 12 interleaved runs), and 25 ms of a diff's. It is skipped; exit handlers still run (a temporary directory's
# clean-up among them), and what was printed is flushed. Only this entry point does so; `main()` called in a process
# returns as usual.
atexit._run_exitfuncs()  # what a normal exit runs first (CPython's own function; no thread of ours is left)
try:
    sys.stdout.flush()
    sys.stderr.flush()
except (OSError, ValueError):  # a closed pipe: what was not read is lost either way
    pass
os._exit(status)
