"""The node child of bench/bench_zod.py answers: it holds the TypeScript SDK's zod validators, accepts worked
payloads, refuses a bad one (saying where), counts refusals in a timed round and reports its own CPU time.

Missing node or SDK skips these tests, naming the setup script, and fails them under CI=true (as tests/interop/
does): CI must run the bench's harness.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from bench.bench_zod import ZodChild, payloads, sdk_missing


@pytest.fixture(scope="module")
def child() -> Iterator[ZodChild]:
    reason = sdk_missing()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI must run the bench's harness)", pytrace=False)
        pytest.skip(reason)
    with ZodChild() as started:
        yield started


def first(type_name: str) -> str:
    """The JSON text of the corpus's first payload of `type_name` (a worked example or a recorded message)."""
    return next(text for name, text in payloads() if name == type_name)


def test_the_child_holds_the_sdks_validators(child: ZodChild) -> None:
    names = child.names()
    assert {"zPromptRequest", "zUpdateSessionNotification", "zError"} <= names
    assert "zForkSessionRequest" not in names  # a method the pinned SDK does not have: the bench leaves it out


def test_worked_payloads_pass_and_a_bad_one_is_refused(child: ZodChild) -> None:
    prompt, update = first("PromptRequest"), first("UpdateSessionNotification")
    child.load(
        [
            ("zPromptRequest", prompt),
            ("zUpdateSessionNotification", update),
            ("zPromptRequest", '{"sessionId": 7, "prompt": []}'),  # a number where the session id is a string
            ("zPromptRequest", "{not json"),
            ("zNoSuchType", "{}"),
        ]
    )
    verdicts = child.check()
    assert verdicts[:2] == [None, None]
    assert verdicts[2] is not None and verdicts[2].startswith("sessionId:"), verdicts[2]
    assert verdicts[3] is not None and verdicts[3].startswith("not JSON"), verdicts[3]
    assert verdicts[4] == "no zod validator zNoSuchType"


def test_a_round_counts_refusals_and_times_itself(child: ZodChild) -> None:
    child.load([("zPromptRequest", first("PromptRequest")), ("zError", first("Error"))])
    done = child.round(3)
    assert done["refused"] == 0 and done["cpu"] > 0 and done["wall"] > 0, done
    child.load([("zPromptRequest", first("PromptRequest")), ("zError", '{"code": "x", "message": "m"}')])
    assert child.round(3)["refused"] == 3  # the bad error, once a pass
    child.load([("zNoSuchType", "{}")])
    with pytest.raises(RuntimeError, match="the zod child failed on round"):
        child.round(1)
    assert child.round(0)["refused"] == 0  # the child answers on after a failed request
