"""The ACP SDKs' own code generators, run on the published v2 schema (the control) and on ours.

Two schema sources, each a directory holding `schema.json` and `schema.unstable.json`:

- `published`: npm `@agentclientprotocol/sdk` at the version and integrity pinned in
  generator/read/published.py, fetched once per session with generator/read/fetch.py (as tests/upstream does),
  with what the SDK generated from it for the controls: its schema index (the method maps of upstream's meta
  files), its declared types and its type guards;
- `ours`: `generated/schema/`, or the directory named by `ACP_PIPELINE_SCHEMA_DIR` (to try another branch's
  output without checking it out).

The corpus test (test_corpus_validators.py) also runs an older Python toolchain (python-sdk-tools-0.35.txt) and
tools/ts-pipeline/zod_corpus.mjs. Each pipeline runs at most once per source and session. What they need from
outside (network for the pinned sdist and schema, node and tools/ts-pipeline/ from .ci/setup.d/13-ts-pipeline.sh)
is cached or installed once; when it is missing the tests skip on a developer's machine and fail in CI (CI=true),
like tests/sdk/.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

from generator.read import published
from generator.read.fetch import FetchError, fetch_members
from tests.sdk_pipelines import meta, python_sdk, typescript_sdk
from tests.support import ROOT

OURS_ENV = "ACP_PIPELINE_SCHEMA_DIR"
# The schema index the published SDK generated from each meta file, beside the schema file it belongs to.
SDK_INDEX = {
    "schema.json": "package/dist/v2/schema/index.js",
    "schema.unstable.json": "package/dist/v2/unstable/schema/index.js",
}
# The types the published SDK generated from the unstable schema (its declaration file keeps the JSDoc).
SDK_TYPES = "package/dist/v2/unstable/schema/types.gen.d.ts"
SDK_TYPES_FILE = "sdk-types.gen.d.ts"
# The type guards it generated from the same schema's extensible unions.
SDK_GUARDS = "package/dist/v2/unstable/schema/guards.gen.d.ts"
SDK_GUARDS_FILE = "sdk-guards.gen.d.ts"


def unavailable(message: str) -> NoReturn:
    """Skip a test whose tools or downloads are missing; in CI, fail it instead."""
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (CI must run every SDK pipeline test)", pytrace=False)
    pytest.skip(message)


@dataclass
class Source:
    """One schema directory and what the pipelines made of it (each filled on first use)."""

    name: str
    directory: Path
    python_run: python_sdk.Run | None = None
    ts_output: typescript_sdk.Output | None = None
    ts_done: subprocess.CompletedProcess[str] | None = None
    ts_formatted: typescript_sdk.Output | None = None
    ts_formatted_done: subprocess.CompletedProcess[str] | None = None
    _json: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def stable_file(self) -> Path:
        return self.directory / "schema.json"

    @property
    def unstable_file(self) -> Path:
        return self.directory / "schema.unstable.json"

    def schema(self, file_name: str = "schema.unstable.json") -> dict[str, Any]:
        if file_name not in self._json:
            self._json[file_name] = json.loads((self.directory / file_name).read_text(encoding="utf-8"))
        return self._json[file_name]

    def meta(self) -> dict[str, Any]:
        """What gen_all.py gets as `schema/meta.json` (meta.unstable_meta)."""
        return meta.unstable_meta(self.directory)

    def sdk_meta(self) -> dict[str, Any]:
        """The meta file the TypeScript SDK's step reads: for the published source, the maps its schema index was
        built from (read back from that index, the control); for ours, meta.unstable_meta."""
        index = self.directory / f"sdk-index-{self.unstable_file.name}.js"
        if self.name == "published":
            return meta.emitted_meta(index.read_text(encoding="utf-8"))
        return self.meta()


@pytest.fixture(scope="session")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Source]:
    """Both schema sources, by name."""
    dest = tmp_path_factory.mktemp("published")
    members = {published.STABLE_MEMBER: "schema.json", published.UNSTABLE_MEMBER: "schema.unstable.json"}
    members |= {member: f"sdk-index-{name}.js" for name, member in SDK_INDEX.items()}
    members[SDK_TYPES] = SDK_TYPES_FILE
    members[SDK_GUARDS] = SDK_GUARDS_FILE
    try:
        found = fetch_members(published.UPSTREAM, tuple(members))
    except FetchError as exc:
        unavailable(f"cannot fetch {published.UPSTREAM.spec}: {exc}")
    for member, name in members.items():
        (dest / name).write_bytes(found[member])
    ours = Path(os.environ.get(OURS_ENV) or ROOT / "generated" / "schema").resolve()
    for name in ("schema.json", "schema.unstable.json"):
        if not (ours / name).is_file():
            pytest.fail(f"{ours} has no {name} (set {OURS_ENV} to a generated/schema directory)", pytrace=False)
    return {"published": Source("published", dest), "ours": Source("ours", ours)}


# -- Python SDK ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PythonSdk:
    python: Path
    sdist: Path


@pytest.fixture(scope="session")
def python_sdk_tools() -> PythonSdk:
    """The pinned sdist and the toolchain's interpreter (both cached in .cache/sdk-pipelines/)."""
    try:
        return PythonSdk(python_sdk.tool_python(), python_sdk.fetch_sdist())
    except python_sdk.SetupError as exc:
        unavailable(str(exc))


@pytest.fixture(scope="session")
def older_python_sdk_tools() -> Path:
    """The older toolchain's interpreter (python-sdk-tools-0.35.txt: datamodel-code-generator 0.35.0)."""
    try:
        return python_sdk.tool_python(tools=python_sdk.OLDER_TOOLS)
    except python_sdk.SetupError as exc:
        unavailable(str(exc))


@pytest.fixture(scope="session")
def python_run(
    sources: dict[str, Source], python_sdk_tools: PythonSdk, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    """`python_run(name)`: gen_all.py's run on that source's unstable schema, made once."""

    def get(name: str) -> python_sdk.Run:
        source = sources[name]
        if source.python_run is None:
            root = tmp_path_factory.mktemp(f"python-sdk-{name}")
            source.python_run = python_sdk.run_gen_all(
                python_sdk_tools.python, python_sdk_tools.sdist, root, source.unstable_file, source.meta()
            )
        return source.python_run

    return get


# -- TypeScript SDK ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def node() -> str:
    try:
        return typescript_sdk.find_node()
    except typescript_sdk.SetupError as exc:
        unavailable(str(exc))


@pytest.fixture(scope="session")
def ts_output(sources: dict[str, Source], node: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`ts_output(name)`: hey-api's output for that source's unstable schema, made once; a failed run fails."""

    def get(name: str) -> typescript_sdk.Output:
        source = sources[name]
        if source.ts_output is None:
            work = tmp_path_factory.mktemp(f"ts-pipeline-{name}")
            source.ts_output, source.ts_done = typescript_sdk.generate(node, source.unstable_file, work)
        done = source.ts_done
        if done is not None and done.returncode != 0:
            pytest.fail(f"hey-api failed on the {name} schema:\n{(done.stdout + done.stderr)[-4000:]}", pytrace=False)
        return source.ts_output

    return get


@pytest.fixture(scope="session")
def formatting_node() -> str:
    """node, once tools/ts-pipeline/ has prettier too."""
    try:
        return typescript_sdk.find_node(formatted=True)
    except typescript_sdk.SetupError as exc:
        unavailable(str(exc))


@pytest.fixture(scope="session")
def ts_formatted(sources: dict[str, Source], formatting_node: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`ts_formatted(name)`: the SDK's whole step on that source's unstable schema (hey-api, its meta constants from
    Source.sdk_meta, prettier), made once; a failed run fails."""

    def get(name: str) -> typescript_sdk.Output:
        source = sources[name]
        if source.ts_formatted is None:
            work = tmp_path_factory.mktemp(f"ts-pipeline-formatted-{name}")
            source.ts_formatted, source.ts_formatted_done = typescript_sdk.generate(
                formatting_node, source.unstable_file, work, meta=source.sdk_meta(), formatted=True
            )
        done = source.ts_formatted_done
        if done is not None and done.returncode != 0:
            printed = (done.stdout + done.stderr)[-4000:]
            pytest.fail(f"the formatted hey-api run failed on the {name} schema:\n{printed}", pytrace=False)
        return source.ts_formatted

    return get
