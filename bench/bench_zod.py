"""Our generated models against the TypeScript SDK's own validators, on the same payloads (goal: ours >= 4.0, as
payloads per second).

The payloads: one pass over `bench_validate`'s corpus (the spec's worked examples and the recorded session, each
message pre-routed to the type of its params, result or error), kept where both sides have the type: the
`@agentclientprotocol/sdk` release pinned in tools/acp-sdk exports a zod validator `z<Type>` for each type it has,
and methods it does not have (session/fork, providers/*, proxy/* and others) have none, so their payloads are left
out. Every payload kept must be accepted by both sides, checked before any timing (a refusal would time the failure
path): one our models refuse stops the bench, one zod refuses is left out; the counts, by type, are printed.

- Ours: `TypeAdapter(model).validate_json(text, strict=True)` on each payload's JSON text, one adapter per type
  built beforehand, as a user holding adapters validates (strict: no coercion, as zod does and as our reader
  checks). It is the fastest public way here: on this set's model types `Model.model_validate_json(text,
  strict=True)` measured about 30% slower, and lax `validate_json` about 10% slower; some of the types are unions
  (type aliases), which only an adapter takes.
- The reference: the SDK's zod validators in a node child (bench/zod_child.mjs), `JSON.parse(text)` then
  `z<Type>.safeParse(value)` on the same texts, in the same order.

Each round validates the whole set PASSES times over on one side, the same count on both. Node is started once and
driven over stdin/stdout: its start-up, the SDK's import and the pipe are outside the timing, as the child times
its own rounds (`process.cpuUsage`, user + system) and this process times its own (`time.process_time`). Both
sides warm up first, untimed, WARMUP rounds each: V8 compiles the validators' hot paths as they run, and its rounds
were still getting faster after 25 (by a third) and level off near 100; pydantic's validators are built with the
adapters. The rounds alternate in an order drawn at random per pair, as `paired.shuffled_pairs` does; the
figures are medians over ROUNDS rounds. An informational line beside it gives the same from each side's elapsed
time (node's collector runs partly on threads of its own, which CPU time counts and elapsed time hides).

Without node or the SDK (`.ci/setup.d/12-acp-sdk.sh`) the module prints why and gives no line; under CI=true it
fails instead, as the interop tests do.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import time
from collections import Counter
from pathlib import Path
from types import TracebackType
from typing import Any

from bench.common import ROOT, Ratio

SDK_DIR = ROOT / "tools" / "acp-sdk"  # the folder whose node_modules holds the pinned SDK
SDK_PACKAGE = SDK_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
CHILD = Path(__file__).resolve().parent / "zod_child.mjs"
PASSES = 40  # passes over the payload set a round: tens of milliseconds on the node side
ROUNDS = 61
WARMUP = 150  # untimed rounds a side before the first timed one (node's level off near 100)
SEED = 29


def sdk_missing() -> str | None:
    """Why the node side cannot run here (node or the pinned SDK absent), or None."""
    if shutil.which("node") is None:
        return "node is not available; run .ci/setup.d/10-node-typescript.sh"
    if not SDK_PACKAGE.exists():
        return "the ACP TypeScript SDK is not installed in tools/acp-sdk; run .ci/setup.d/12-acp-sdk.sh"
    return None


def sdk_version() -> str:
    return str(json.loads(SDK_PACKAGE.read_text(encoding="utf-8"))["version"])


class ZodChild:
    """The node child holding the SDK's zod validators; one JSON request a line, one JSON answer a line."""

    def __init__(self) -> None:
        node = shutil.which("node")
        assert node is not None, sdk_missing()
        self._process = subprocess.Popen(
            [node, str(CHILD), str(SDK_DIR)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the zod child ended (exit status {process.wait()}) before answering {request['op']}")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"the zod child failed on {request['op']}: {answer['error']}")
        return answer

    def names(self) -> set[str]:
        """Every zod validator the SDK exports."""
        return set(self.ask({"op": "names"})["names"])

    def load(self, payloads: list[tuple[str, str]]) -> None:
        """Hold (validator name, payload text) pairs for `check` and `round`."""
        self.ask({"op": "load", "payloads": payloads})

    def check(self) -> list[str | None]:
        """For each payload held: None when zod accepts it, else why it refuses."""
        return list(self.ask({"op": "check"})["verdicts"])

    def round(self, passes: int) -> dict[str, Any]:
        """Validate every payload held `passes` times over: {"cpu": s, "wall": s, "refused": n}."""
        return self.ask({"op": "round", "passes": passes})

    def close(self) -> None:
        process = self._process
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> ZodChild:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def payloads() -> list[tuple[str, str]]:
    """One pass over the validate bench's corpus: (our type name, payload JSON text) for each message with a type."""
    from bench.bench_validate import _messages, corpus

    _, routed = corpus(len(_messages()))
    return [item for item in routed if item is not None]


def _tally(items: list[tuple[str, str]]) -> str:
    counts = Counter(name for name, _ in items)
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _ours_round(checks: list[tuple[Any, str]], passes: int) -> tuple[float, float]:
    """CPU and elapsed seconds of validating every payload `passes` times over with our models."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(passes):
        for adapter, text in checks:
            adapter.validate_json(text, strict=True)
    return time.process_time() - cpu, time.perf_counter() - wall


def run() -> list[Ratio]:
    reason = sdk_missing()
    if reason is not None:
        if os.environ.get("CI") == "true":
            raise SystemExit(f"bench_zod: {reason} (CI must run this line)")
        print(f"  no line: {reason}", flush=True)
        return []

    from acp_v2_schema import models
    from pydantic import TypeAdapter, ValidationError

    everything = payloads()
    version = sdk_version()
    with ZodChild() as child:
        exported = child.names()
        shared = [item for item in everything if f"z{item[0]}" in exported]
        absent = [item for item in everything if f"z{item[0]}" not in exported]
        child.load([(f"z{name}", text) for name, text in shared])
        verdicts = child.check()
        refused = [(item, why) for item, why in zip(shared, verdicts, strict=True) if why is not None]
        used = [item for item, why in zip(shared, verdicts, strict=True) if why is None]
        adapters = {name: TypeAdapter(getattr(models, name)) for name in {name for name, _ in used}}
        ours_refused = []
        for name, text in used:
            try:
                adapters[name].validate_json(text, strict=True)
            except ValidationError as error:
                ours_refused.append(f"{name}: {error.errors()[0]['msg']} in {text[:120]}")
        assert not ours_refused, ours_refused  # our models accept every worked example and recorded payload
        assert used, "no payload both sides accept"

        print(f"  used {len(used)} of {len(everything)} payloads, by type: {_tally(used)}", flush=True)
        print(
            f"  left out {len(absent)}, types the SDK {version} has no zod validator for: {_tally(absent) or 'none'}",
            flush=True,
        )
        print(
            f"  left out {len(refused)}, refused by zod: "
            + ("; ".join(f"{name} ({why})" for (name, _), why in refused) or "none"),
            flush=True,
        )

        child.load([(f"z{name}", text) for name, text in used])
        checks = [(adapters[name], text) for name, text in used]
        for _ in range(WARMUP):
            child.round(PASSES)
            _ours_round(checks, PASSES)

        times: dict[str, list[tuple[float, float]]] = {"ours": [], "zod": []}
        sides = ["ours", "zod"]
        order = random.Random(SEED)
        for _ in range(ROUNDS):
            order.shuffle(sides)
            for side in sides:
                if side == "ours":
                    times["ours"].append(_ours_round(checks, PASSES))
                else:
                    answer = child.round(PASSES)
                    assert answer["refused"] == 0, answer  # zod accepted every payload kept, in the check above
                    times["zod"].append((answer["cpu"], answer["wall"]))

    count = len(used) * PASSES
    ours_cpu, ours_wall = (statistics.median(t[i] for t in times["ours"]) for i in (0, 1))
    zod_cpu, zod_wall = (statistics.median(t[i] for t in times["zod"]) for i in (0, 1))
    what = (
        f"validate {len(used)} pre-routed payloads of {len({n for n, _ in used})} types both sides have "
        f"(worked examples + recorded session) x{PASSES} a round"
    )
    sides_said = (
        "TypeAdapter(model).validate_json(text, strict=True) of our generated models vs the TypeScript SDK "
        f"{version}'s zod: JSON.parse(text) then z<Type>.safeParse(value), in a node child started beforehand"
    )
    return [
        Ratio(
            f"{what} (CPU time, median of {ROUNDS}): {sides_said}",
            count / ours_cpu,
            count / zod_cpu,
            "payload/s",
            4.0,
            higher_is_better=True,
        ),
        Ratio(
            f"{what} (elapsed time, the same rounds): the same two sides",
            count / ours_wall,
            count / zod_wall,
            "payload/s",
            None,
            higher_is_better=True,
        ),
    ]
