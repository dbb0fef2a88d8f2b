"""The faults the proxy makes, what each one means, and the plan that arms them one prompt at a time.

A fault is armed for the next `session/prompt` request the proxy forwards (on one profile, or on either), never by
timing: the proxy finds the prompt in the request body or the WebSocket frame, and its answer in the session's
event stream or the socket, by their JSON-RPC id. Most faults let the Agent answer the prompt and keep that answer
from the Client, so the Agent has inserted the message (or failed it, which the record shows) before the Client
hears anything: the ambiguous failure the idempotency key exists for. `hold-post-unforwarded` never lets the Agent
see the prompt; the two node kills (only on a proxy given a `Killer`) crash the node while it holds or inserts the
key, or just after it answered.

`FaultPlan` is shared by the proxy's event loop and the caller's thread: arming and reading records take a lock,
and each `Armed` record has a thread-safe `wait`.
"""

from __future__ import annotations

import enum
import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

HTTP = "http"
WEBSOCKET = "websocket"
PROFILES = (HTTP, WEBSOCKET)


class Fault(enum.Enum):
    """One ambiguous failure between a Client and an Agent; the value is the name the control knob takes."""

    POST_502 = "post-502"
    CUT_STREAM_ABRUPT = "cut-stream-abrupt"
    CUT_STREAM_CLEAN = "cut-stream-clean"
    SWALLOW_ANSWER = "swallow-answer"
    WS_CLOSE_AFTER_PROMPT = "ws-close-after-prompt"
    HOLD_POST_FORWARDED = "hold-post-forwarded"
    HOLD_POST_UNFORWARDED = "hold-post-unforwarded"
    KILL_AFTER_FORWARD = "node-kill-after-forward"
    KILL_AFTER_ANSWER = "node-kill-after-answer"


MEANING: dict[Fault, str] = {
    Fault.POST_502: (
        "the prompt POST is forwarded and accepted (202); the proxy drops the Agent's answer from the session "
        "stream, then answers the Client's POST 502, as a gateway that lost the upstream's reply"
    ),
    Fault.CUT_STREAM_ABRUPT: (
        "the prompt POST is forwarded and answered 202; when the Agent's answer comes on the session stream, the "
        "proxy drops it and breaks the Client's connection mid-stream (the chunked body never ends)"
    ),
    Fault.CUT_STREAM_CLEAN: (
        "as cut-stream-abrupt, but the session stream ends normally (the last chunk is sent) instead of breaking"
    ),
    Fault.SWALLOW_ANSWER: (
        "the prompt is forwarded and the Agent's answer dropped; the stream or socket stays open and carries "
        "everything else, so the Client hears nothing until its own timeout"
    ),
    Fault.WS_CLOSE_AFTER_PROMPT: (
        "the prompt frame is forwarded, then the Client's socket is closed (code 1001) at once; the proxy keeps "
        "the Agent's socket open until the answer comes, drops it, then closes that socket too"
    ),
    Fault.HOLD_POST_FORWARDED: (
        "the prompt POST is forwarded and accepted, its answer dropped from the session stream, and the Client's "
        "POST left unanswered until the Client gives up (closes the request) or the hold limit passes (then 504)"
    ),
    Fault.HOLD_POST_UNFORWARDED: (
        "the prompt POST is never forwarded: it is held until the Client gives up or the hold limit passes (then "
        "504), and dropped; the Agent never sees that attempt"
    ),
    Fault.KILL_AFTER_FORWARD: (
        "the prompt is forwarded and accepted, and at once the node serving the connection is killed (SIGKILL), "
        "while it holds or inserts the key; an answer that still comes is dropped, and the Client's stream or "
        "socket breaks. Needs a killer (the kit's cluster)"
    ),
    Fault.KILL_AFTER_ANSWER: (
        "the prompt is forwarded; when its answer comes, it is passed on and the node that gave it is killed "
        "(SIGKILL) at once, so the Client is told what a node said just before it died: a messageId it answered "
        "must be a message the store keeps. (The Client's other streams break with the node, and may reach it "
        "first: then it hears no answer.) Needs a killer (the kit's cluster)"
    ),
}

APPLIES_TO: dict[Fault, tuple[str, ...]] = {
    Fault.POST_502: (HTTP,),
    Fault.CUT_STREAM_ABRUPT: (HTTP,),
    Fault.CUT_STREAM_CLEAN: (HTTP,),
    Fault.SWALLOW_ANSWER: (HTTP, WEBSOCKET),
    Fault.WS_CLOSE_AFTER_PROMPT: (WEBSOCKET,),
    Fault.HOLD_POST_FORWARDED: (HTTP,),
    Fault.HOLD_POST_UNFORWARDED: (HTTP,),
    Fault.KILL_AFTER_FORWARD: (HTTP, WEBSOCKET),
    Fault.KILL_AFTER_ANSWER: (HTTP, WEBSOCKET),
}
"""The profiles on which each fault can be made (a POST or an event stream exists only on HTTP)."""

ANSWER_KEPT_FROM_CLIENT = frozenset(APPLIES_TO) - {Fault.HOLD_POST_UNFORWARDED, Fault.KILL_AFTER_ANSWER}
"""The faults whose prompt reaches the Agent, and whose answer the proxy drops."""

KILLS = frozenset({Fault.KILL_AFTER_FORWARD, Fault.KILL_AFTER_ANSWER})
"""The faults that kill the node behind the proxy: armed only on a proxy given a killer (one that knows the nodes)."""

FAILS_THE_ATTEMPT = frozenset(APPLIES_TO) - {Fault.KILL_AFTER_ANSWER}
"""The faults after which the Client hears no answer from the Agent: the outcome is unknown to it (an attempt met by
node-kill-after-answer is told the Agent's own answer, and judged as any answered attempt)."""

Killer = Callable[[str], "str | None"]
"""Kills the node a request reached, named by the request's cookies (the balancer's affinity cookie): the node's
name, or None when no live node is named. Called in a worker thread of the proxy."""


def id_key(request_id: Any) -> str:
    """A JSON-RPC id as a dictionary key that keeps 1 and "1" apart."""
    return json.dumps(request_id)


@dataclass
class Armed:
    """One armed fault and, once made, what the proxy did: the caller reads it after `wait`."""

    fault: Fault
    profile: str | None
    number: int
    connection_id: str | None = None
    session_id: str | None = None
    request_id: Any = None
    forwarded: bool | None = None
    upstream_status: int | None = None
    answer: dict[str, Any] | None = None
    told: str | None = None
    killed: str | None = None  # the node killed (KILLS), by name
    killed_at: float | None = None  # when, on time.monotonic's clock
    _done: threading.Event = field(default_factory=threading.Event, repr=False)

    def finish(self, told: str) -> None:
        """Records what the Client was told, and wakes whoever waits for this fault."""
        self.told = told
        self._done.set()

    def wait(self, timeout: float) -> bool:
        """Waits until the fault was made; False when `timeout` passed first."""
        return self._done.wait(timeout)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def message_id(self) -> str | None:
        """The messageId of the answer the Agent gave and the Client never got, if there was one."""
        result = (self.answer or {}).get("result")
        return result.get("messageId") if isinstance(result, dict) else None

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON, as the control knob's log shows it."""
        return {
            "number": self.number,
            "fault": self.fault.value,
            "profile": self.profile,
            "done": self.done,
            "connectionId": self.connection_id,
            "sessionId": self.session_id,
            "requestId": self.request_id,
            "forwarded": self.forwarded,
            "upstreamStatus": self.upstream_status,
            "answer": self.answer,
            "messageId": self.message_id,
            "told": self.told,
            "killed": self.killed,
        }


class FaultPlan:
    """Faults armed for the next prompts, in order, and every fault made so far."""

    def __init__(self, *, can_kill: bool = False) -> None:
        self.can_kill = can_kill  # a killer was given: the KILLS faults can be armed
        self._lock = threading.Lock()
        self._armed: list[Armed] = []
        self._made: list[Armed] = []
        self._numbers = itertools.count(1)

    def arm(self, fault: Fault | str, profile: str | None = None) -> Armed:
        """Arms `fault` for the next prompt on `profile` (either profile when None) and returns its record."""
        fault = Fault(fault)
        if profile is not None and profile not in APPLIES_TO[fault]:
            raise ValueError(f"{fault.value} cannot be made on {profile} (only on {', '.join(APPLIES_TO[fault])})")
        if fault in KILLS and not self.can_kill:
            raise ValueError(f"{fault.value} needs a proxy that can kill nodes (the kit's cluster); this one cannot")
        with self._lock:
            armed = Armed(fault, profile, next(self._numbers))
            self._armed.append(armed)
            return armed

    def take(self, profile: str) -> Armed | None:
        """The first armed fault that can be made on `profile`, now bound to the prompt being forwarded."""
        with self._lock:
            for armed in self._armed:
                if armed.profile in (None, profile) and profile in APPLIES_TO[armed.fault]:
                    self._armed.remove(armed)
                    armed.profile = profile
                    self._made.append(armed)
                    return armed
            return None

    def records(self) -> list[Armed]:
        """Every fault made so far, in order, then those still armed."""
        with self._lock:
            return [*self._made, *self._armed]

    def reset(self) -> None:
        """Forgets every armed fault and every record."""
        with self._lock:
            self._armed.clear()
            self._made.clear()
