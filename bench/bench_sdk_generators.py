"""`generate` against the ACP SDKs' own code generators, each run as its user runs it, on the same schema.

Our side is the full run of bench_generate.py: `python -m generator generate` in a fresh process, on a fresh copy of
the real spec with an empty output tree and no cache, so everything (schemas, models, SDK tables, vectors, docs
pages) is rendered and written. Their side is each SDK's generator on the schema that run writes
(generated/schema/schema.unstable.json, the file the SDKs download), in a fresh process too, with nothing
downloaded during the clock:

1. The Python SDK's `scripts/gen_all.py` (agent-client-protocol 0.12.1: datamodel-codegen, its own rewriting of the
   models and of the API signatures, ruff), driven by tests/sdk_pipelines/python_sdk.py in a fresh project root
   each run, with `generated/schema/meta.unstable.json` as its meta file (goal: ours <= 0.3 times it).
2. The TypeScript SDK's generate step: `@hey-api/openapi-ts` with the SDK's plugins (zod, transformers, types) as
   tools/ts-pipeline/generate.mjs feeds it, every emitted file formatted by hey-api's prettier post-processor with
   the pinned prettier, and the meta constants (`generated/schema/meta.unstable.json`'s method maps and version)
   formatted with prettier and appended to index.ts, as the SDK's step does (`generate.mjs --meta --format`),
   driven by tests/sdk_pipelines/typescript_sdk.py into a fresh output directory each run (goal: ours <= 0.7 times
   it: that step takes about 2 s on a quiet machine, not the 7 to 12 s once quoted, and our run writes far more
   than its three files). What the SDK's step does that this leaves out is listed at the top of generate.mjs.

Each round runs ours, gen_all.py and hey-api once each, ours first in one round and last in the next, so that
machine noise hits every side alike; our runs serve both lines. Each side is the median wall time of its rounds.
A run of theirs that fails on our schema stops the bench: it is never timed as if it had done the work. Their
tools come from outside: the Python SDK's sdist and toolchain are fetched and installed on first use into .cache/
(needs PyPI), hey-api and prettier by .ci/setup.d/13-ts-pipeline.sh. When one is missing the module says which and
how to install it and gives no line for it; in CI (CI=true), which installs both, a missing tool is an error.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.bench_generate import _generate, _measured
from bench.common import ROOT, Ratio, compile_generator
from tests.sdk_pipelines import meta, python_sdk, typescript_sdk

ROUNDS = 3  # gen_all.py takes several seconds a run: three rounds keep the module within a minute
SCHEMA_DIR = ROOT / "generated" / "schema"
SCHEMA = SCHEMA_DIR / "schema.unstable.json"
OURS = "generate (a full run from an empty tree on a fresh copy of the spec)"
ON = f"on our {SCHEMA.relative_to(ROOT)} (fresh processes, seconds per run)"
PYTHON_SDK_HINT = (
    f"it is fetched and installed on first use into {python_sdk.CACHE.relative_to(ROOT)}/ (pip, from PyPI: the "
    f"{python_sdk.SDIST} sdist and the pins of {python_sdk.TOOLS.relative_to(ROOT)})"
)


@dataclass(frozen=True)
class Tool:
    """One SDK generator ready to run: the line it gives and one timed run of it into a fresh directory."""

    line: str
    run: Callable[[Path], float]  # seconds of one successful run in that directory; raises when the run fails
    goal: float  # ours at most this many times theirs


def run() -> list[Ratio]:
    tools = available_tools()
    if not tools:
        return []
    compile_generator()  # the library runs from the bytecode pip wrote; so does the generator (bench/common.py)
    ours: list[float] = []
    theirs: dict[str, list[float]] = {tool.line: [] for tool in tools}
    goals = {tool.line: tool.goal for tool in tools}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        report = work / "peaks.txt"

        def our_run(index: int) -> None:
            root = work / f"ours{index}"
            shutil.copytree(ROOT / "spec", root / "spec")
            ours.append(_measured(_generate(root, report), ROOT, report)[0])

        for index in range(ROUNDS):
            if index % 2 == 0:
                our_run(index)
            for number, tool in enumerate(tools if index % 2 == 0 else tools[::-1]):
                theirs[tool.line].append(tool.run(work / f"theirs{index}-{number}"))
            if index % 2 == 1:
                our_run(index)
    mine = statistics.median(ours)
    return [
        Ratio(line, mine, statistics.median(times), "s", goal=goals[line], higher_is_better=False)
        for line, times in theirs.items()
    ]


def available_tools() -> list[Tool]:
    """The SDK generators that can run here; for each that cannot, a printed line saying why and how to install it
    (in CI, an error instead)."""
    tools = []
    for name, make in (("the Python SDK's gen_all.py", python_tool), ("hey-api", hey_api_tool)):
        try:
            tools.append(make())
        except (python_sdk.SetupError, typescript_sdk.SetupError) as exc:
            message = f"{name} is missing, no line for it: {exc}"
            if os.environ.get("CI") == "true":
                raise RuntimeError(f"{message} (CI installs every tool the bench compares with)") from exc
            print(f"  {message}", flush=True)
    return tools


def python_tool() -> Tool:
    """The Python SDK's gen_all.py (python_sdk.SetupError, with how to install it, when it cannot be had)."""
    try:
        python, sdist = python_sdk.tool_python(), python_sdk.fetch_sdist()
    except python_sdk.SetupError as exc:
        raise python_sdk.SetupError(f"{exc}; {PYTHON_SDK_HINT}") from exc
    meta_data = meta.unstable_meta(SCHEMA_DIR)
    line = (
        f"SDK generators: {OURS} vs the Python SDK's scripts/gen_all.py ({python_sdk.SDK_NAME} "
        f"{python_sdk.SDK_VERSION}: datamodel-codegen, its rewriting of models and signatures, ruff) {ON}"
    )

    def timed(root: Path) -> float:
        root.mkdir()
        done = python_sdk.run_gen_all(python, sdist, root, SCHEMA, meta_data)
        return checked_gen_all(done)

    return Tool(line, timed, goal=0.3)


def checked_gen_all(done: python_sdk.Run) -> float:
    """The seconds of a gen_all.py run that wrote its module; a run that failed raises."""
    if done.returncode != 0:
        raise RuntimeError(f"gen_all.py failed on {SCHEMA.relative_to(ROOT)}: {done.first_error()}")
    if not done.generated:
        raise RuntimeError(
            f"gen_all.py failed on {SCHEMA.relative_to(ROOT)}: it exited 0 but wrote no {python_sdk.OUTPUT}"
        )
    return done.seconds


def hey_api_tool() -> Tool:
    """The TypeScript SDK's generate step: hey-api with its plugins, its meta constants, prettier over it all
    (typescript_sdk.SetupError, with how to install it, when node, hey-api or prettier is missing)."""
    node = typescript_sdk.find_node(formatted=True)
    meta_data = meta.unstable_meta(SCHEMA_DIR)
    line = (
        f"SDK generators: {OURS} vs @hey-api/openapi-ts {typescript_sdk.hey_api_version()} with the TypeScript "
        f"SDK's plugins (zod, transformers, types) and its meta constants, formatted with prettier "
        f"{typescript_sdk.prettier_version()}, as the SDK's generate step does (tools/ts-pipeline/generate.mjs "
        f"--meta --format) {ON}"
    )

    def timed(work: Path) -> float:
        return checked_hey_api(*typescript_sdk.generate(node, SCHEMA, work, meta=meta_data, formatted=True))

    return Tool(line, timed, goal=0.7)


def checked_hey_api(output: typescript_sdk.Output, done: subprocess.CompletedProcess[str]) -> float:
    """The seconds of a hey-api run that wrote every output file; a run that failed raises."""
    missing = [name for name in typescript_sdk.OUTPUTS if not (output.directory / name).is_file()]
    if done.returncode != 0 or missing:
        printed = (done.stdout + done.stderr).strip()[-2000:]
        raise RuntimeError(f"hey-api failed on {SCHEMA.relative_to(ROOT)} (exit {done.returncode}):\n{printed}")
    return output.seconds
