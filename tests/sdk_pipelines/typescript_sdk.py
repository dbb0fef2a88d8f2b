"""The TypeScript ACP SDK's generator (hey-api and its plugins, tools/ts-pipeline/), run on a schema and compiled.

`tools/ts-pipeline/generate.mjs` feeds hey-api a schema the way the SDK's generate step does; this module runs it
in a temporary directory, type-checks the output with the pinned `tsc --strict --noEmit`, and reads from the
emitted `types.gen.ts` which types and properties carry `@experimental` in their JSDoc. By default the run leaves
out what the SDK's step adds around hey-api (the tests want the faster run); `generate(..., meta=..., formatted=True)`
does that too: the meta constants in index.ts and every file formatted with the pinned prettier.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import ROOT

TOOL = ROOT / "tools" / "ts-pipeline"
NODE_MODULES = TOOL / "node_modules"
GENERATE = TOOL / "generate.mjs"
TSC = NODE_MODULES / "typescript" / "bin" / "tsc"
PRETTIER = NODE_MODULES / "prettier" / "bin" / "prettier.cjs"
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


def find_node(*, formatted: bool = False) -> str:
    """The node on PATH, once tools/ts-pipeline/ is installed (with prettier too when the run is to be `formatted`);
    else SetupError says what is missing and how to install it."""
    found = shutil.which("node")
    if found is None:
        raise SetupError(f"node is not on PATH; install Node 20 (.ci/setup.d/10-node-typescript.sh), then {SETUP_HINT}")
    if not TSC.is_file() or not (NODE_MODULES / "@hey-api" / "openapi-ts").is_dir():
        raise SetupError(f"tools/ts-pipeline/node_modules is not installed; {SETUP_HINT}")
    if formatted and not PRETTIER.is_file():
        raise SetupError(
            f"tools/ts-pipeline/node_modules has no prettier (an install older than its lock file); {SETUP_HINT}"
        )
    return found


def _installed_version(package: str) -> str:
    return str(json.loads((NODE_MODULES / package / "package.json").read_text(encoding="utf-8"))["version"])


def hey_api_version() -> str:
    """The installed @hey-api/openapi-ts version (the one tools/ts-pipeline/package-lock.json pins)."""
    return _installed_version("@hey-api/openapi-ts")


def prettier_version() -> str:
    """The installed prettier version (the one tools/ts-pipeline/package-lock.json pins)."""
    return _installed_version("prettier")


@dataclass(frozen=True)
class Output:
    """What hey-api wrote for one schema, and how long it took."""

    directory: Path
    seconds: float

    def text(self, name: str) -> str:
        return (self.directory / name).read_text(encoding="utf-8")


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False, timeout=600)


def generate(
    node: str, schema_file: Path, work: Path, *, meta: dict[str, Any] | None = None, formatted: bool = False
) -> tuple[Output, subprocess.CompletedProcess[str]]:
    """Run the SDK's hey-api set-up on `schema_file` into `work/out`; `work` sees the pinned node_modules.

    With `meta` (a meta file's content), index.ts ends with the method-name constants the SDK writes from it; with
    `formatted`, prettier formats every emitted file, as the SDK's step has hey-api do (find_node(formatted=True)
    checks prettier is installed). Only the generator's own run is timed."""
    work.mkdir(parents=True, exist_ok=True)
    link = work / "node_modules"
    if not link.exists():
        link.symlink_to(NODE_MODULES, target_is_directory=True)
    args = [node, str(GENERATE), str(schema_file), str(work / "out")]
    if meta is not None:
        meta_file = work / "meta.json"
        meta_file.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        args += ["--meta", str(meta_file)]
    if formatted:
        # The SDK's own prettier configuration is `{}`: prettier's defaults, and no file further up consulted.
        (work / ".prettierrc").write_text("{}\n", encoding="utf-8")
        args.append("--format")
    started = time.perf_counter()
    done = run(args, work)
    return Output(work / "out", time.perf_counter() - started), done


def prettier(node: str, output: Output, name: str, text: str) -> subprocess.CompletedProcess[str]:
    """One pass of the pinned prettier over `text`, formatted as the file `name` of `output` would be."""
    return subprocess.run(
        [node, str(PRETTIER), "--stdin-filepath", f"out/{name}"],
        cwd=output.directory.parent,
        input=text,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


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


ZOD_CORPUS = TOOL / "zod_corpus.mjs"


def zod_verdicts(
    node: str, outputs: dict[str, Output], validators: list[str], messages: list[Any]
) -> dict[str, list[list[Any]]]:
    """tools/ts-pipeline/zod_corpus.mjs over `messages` with the named zod validators of each output (one node
    process for all): per source, per message, per validator, null (no such validator), a refusal, or what the
    parsed value dropped."""
    request = {
        "sources": {name: str(output.directory / "zod.gen.ts") for name, output in outputs.items()},
        "validators": validators,
        "messages": messages,
    }
    done = subprocess.run(
        [node, str(ZOD_CORPUS)], input=json.dumps(request), capture_output=True, text=True, check=False, timeout=600
    )
    if done.returncode != 0:
        raise RuntimeError(f"zod_corpus.mjs failed: {done.stderr.strip()[-2000:]}")
    answer: dict[str, list[list[Any]]] = json.loads(done.stdout)
    return answer
