"""The TypeScript ACP SDK's generator (hey-api and its plugins, tools/ts-pipeline/), run on a schema and compiled.

`tools/ts-pipeline/generate.mjs` feeds hey-api a schema the way the SDK's generate step does; this module runs it
in a temporary directory, type-checks the output with the pinned `tsc --strict --noEmit`, and reads from the
emitted `types.gen.ts` which types and properties carry `@experimental` in their JSDoc.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT

TOOL = ROOT / "tools" / "ts-pipeline"
NODE_MODULES = TOOL / "node_modules"
GENERATE = TOOL / "generate.mjs"
TSC = NODE_MODULES / "typescript" / "bin" / "tsc"
SETUP_HINT = "run .ci/setup.d/13-ts-pipeline.sh"
OUTPUTS = ("index.ts", "types.gen.ts", "zod.gen.ts")
TSC_FLAGS = ("--strict", "--noEmit", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext")

# A JSDoc block and the declaration right after it: a top-level type, or a property of a type's body (four spaces in,
# as hey-api indents them).
TYPE_DOC = re.compile(r"/\*\*((?:(?!\*/).)*)\*/\s*export type (\w+) =", re.DOTALL)
PROPERTY_DOC = re.compile(r"^ {4}/\*\*((?:(?!\*/).)*)\*/\n {4}'?([\w$]+)'?\??:", re.DOTALL | re.MULTILINE)
TYPE_START = re.compile(r"^export type (\w+) =", re.MULTILINE)
TOP_PROPERTY = re.compile(r"^ {4}'?([\w$]+)'?(\??):", re.MULTILINE)


class SetupError(RuntimeError):
    """node, or the pinned generator in tools/ts-pipeline/node_modules, is missing."""


def find_node() -> str:
    """The node on PATH, once tools/ts-pipeline/ is installed; else SetupError says what is missing and how to
    install it."""
    found = shutil.which("node")
    if found is None:
        raise SetupError(f"node is not on PATH; install Node 20 (.ci/setup.d/10-node-typescript.sh), then {SETUP_HINT}")
    if not TSC.is_file() or not (NODE_MODULES / "@hey-api" / "openapi-ts").is_dir():
        raise SetupError(f"tools/ts-pipeline/node_modules is not installed; {SETUP_HINT}")
    return found


def hey_api_version() -> str:
    """The installed @hey-api/openapi-ts version (the one tools/ts-pipeline/package-lock.json pins)."""
    package = NODE_MODULES / "@hey-api" / "openapi-ts" / "package.json"
    return str(json.loads(package.read_text(encoding="utf-8"))["version"])


@dataclass(frozen=True)
class Output:
    """What hey-api wrote for one schema, and how long it took."""

    directory: Path
    seconds: float

    def text(self, name: str) -> str:
        return (self.directory / name).read_text(encoding="utf-8")


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False, timeout=600)


def generate(node: str, schema_file: Path, work: Path) -> tuple[Output, subprocess.CompletedProcess[str]]:
    """Run the SDK's hey-api set-up on `schema_file` into `work/out`; `work` sees the pinned node_modules."""
    work.mkdir(parents=True, exist_ok=True)
    link = work / "node_modules"
    if not link.exists():
        link.symlink_to(NODE_MODULES, target_is_directory=True)
    started = time.perf_counter()
    done = run([node, str(GENERATE), str(schema_file), str(work / "out")], work)
    return Output(work / "out", time.perf_counter() - started), done


def type_check(node: str, output: Output) -> subprocess.CompletedProcess[str]:
    """`tsc --strict --noEmit` over every emitted file."""
    return run([node, str(TSC), *TSC_FLAGS, *(f"out/{name}" for name in OUTPUTS)], output.directory.parent)


def experimental_types(types_ts: str) -> set[str]:
    """The types whose JSDoc carries `@experimental`."""
    return {match.group(2) for match in TYPE_DOC.finditer(types_ts) if "@experimental" in match.group(1)}


def type_bodies(types_ts: str) -> dict[str, str]:
    """Each exported type's text, up to the next exported type."""
    starts = list(TYPE_START.finditer(types_ts))
    ends = [match.start() for match in starts[1:]] + [len(types_ts)]
    return {match.group(1): types_ts[match.start() : end] for match, end in zip(starts, ends, strict=True)}


def experimental_properties(types_ts: str) -> set[tuple[str, str]]:
    """The (type, property) pairs whose property JSDoc carries `@experimental`, top-level properties only."""
    found = set()
    for name, body in type_bodies(types_ts).items():
        for match in PROPERTY_DOC.finditer(body):
            if "@experimental" in match.group(1):
                found.add((name, match.group(2)))
    return found


def required_properties(types_ts: str) -> dict[str, set[str]]:
    """Each exported type's top-level properties that a value must have (declared without `?`)."""
    return {
        name: {match.group(1) for match in TOP_PROPERTY.finditer(body) if not match.group(2)}
        for name, body in type_bodies(types_ts).items()
    }
