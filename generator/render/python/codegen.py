"""datamodel-code-generator, called as a library in this process or in a worker process of its own.

The code generator takes most of a full run, and it shares nothing with the other renderers: its input (the
schema's skeleton, render/python/described.py) is known as soon as the model is built. So `render_all` hands that input
to a worker process (`begin`) before it renders anything else, and the Python renderer takes the worker's output
when it gets there (`take`); on two cores the rest of the run costs little more than waiting. A run that is likely
to need the code generator (no memo of its output yet) starts the worker before the spec is even loaded (`warm`),
so that the worker imports the library meanwhile; a run that reuses the memo starts none.

The worker is a fresh interpreter (`python -c`, not a fork), so its memory is its own: the benchmark counts it
beside the generator's. It reads one request (JSON: the schema text and the file header) from its standard input,
and writes one answer (JSON: the models, or the error) to its standard output. Its output is the library's output
for the same text and options, byte for byte. A worker that fails surfaces as a `CodegenError`, which the command
line reports in one line (exit 2, nothing written); a worker whose output nobody took is killed (`stop`).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

TARGET_PYTHON = "3.10"
# Run in the worker: the project folder first on the path, so that it imports this module, whatever the cwd.
_ENTRY = "import sys; sys.path.insert(0, sys.argv[1]); from generator.render.python.codegen import serve; serve()"
_PROJECT = Path(__file__).resolve().parents[3]
# The library's modules that its `generate` imports on first call: the worker imports them before its input comes.
_LIBRARY_MODULES = (
    "datamodel_code_generator.config",
    "datamodel_code_generator.format",
    "datamodel_code_generator.model.pydantic_v2",
    "datamodel_code_generator.parser.jsonschema",
)


class CodegenError(Exception):
    """The code generator failed in the worker process (the message says how)."""


def options() -> dict[str, Any]:
    """The code generator's options, as keyword arguments of its `generate`: the one list of them (the benchmark
    times its command line with the same options, spelled by `command_line`)."""
    from datamodel_code_generator import DataModelType, InputFileType, PythonVersion

    return {
        "input_file_type": InputFileType.JsonSchema,
        "output_model_type": DataModelType.PydanticV2BaseModel,
        "target_python_version": PythonVersion(TARGET_PYTHON),
        "snake_case_field": True,
        "allow_population_by_field_name": True,
        "use_annotated": True,
        "field_constraints": True,
        "use_type_alias": True,
        "use_union_operator": True,
        "use_standard_collections": True,
        "use_schema_description": True,
        "use_field_description": True,
        "enum_field_as_literal": "one",
        "disable_timestamp": True,
        "use_double_quotes": True,
        "formatters": ["builtin"],
        # JSON Schema formats are annotations: keep uri and date-time values as the strings that were sent
        # (pydantic's AnyUrl rewrites URLs on output, and importing it costs a tenth of the import time).
        "type_mappings": ["string+uri=string", "string+date-time=string"],
    }


def command_line(keywords: dict[str, Any]) -> list[str]:
    """`keywords` (as `options` gives them) spelled as `datamodel-codegen` command-line arguments."""
    args: list[str] = []
    for name, value in keywords.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, list):
            args += [flag, *map(str, value)]
        else:
            args += [flag, str(getattr(value, "value", value))]  # an enum member by its value
    return args


def generate_models(text: str, header: str) -> str:
    """The library's pydantic v2 models for the JSON Schema `text`, with `header` on top (in this process)."""
    from datamodel_code_generator import generate

    with warnings.catch_warnings(), _collector_paused():
        warnings.simplefilter("ignore")  # the library announces future default changes; our options are explicit
        return str(generate(text, **options(), custom_file_header=header))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector: the code generator makes a few hundred thousand objects that live until it
    returns, and the collector's passes over them cost about a twentieth of the call (for a few MB more at peak)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -- the generator's side ----------------------------------------------------------------------------------------
class _Worker:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.text: str | None = None  # the schema text it was given


_worker: _Worker | None = None
# The peak resident memory (KiB, as the OS reports it) of each worker this process has ended: the benchmark adds it
# to the generator's own (bench/bench_generate.py). Counted here because a process's figure for its children mixes
# in those started later (each child's starts from its parent's peak so far, which it inherits until it execs).
worker_peaks: list[int] = []


def warm() -> None:
    """Start a worker now, to import the library while the spec is loaded (`begin` gives it its input)."""
    global _worker
    if _worker is None and sys.executable:
        import subprocess

        process = subprocess.Popen(
            [sys.executable, "-c", _ENTRY, str(_PROJECT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # every failure comes back in the answer
        )
        _worker = _Worker(process)


def begin(text: str, header: str) -> None:
    """Have a worker make the models of `text` (starting one if `warm` did not); `take` returns them."""
    warm()
    if _worker is None or _worker.text is not None:
        return  # no interpreter to start, or the worker is busy: `take` finds nothing and the caller runs it here
    _worker.text = text
    stdin = _stream(_worker.process.stdin)
    try:
        stdin.write(json.dumps({"text": text, "header": header}).encode("utf-8"))
        stdin.close()
    except OSError:
        pass  # the worker ended early: `take` reports why


def take(text: str) -> str | None:
    """The models of `text` from the worker given it (waiting for them), or None when no worker was given `text`.

    Raises CodegenError when the worker failed.
    """
    global _worker
    if _worker is None or _worker.text != text:
        return None
    worker = _worker  # kept until it has ended: a run interrupted meanwhile ends it in `stop`
    with _stream(worker.process.stdout) as stdout:
        answer = stdout.read()
    status = _reaped(worker.process)
    _worker = None
    try:
        result = json.loads(answer)
    except ValueError:
        message = f"the code generator's worker process ended without an answer (exit status {status})"
        raise CodegenError(message) from None
    if "error" in result:
        raise CodegenError(f"datamodel-code-generator failed: {result['error']}")
    return str(result["models"])


def stop() -> None:
    """End a worker whose output was not taken (the run failed, or did not need it)."""
    global _worker
    if _worker is not None:
        worker, _worker = _worker, None
        worker.process.kill()
        _reaped(worker.process)
        for stream in (worker.process.stdin, worker.process.stdout):
            if stream is not None:
                stream.close()


def _reaped(process: subprocess.Popen[bytes]) -> int:
    """Wait for `process` to end; its exit status (negative: the signal that ended it). Its peak memory is kept."""
    if not hasattr(os, "wait4"):
        return process.wait()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    worker_peaks.append(usage.ru_maxrss)
    return process.returncode


def _stream(stream: IO[bytes] | None) -> IO[bytes]:
    if stream is None:
        raise RuntimeError("the worker process has no pipe")
    return stream


# -- the worker's side -------------------------------------------------------------------------------------------
def serve() -> None:
    """The worker: import the library while the request comes in, then answer it (see the module docstring)."""
    import importlib
    import threading

    request: list[bytes] = []
    reader = threading.Thread(target=lambda: request.append(sys.stdin.buffer.read()))
    reader.start()  # the generator's write never waits for the imports
    try:
        for name in _LIBRARY_MODULES:
            importlib.import_module(name)
        reader.join()
        if not request or not request[0]:
            return  # the generator needed no models after all
        asked = json.loads(request[0])
        answer = {"models": generate_models(asked["text"], asked["header"])}
    except KeyboardInterrupt:
        return
    except Exception as exc:  # every failure goes back to the generator, which reports it
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.buffer.write(json.dumps(answer).encode("utf-8"))
    sys.stdout.flush()
