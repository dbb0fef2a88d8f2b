"""The messages the corpus tests run through the SDKs' generated validators, and the envelopes they try each with.

Two sources: every record of the shared upstream corpus (`../shared/upstream-examples/*.jsonl`, read at test time,
never copied in; `ACP_UPSTREAM_EXAMPLES` names another folder), v1 and v2 alike, and every message of every step of
the spec's worked examples (`spec/examples/*.yaml`). Each message is tried with every envelope type the schema
declares (`ClientRequest`, `AgentResponse`, ...): an SDK that does not know which envelope a message travels in
tries them, and a message that fits none of one kind's envelopes must fit none on both schemas alike.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from generator.model import envelopes
from tests.support import ROOT

CORPUS = Path(os.environ.get("ACP_UPSTREAM_EXAMPLES") or ROOT.parent / "shared" / "upstream-examples")
EXAMPLES = ROOT / "spec" / "examples"


class Message(NamedTuple):
    """One message: where it comes from, the message, and for an answer the method of the request it answers."""

    ident: str
    message: Any
    answers: str | None = None


def upstream_messages() -> list[Message]:
    """Each record of the upstream corpus (an answer with the method its record names); empty when the corpus is not
    there."""
    if not CORPUS.is_dir():
        return []
    out = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                answers = record.get("method") if record.get("kind") in ("response", "error") else None
                out.append(Message(str(record["id"]), record["message"], answers))
    return out


def example_messages() -> list[Message]:
    """Each step of the spec's worked examples (an answer with the method of the request before it with its id)."""
    out = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        asked: dict[str, str] = {}
        for index, step in enumerate(yaml.safe_load(path.read_text(encoding="utf-8"))["steps"]):
            message = step["message"]
            ident = json.dumps(message.get("id")) if isinstance(message, dict) else None
            answers = None
            if isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message:
                asked[str(ident)] = message["method"]
            elif isinstance(message, dict) and "method" not in message:
                answers = asked.get(str(ident))
            out.append(Message(f"spec/examples/{path.name}#{index}", message, answers))
    return out


def envelope_names(schema: dict[str, Any]) -> list[str]:
    """The envelope types our schema declares (the published one has the same names), sorted."""
    return sorted(name for name, d in schema["$defs"].items() if isinstance(d, dict) and envelopes.ENVELOPE in d)
