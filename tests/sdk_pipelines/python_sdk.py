"""The Python ACP SDK's own generator (`scripts/gen_all.py` of `agent-client-protocol` 0.12.1), run on a schema.

Nothing of the SDK is kept in this repository. Its sdist is fetched with pip at test time, checked against the
sha256 PyPI publishes for it, and cached in `.cache/sdk-pipelines/`; its generator toolchain (pinned in
`python-sdk-tools.txt`) gets a virtual environment of its own there, and so does an older one with
datamodel-code-generator 0.35 (`python-sdk-tools-0.35.txt`) for the corpus test. CI builds both in
`.ci/setup.d/14-python-sdk-tools.sh`; elsewhere the first test that needs one builds it.

How gen_all.py finds its inputs, and how we drive it without editing it: it takes the directory above its
`scripts/` as the project root, reads `schema/schema.json` and `schema/meta.json` there (with no `--version` and
both present it downloads nothing), writes `src/acp/schema.py` and `src/acp/meta.py`, lets `gen_signature.py`
rewrite the `@param_model` methods of the SDK's hand-written API modules, and formats five named files with ruff.
So each run gets a fresh temporary root holding the sdist's `scripts/` and `pyproject.toml` (the ruff settings),
`src/acp/_deserialize.py` (which the generated module imports) and the shipped `src/acp/schema.py` (which
gen_signature.py loads on import), the schema under test as `schema/schema.json` (the SDK's own download puts
the unstable file there) and its method names as `schema/meta.json`. The SDK's hand-written API layer is left
out: it is written against the v1 schema, so no v2 schema, the published one included, could pass
gen_signature.py with it. Empty stand-ins for the API modules keep the format step's file list valid, and an
empty `acp/__init__.py` lets `acp._deserialize` import without that layer; `src` is on PYTHONPATH as in the
SDK's own editable checkout.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import ROOT

SDK_NAME = "agent-client-protocol"
SDK_VERSION = "0.12.1"
SDIST = f"agent_client_protocol-{SDK_VERSION}.tar.gz"
# The sha256 PyPI publishes for that sdist; a download that hashes otherwise is refused.
SDIST_SHA256 = "9963ccb590ed96d7dc542c9c023e90676fc76b1c6562e21a9ee112f4fbcb0095"
SDIST_ROOT = f"agent_client_protocol-{SDK_VERSION}"
# What a run copies out of the sdist (paths below SDIST_ROOT).
SDIST_MEMBERS = (
    "pyproject.toml",
    "scripts/__init__.py",
    "scripts/gen_all.py",
    "scripts/gen_meta.py",
    "scripts/gen_schema.py",
    "scripts/gen_signature.py",
    "src/acp/_deserialize.py",
    "src/acp/schema.py",
)
# Empty stand-ins for the SDK's hand-written modules (see the module docstring).
EMPTY_MODULES = (
    "src/acp/__init__.py",
    "src/acp/interfaces.py",
    "src/acp/agent/connection.py",
    "src/acp/client/connection.py",
)
OUTPUT = "src/acp/schema.py"

HERE = Path(__file__).resolve().parent
TOOLS = HERE / "python-sdk-tools.txt"
OLDER_TOOLS = HERE / "python-sdk-tools-0.35.txt"  # the same with datamodel-code-generator 0.35.0
CACHE = ROOT / ".cache" / "sdk-pipelines"


class SetupError(RuntimeError):
    """The SDK or its toolchain could not be fetched or installed (no network, or not what was pinned)."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch_sdist(cache: Path = CACHE) -> Path:
    """The pinned sdist, from the cache or fetched with pip, checked against its published sha256."""
    target = cache / SDIST
    if target.is_file() and _sha256(target) == SDIST_SHA256:
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="acp-sdist-", dir=cache) as tmp:
        args = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:"]
        done = subprocess.run(
            [*args, "--dest", tmp, f"{SDK_NAME}=={SDK_VERSION}"], capture_output=True, text=True, check=False
        )
        found = Path(tmp) / SDIST
        if done.returncode != 0 or not found.is_file():
            raise SetupError(f"pip download {SDK_NAME}=={SDK_VERSION} failed: {done.stderr.strip()[-500:]}")
        if _sha256(found) != SDIST_SHA256:
            raise SetupError(f"{SDIST} does not match its pinned sha256; not using it")
        found.replace(target)
    return target


def tool_python(cache: Path = CACHE, tools: Path = TOOLS) -> Path:
    """The interpreter of a toolchain's own virtual environment (`tools`: its pin list), built once per version of
    the pin list."""
    pins = tools.read_bytes()
    venv = cache / f"{tools.stem}-{hashlib.sha256(pins).hexdigest()[:12]}"
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if stamp.is_file():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    steps = (
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "-r", str(tools)],
        [str(python), "-m", "pip", "check", "--disable-pip-version-check"],  # the pin list must be complete
    )
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SetupError(f"{' '.join(step[:4])} failed: {(done.stdout + done.stderr).strip()[-800:]}")
    stamp.write_text(f"installed from {tools.name}\n", encoding="utf-8")
    return python


@dataclass(frozen=True)
class Run:
    """One gen_all.py run: where it ran, how it ended, what it printed, and how long it took."""

    root: Path
    returncode: int
    output: str
    seconds: float
    shipped: bytes  # the sdist's own schema.py, which the layout starts from

    @property
    def module(self) -> Path:
        return self.root / OUTPUT

    @property
    def generated(self) -> bool:
        """Whether the run wrote a module of its own (a run that stops early leaves the shipped one)."""
        return self.module.is_file() and self.module.read_bytes() != self.shipped

    def first_error(self) -> str:
        """The exception line of a failed run (the last `...Error:` line of its traceback), else the last line."""
        return error_line(self.output) or f"exit status {self.returncode}"


EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*$", re.MULTILINE)


def error_line(printed: str) -> str | None:
    """The line naming the exception that ended a Python process (pydantic adds a help link after it)."""
    found = [match.group(0) for match in EXCEPTION_LINE.finditer(printed)]
    if found:
        return found[-1]
    lines = [line for line in printed.splitlines() if line.strip()]
    return lines[-1] if lines else None


def lay_out(sdist: Path, root: Path, schema_file: Path, meta: dict[str, Any]) -> None:
    """A fresh project root that gen_all.py reads as its own (see the module docstring)."""
    with tarfile.open(sdist, mode="r:gz") as archive:
        for member in SDIST_MEMBERS:
            handle = archive.extractfile(f"{SDIST_ROOT}/{member}")
            if handle is None:
                raise SetupError(f"{member} in {SDIST} is not a file")
            (root / member).parent.mkdir(parents=True, exist_ok=True)
            (root / member).write_bytes(handle.read())
    for empty in EMPTY_MODULES:
        (root / empty).parent.mkdir(parents=True, exist_ok=True)
        (root / empty).write_text("", encoding="utf-8")
    (root / "schema").mkdir()
    shutil.copyfile(schema_file, root / "schema" / "schema.json")
    (root / "schema" / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def sdk_environment(root: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ACP_SCHEMA", "PYTHON"))}
    env["PYTHONPATH"] = str(root / "src")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_gen_all(python: Path, sdist: Path, root: Path, schema_file: Path, meta: dict[str, Any]) -> Run:
    """Lay out `root` and run the SDK's gen_all.py in it, with nothing downloaded."""
    lay_out(sdist, root, schema_file, meta)
    shipped = (root / OUTPUT).read_bytes()
    started = time.perf_counter()
    done = subprocess.run(
        [str(python), "scripts/gen_all.py"],
        cwd=root,
        env=sdk_environment(root),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    return Run(root, done.returncode, done.stdout + done.stderr, time.perf_counter() - started, shipped)


def import_error(python: Path, root: Path) -> str | None:
    """None when the generated module imports in the toolchain's interpreter, else the exception line."""
    done = subprocess.run(
        [str(python), "-c", "import acp.schema"],
        cwd=root,
        env=sdk_environment(root),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if done.returncode == 0:
        return None
    return error_line(done.stderr) or f"exit status {done.returncode}"


def module_classes(module: Path) -> dict[str, dict[str, str]]:
    """The top-level classes of a generated module, read without importing it: for each, every field it has
    (its own and those of its bases in the module) with the field's annotation as source text."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    declared: dict[str, tuple[list[str], dict[str, str]]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            own = {
                item.target.id: ast.unparse(item.annotation)
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
            declared[node.name] = ([ast.unparse(base) for base in node.bases], own)

    def fields(name: str, seen: frozenset[str]) -> dict[str, str]:
        bases, own = declared[name]
        out: dict[str, str] = {}
        for base in bases:
            if base in declared and base not in seen:
                out.update(fields(base, seen | {base}))
        return out | own

    return {name: fields(name, frozenset({name})) for name in declared}


# The validators gen_schema.py writes for upstream's x-deserialize-* annotations, by the prefix of their names.
LENIENT_VALIDATORS = {"_salvage_on_error_": "default-on-error", "_skip_invalid_items_": "skip-invalid-items"}


def lenient_fields(module: Path) -> set[tuple[str, str, str]]:
    """(class, field, kind) for each field a generated class salvages (`_meta` on the shared base counts once)."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    out = set()
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if not isinstance(item, ast.FunctionDef):
                continue
            kind = next((k for prefix, k in LENIENT_VALIDATORS.items() if item.name.startswith(prefix)), None)
            if item.name == "_salvage_meta_on_error":
                kind = "default-on-error"
            for decorator in item.decorator_list if kind else ():
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "field_validator":
                    for arg in decorator.args:
                        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                            out.add((node.name, arg.value, str(kind)))
    return out


# How the corpus test runs the older toolchain's datamodel-code-generator (0.35): straight on the schema, with the
# options of gen_schema.py's command that 0.35 has (it lacks --no-use-specialized-enum, --no-use-standard-collections,
# --no-use-union-operator and --type-overrides, so the 0.12.1 gen_all.py cannot drive it), its formatters left out
# (they change no class). What it shows is how that release reads the schema's unions, which is what decides the
# class a message gets.
OLDER_CODEGEN_OPTIONS = (
    "--input-file-type",
    "jsonschema",
    "--target-python-version",
    "3.12",
    "--collapse-root-models",
    "--output-model-type",
    "pydantic_v2.BaseModel",
    "--use-annotated",
    "--use-field-description",
    "--snake-case-field",
)
CLASSIFY = HERE / "classify.py"


def run_codegen(python: Path, schema_file: Path, output: Path) -> subprocess.CompletedProcess[str]:
    """datamodel-code-generator of `python`'s toolchain on `schema_file`, with OLDER_CODEGEN_OPTIONS, to `output`."""
    args = [str(python), "-m", "datamodel_code_generator", "--input", str(schema_file), "--output", str(output)]
    return subprocess.run(
        [*args, *OLDER_CODEGEN_OPTIONS], capture_output=True, text=True, check=False, timeout=600, cwd=output.parent
    )


def classify(python: Path, module: str, path: Path, envelopes: list[str], messages: list[Any]) -> list[list[Any]]:
    """classify.py in `python`'s toolchain: the classes `module` (imported from `path`) picks for each message in
    each envelope, all in one process."""
    done = subprocess.run(
        [str(python), str(CLASSIFY), module, str(path)],
        input=json.dumps({"envelopes": envelopes, "messages": messages}),
        env={**sdk_environment(path.parent), "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"classify.py failed on {module}: {error_line(done.stderr) or done.returncode}")
    answer: list[list[Any]] = json.loads(done.stdout)
    return answer
