"""The SDKs' generated validators behave on our schema as on the published one, message by message.

Every message of the upstream corpus and of the spec's worked examples (tests/sdk_pipelines/corpus.py) is tried with
every envelope type, through what each SDK's pipeline generates from each schema, the published one being the
control:

- the TypeScript SDK's zod validators (hey-api's zod plugin): its unions are first-match and its objects strip
  members they do not declare, so a member listed before the right one takes a message and drops its fields. Where
  the published validators accept a message, ours must too, and drop nothing the published ones keep;
- the Python SDK's generator, the pinned gen_all.py and the older datamodel-code-generator (0.35): where the
  published models accept a message, ours must pick the same classes for it (the envelope, its params or result).

Each pipeline's run over the whole batch is one process. A last test checks our own reader (the JSON-RPC classifier
in acp_v2_schema), which routes by method: it keeps every member of each message it reads, except what it records
as salvaged under upstream's lenient rules (an invalid list item skipped, an invalid optional value set aside).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_core import to_jsonable_python

from tests.sdk_pipelines import corpus, python_sdk, typescript_sdk
from tests.sdk_pipelines.conftest import Source, unavailable

SHOWN = 12  # differences printed in a failure


@pytest.fixture(scope="module")
def messages() -> list[corpus.Message]:
    upstream = corpus.upstream_messages()
    if not upstream:
        unavailable(f"the upstream corpus is not at {corpus.CORPUS} (set ACP_UPSTREAM_EXAMPLES)")
    return upstream + corpus.example_messages()


@pytest.fixture(scope="module")
def envelopes(sources: dict[str, Source]) -> list[str]:
    return corpus.envelope_names(sources["ours"].schema())


def _report(what: str, found: list[str], pairs: int) -> str:
    shown = "\n".join(found[:SHOWN])
    return f"{len(found)} of {pairs} (message, envelope) pairs {what}:\n{shown}"


def test_zod_drops_no_member_the_published_validators_keep(
    sources: dict[str, Source], ts_output: Any, node: str, messages: list[corpus.Message], envelopes: list[str]
) -> None:
    outputs = {name: ts_output(name) for name in sources}
    verdicts = typescript_sdk.zod_verdicts(node, outputs, [f"z{e}" for e in envelopes], [m.message for m in messages])
    found, pairs = [], 0
    for (ident, *_), theirs, ours in zip(messages, verdicts["published"], verdicts["ours"], strict=True):
        for envelope, control, mine in zip(envelopes, theirs, ours, strict=True):
            if control is None or not control["ok"]:
                continue
            pairs += 1
            if mine is None or not mine["ok"]:
                found.append(f"{ident} in {envelope}: refused by ours ({mine and mine['issue']})")
            elif lost := sorted(set(mine["dropped"]) - set(control["dropped"])):
                found.append(f"{ident} in {envelope}: ours drops {', '.join(lost)}")
    assert pairs > 0
    assert not found, _report("lose members with ours only", found, pairs)


def _same_classes(
    control: list[list[Any]], ours: list[list[Any]], messages: list[corpus.Message], envelopes: list[str]
) -> None:
    found, pairs = [], 0
    for (ident, *_), theirs, mine in zip(messages, control, ours, strict=True):
        for envelope, expected, got in zip(envelopes, theirs, mine, strict=True):
            if expected is None or expected is False:
                continue
            pairs += 1
            if got != expected:
                found.append(f"{ident} in {envelope}: {got or 'refused'} with ours, {expected} with the published")
    assert pairs > 0
    assert not found, _report("get other classes from ours", found, pairs)


def test_python_sdk_generator_picks_the_published_classes(
    sources: dict[str, Source],
    python_run: Any,
    python_sdk_tools: Any,
    messages: list[corpus.Message],
    envelopes: list[str],
) -> None:
    picked = {}
    for name in sources:
        run = python_run(name)
        assert run.returncode == 0 and run.generated, f"gen_all.py failed on {name}: {run.first_error()}"
        values = [m.message for m in messages]
        picked[name] = python_sdk.classify(python_sdk_tools.python, "acp.schema", run.root / "src", envelopes, values)
    _same_classes(picked["published"], picked["ours"], messages, envelopes)


def test_older_datamodel_code_generator_picks_the_published_classes(
    sources: dict[str, Source],
    older_python_sdk_tools: Path,
    tmp_path_factory: pytest.TempPathFactory,
    messages: list[corpus.Message],
    envelopes: list[str],
) -> None:
    picked = {}
    for name, source in sources.items():
        folder = tmp_path_factory.mktemp(f"codegen-0.35-{name}")
        module = f"schema_{name}"
        done = python_sdk.run_codegen(older_python_sdk_tools, source.unstable_file, folder / f"{module}.py")
        assert done.returncode == 0, f"datamodel-code-generator 0.35 failed on {name}: {done.stderr[-2000:]}"
        picked[name] = python_sdk.classify(
            older_python_sdk_tools, module, folder, envelopes, [m.message for m in messages]
        )
    _same_classes(picked["published"], picked["ours"], messages, envelopes)


def _dropped(given: Any, kept: Any, path: str = "") -> list[str]:
    """The members of `given` that `kept` lacks, as paths (an array item cut off counts)."""
    if isinstance(given, dict):
        if not isinstance(kept, dict):
            return [path or "/"]
        return [
            p for k, v in given.items() for p in (_dropped(v, kept[k], f"{path}/{k}") if k in kept else [f"{path}/{k}"])
        ]
    if isinstance(given, list):
        if not isinstance(kept, list):
            return [path or "/"]
        return [
            p
            for i, v in enumerate(given)
            for p in (_dropped(v, kept[i], f"{path}/{i}") if i < len(kept) else [f"{path}/{i}"])
        ]
    return []


def _without(value: Any, paths: list[tuple[str | int, ...]]) -> Any:
    """`value` without what the lenient read set aside at `paths` (a salvage the reader records, by upstream's rules,
    is no loss of routing: later array items first, so that earlier indexes stay right)."""
    out = copy.deepcopy(value)
    for path in sorted(paths, key=lambda p: [(-x if isinstance(x, int) else 0) for x in p]):
        parent = out
        for step in path[:-1]:
            parent = parent[step] if isinstance(parent, (dict, list)) else None
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
        elif isinstance(parent, list) and isinstance(path[-1], int) and path[-1] < len(parent):
            del parent[path[-1]]
    return out


def test_our_reader_keeps_every_member_of_each_message_it_reads(messages: list[corpus.Message]) -> None:
    from acp_v2_schema.reader import ROUTES, Invalid, MessageReader

    found, read = [], 0
    for ident, message, answers in messages:
        reader = MessageReader()
        # An answer is read as the answer to its request (a method this version does not have is left unread).
        if answers is not None and isinstance(message, dict) and ((answers, "request") in ROUTES or answers[:1] == "_"):
            reader.expect(message.get("id"), answers)
        for parsed in reader.read_line(json.dumps(message)):
            if isinstance(parsed, Invalid):
                continue
            read += 1
            for member in ("params", "result", "error"):
                if member in message and hasattr(parsed, member):
                    payload = getattr(parsed, member)
                    kept = to_jsonable_python(payload, by_alias=True)
                    given = _without(message[member], [s.path for s in getattr(payload, "model_salvaged", ())])
                    found += [f"{ident}: drops /{member}{p}" for p in _dropped(given, kept)]
    assert read > 0
    assert not found, "\n".join(found[:SHOWN])
